"""Claim rows of Kong et al. (2023), "Understanding MAE via Hierarchical Latent Variable Models".

Theory rows (``kong_theory``) are decided on exact computations; trained-model rows (``kong_reconstruction``,
``kong_representations``) must carry the precondition that the encoders learned (``Evidence(unmet=...)`` when the
class probe does not beat the same architecture at random initialisation by the notebook's ``learned_margin``).
"Level" is 0 for the top of a hierarchy and grows towards the pixels.
"""
from __future__ import annotations

from ...claims import Above, Below, Claim, Monotone, PairedGreater

P = "kong2023"
TH, REC, REP = "kong_theory", "kong_reconstruction", "kong_representations"

CLAIMS: list[Claim] = [
    # ---------------------------------------------------------------- Theorem 1 / Algorithm 1 (kong_theory)
    Claim(id="kong.fig4_low", paper=P, where="Sec. 2.3, Fig. 4a",
          statement="A mask too small to cover a high-level variable's pixels makes c a low-level latent.",
          paper_value="c = low-level z3, not z1", criterion=Above(0.5), notebook=TH,
          measure="level of the most abstract node of c, one pixel masked in a 3-level binary tree (exact)"),
    Claim(id="kong.fig4_moderate", paper=P, where="Sec. 2.3, Fig. 4 (right)",
          statement="A moderate mask covering a whole subtree makes c the top-level variable.",
          paper_value="c = high-level variable", criterion=Below(0.5), notebook=TH,
          measure="level of the most abstract node of c, half the pixels (one subtree) masked (exact)"),
    Claim(id="kong.fig4_extreme", paper=P, where="Sec. 2.3, Fig. 4b",
          statement="An extreme mask (too few visible pixels) makes c a low-level latent again.",
          paper_value="c = low-level z6, not z2", criterion=Above(0.5), notebook=TH,
          measure="level of the most abstract node of c, one pixel visible in a 3-level binary tree (exact)"),
    Claim(id="kong.thm1_unit_level", paper=P, where="Sec. 2.3",
          statement="Overly small masking patch sizes inevitably lead to low-level latent variables: c rises in the "
                    "hierarchy as the masking unit grows.",
          paper_value="higher level with larger unit", criterion=Monotone("decreasing"), notebook=TH,
          measure="mean level of c over random MAE masks (ratio 0.75) on a quadtree hierarchy vs unit 1, 2, 4"),
    Claim(id="kong.thm1_ratio_extremes", paper=P, where="Abstract; Sec. 2.3 takeaway",
          statement="Extremely large or small masking ratios lead to lower-level c than a moderate ratio, by at "
                    "least a quarter of a level (random MAE masks).",
          paper_value="U-shape: 0.1 and 0.9 low-level, 0.75 high-level", criterion=Above(0.25), notebook=TH,
          measure="per seed, min over r in {0.1, 0.9} of [mean level of c at r − at 0.75], averaged over units"),
    # ---------------------------------------------------------------- Theorem 2 (kong_theory, linear-Gaussian)
    Claim(id="kong.thm2_cc_c", paper=P, where="Theorem 2",
          statement="The optimal MAE encoder (width dim c) is a one-to-one function of c: every canonical "
                    "correlation with c is 1.",
          paper_value="h(c) = ĉ one-to-one", criterion=Below(1e-8), notebook=TH,
          measure="max over masks and model seeds of 1 − min canonical correlation(ĉ, c), exact covariances"),
    Claim(id="kong.thm2_cc_s", paper=P, where="Theorem 2 with Theorem 1's conditions",
          statement="The optimal encoder carries nothing of the non-shared noises (s_m and s_mc).",
          paper_value="ĉ depends on c only", criterion=Below(1e-8), notebook=TH,
          measure="max over masks and model seeds of the canonical correlations of ĉ with the noises of s_mc "
                  "(those with s_m are 0 by construction: ĉ reads only x_mc)"),
    Claim(id="kong.thm2_sampled", paper=P, where="Theorem 2 (population) from finite data",
          statement="An encoder fitted from samples approaches c: min canonical correlation with c ≥ 0.99 at the "
                    "largest sample size.",
          paper_value="identifiability (population)", criterion=Above(0.99), notebook=TH,
          measure="per seed, min canonical correlation(ĉ, c) over masks at the largest n, evaluated exactly"),
    # ---------------------------------------------------------------- Fig. 5 (kong_reconstruction)
    Claim(id="kong.fig5_ssim_ratio", paper=P, where="Sec. 3.1, Fig. 5 top",
          statement="From mask ratio 0.1 to 0.75, reconstructions of unmasked held-out images get higher SSIM.",
          paper_value="SSIM increasing 0.1 → 0.75", criterion=Monotone("increasing"), notebook=REC,
          measure="mean SSIM over seeds at ratios 0.1, 0.25, 0.5, 0.75 (error: s.e. over seeds), shapes"),
    Claim(id="kong.fig5_fsim_ratio", paper=P, where="Sec. 3.1, Fig. 5 top",
          statement="From mask ratio 0.1 to 0.75, reconstructions of unmasked held-out images get higher FSIM.",
          paper_value="FSIM increasing 0.1 → 0.75", criterion=Monotone("increasing"), notebook=REC,
          measure="mean FSIM over seeds at ratios 0.1, 0.25, 0.5, 0.75 (error: s.e. over seeds), shapes"),
    Claim(id="kong.fig5_psnr_090", paper=P, where="Sec. 3.1, Fig. 5 top",
          statement="The model trained at ratio 0.9 has higher PSNR than at 0.75 (more low-level information).",
          paper_value="PSNR(0.9) > PSNR(0.75)", criterion=PairedGreater(), notebook=REC,
          measure="per seed PSNR(0.9) − PSNR(0.75) in dB on unmasked held-out shapes images"),
    Claim(id="kong.fig5_negmse_090", paper=P, where="Sec. 3.1, Fig. 5 top",
          statement="The model trained at ratio 0.9 has higher −MSE (lower MSE) than at 0.75.",
          paper_value="−MSE(0.9) > −MSE(0.75)", criterion=PairedGreater(), notebook=REC,
          measure="per seed MSE(0.75) − MSE(0.9) on unmasked held-out shapes images"),
    Claim(id="kong.fig5_ssim_unit", paper=P, where="Sec. 3.1, Fig. 5 bottom",
          statement="Larger masking units produce reconstructions with higher SSIM.",
          paper_value="SSIM increasing with patch size 8 → 16 → 32", criterion=Monotone("increasing"),
          notebook=REC, measure="mean SSIM over seeds at masking units 1, 2, 4 tokens (ratio 0.75), shapes"),
    Claim(id="kong.fig5_psnr_unit", paper=P, where="Sec. 3.1, Fig. 5 bottom",
          statement="Smaller masking units give better low-level metrics: PSNR falls as the unit grows.",
          paper_value="PSNR decreasing with patch size", criterion=Monotone("decreasing"), notebook=REC,
          measure="mean PSNR over seeds at masking units 1, 2, 4 tokens (ratio 0.75), shapes"),
    # ---------------------------------------------------------------- Tables 1-3, Figs 6-8 (kong_representations)
    Claim(id="kong.tab1_probe_075_010", paper=P, where="Sec. 3.3, Table 1 (IN1K)",
          statement="Linear-probe accuracy is higher at mask ratio 0.75 than at 0.1.",
          paper_value="67.41 vs 47.45 %", criterion=PairedGreater(), notebook=REP,
          measure="per seed class-probe accuracy(0.75) − accuracy(0.1), shapes test set"),
    Claim(id="kong.tab1_probe_075_090", paper=P, where="Sec. 3.3, Table 1 (IN1K)",
          statement="An extremely large ratio hurts: linear-probe accuracy is higher at 0.75 than at 0.9.",
          paper_value="67.41 vs 62.97 %", criterion=PairedGreater(), notebook=REP,
          measure="per seed class-probe accuracy(0.75) − accuracy(0.9), shapes test set"),
    Claim(id="kong.tab1_shift_075_010", paper=P, where="Sec. 3.3, Table 1 (IN-v2, OJN, IN-R, IN-A, IN-S)",
          statement="Under distribution shift the probe trained at 0.75 beats the one at 0.1.",
          paper_value="0.75 above 0.1 on all five variants", criterion=PairedGreater(), notebook=REP,
          measure="per seed mean over the four shapes shifts of accuracy(0.75) − accuracy(0.1)"),
    Claim(id="kong.tab2_shape_bias_010", paper=P, where="Sec. 3.4, Table 2",
          statement="Shape bias is higher at mask ratio 0.75 than at 0.1.",
          paper_value="0.2563 vs 0.1352", criterion=PairedGreater(), notebook=REP,
          measure="per seed shape bias(0.75) − shape bias(0.1) on shapes cue-conflict images"),
    Claim(id="kong.tab2_shape_bias_090", paper=P, where="Sec. 3.4, Table 2",
          statement="Shape bias is higher at mask ratio 0.75 than at 0.9.",
          paper_value="0.2563 vs 0.2014", criterion=PairedGreater(), notebook=REP,
          measure="per seed shape bias(0.75) − shape bias(0.9) on shapes cue-conflict images"),
    Claim(id="kong.latent_class_mid", paper=P, where="Sec. 2.3 takeaway; Sec. 3",
          statement="The high-level latent (class) is better decodable at intermediate ratios than at extreme ones.",
          paper_value="high-level peaks at non-extreme masking", criterion=PairedGreater(), notebook=REP,
          measure="per seed mean k-NN class accuracy at {0.5, 0.75} − at {0.1, 0.9}"),
    Claim(id="kong.latent_low_ext", paper=P, where="Sec. 2.3 takeaway; Sec. 3",
          statement="Low-level latents (texture, background, noise) are better decodable at extreme ratios.",
          paper_value="extremes capture more low-level information", criterion=PairedGreater(), notebook=REP,
          measure="per seed mean linear R² of the low-level factors at {0.1, 0.9} − at {0.5, 0.75}"),
    Claim(id="kong.fig6_cls_silhouette", paper=P, where="Sec. 3.2, Fig. 6",
          statement="[CLS] attention concentrates on the object more at ratio 0.75 than at the extremes.",
          paper_value="holistic object at moderate ratios", criterion=PairedGreater(), notebook=REP,
          measure="per seed [CLS] attention mass on the silhouette at 0.75 − mean at {0.1, 0.9}"),
    Claim(id="kong.tab3_token_silhouette", paper=P, where="Sec. 3.5, Table 3 (analogue)",
          statement="Analogue of COCO detection: object-vs-background per-token probe is better at 0.75 than 0.1.",
          paper_value="AP box 39.72 vs 30.47", criterion=PairedGreater(), notebook=REP,
          measure="per seed per-token silhouette probe accuracy(0.75) − accuracy(0.1)"),
]
