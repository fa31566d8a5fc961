"""Claim rows of Bisulco et al. (ICCV 2025), From Linearity to Non-Linearity (supplement).

Data for the scoreboard: each row says what the paper claims, where, the paper's value, the criterion that
computes our verdict (:mod:`maelab.claims`) and the notebook that measures it. Rows are grouped by notebook, in
the scoreboard's order; ``masking`` is a Foundations page, but the claims it checks are Bisulco's §F.
"""

from __future__ import annotations

from maelab.claims import Above, Below, Claim, Monotone, PairedGreater, Within

CLAIMS: list[Claim] = [
    # ---- masking (Foundations page; Supp. §F) ----
    # identity: the DFT time-shift property makes the closed form equal the FFT of every mask
    Claim(
        id="bisulco.eq19_21_sinc",
        paper="bisulco2025",
        where="Supp. §F, Eq. 18–21",
        statement="The DFT of a 1-D mask made of rectangular pulses of width p equals the sinc-like envelope "
        "sin(πpk/D)/sin(πk/D) times a sum of phase terms (Eq. 19–20, with the exponent e^{-j2πka_i/D}).",
        paper_value="identity (exact)",
        criterion=Below(1e-9),
        notebook="masking",
        kind="identity",
        measure="max |DFT − closed form| / D over random masks",
    ),
    Claim(
        id="bisulco.eq19_as_printed",
        paper="bisulco2025",
        where="Supp. §F, Eq. 19",
        statement="Eq. 19 as printed (phase e^{-j2πka_i}, without /D) gives the mask's DFT.",
        paper_value="identity (as printed)",
        criterion=Below(1e-9),
        notebook="masking",
        kind="computation",
        measure="max |DFT − printed Eq. 19| / D over random masks",
    ),
    # identity: the DFT of any mask of p x p blocks on the grid has the factor sin(pi p k / D) (zero at k = jD/p)
    Claim(
        id="bisulco.fig22_grating_zeros",
        paper="bisulco2025",
        where="Supp. §F, Fig. 22",
        statement="Masking with square p×p patches on the patch grid zeros out frequencies in a grating pattern: the "
        "mask's power vanishes wherever k_x or k_y is a non-zero multiple of D/p.",
        paper_value="zeros (exact)",
        criterion=Below(1e-20),
        notebook="masking",
        kind="identity",
        measure="max power of the 2-D mask at grating frequencies / total power",
    ),
    Claim(
        id="bisulco.fig22_smoothing",
        paper="bisulco2025",
        where="Supp. §F, Fig. 22 and text",
        statement="Masking acts as spectral smoothing analogous to sinc filtering: larger patches add less "
        "high-frequency power to the masked image.",
        paper_value="qualitative (Fig. 22)",
        criterion=Monotone("decreasing"),
        notebook="masking",
        kind="computation",
        measure="high-frequency power fraction of masked photos (|k| > D/4) for p = 4, 8, 16, mean ± s.e. over crops",
    ),
    # ---- bisulco_linear_mae ----
    # identity: Lemma 1 is an expectation identity for any X, A, B (Bernoulli masks); only MC noise or a bug can miss
    Claim(
        id="bisulco.lemma1_monte_carlo",
        paper="bisulco2025",
        where="Supp. §C, Lemma 1",
        statement="The expected linear-MAE loss over Bernoulli patch masks is ||X − (1−m)XAB||² + m(1−m)||GAB||² with "
        "GᵀG = Blkdiag_p(XᵀX).",
        paper_value="identity (exact)",
        criterion=Below(4.0, z=0.0),
        notebook="bisulco_linear_mae",
        kind="identity",
        measure="max over (m, p) of |Monte-Carlo mean − Lemma 1| / Monte-Carlo s.e. (real crops, A B = a closed-form "
        "optimum)",
    ),
    Claim(
        id="bisulco.thm1_sgd_loss_gap",
        paper="bisulco2025",
        where="Supp. §A, Theorem 1 (eq. 12–14)",
        statement="A linear MAE trained by SGD with sampled masks reaches the closed-form minimum Tr(XᵀX) − "
        "(1−m)Σ_{i≤k} λ_i(C), C = XᵀX V⁻¹ XᵀX.",
        paper_value="minimum of eq. 12",
        criterion=Below(1e-3),
        notebook="bisulco_linear_mae",
        kind="computation",
        measure="relative gap (loss − closed form) / closed form after sampled-mask Adam only; per seed the max over "
        "(m, p) configurations; mean + 2 s.e. over seeds",
    ),
    Claim(
        id="bisulco.thm1_subspace",
        paper="bisulco2025",
        where="Supp. §A, Theorem 1 and Lemma 2",
        statement="The trained decoder's row space is spanned by the top-k eigenvectors of C.",
        paper_value="top-k eigenvectors of C",
        criterion=Below(1.0),
        notebook="bisulco_linear_mae",
        kind="computation",
        measure="largest principal angle (degrees) between the decoder row space and the top-k eigenvectors of C, "
        "after sampled-mask Adam + exact-expected-loss polish; per seed the max over (m, p); mean + 2 s.e.",
    ),
    Claim(
        id="bisulco.thm1_m0_pca",
        paper="bisulco2025",
        where="Supp. §A, Theorem 1 at m = 0",
        statement="Without masking (m = 0) the linear MAE is PCA: V = XᵀX, C = XᵀX.",
        paper_value="PCA",
        criterion=Below(1.0),
        notebook="bisulco_linear_mae",
        kind="computation",
        measure="largest principal angle (degrees) between the trained m = 0 decoder and the top-k right singular "
        "vectors of X (numpy SVD); mean + 2 s.e. over seeds",
    ),
    # identity: Lemma 6 is a bias-variance identity for any linear f and any X; only MC noise or a bug can miss
    Claim(
        id="bisulco.lemma6_mean_variance",
        paper="bisulco2025",
        where="Supp. §B and Lemma 6",
        statement="For a linear f the MAE loss is ||x − f(μ)||² − ||f(μ)||² + ∫||f(r⊙x)||²dr with μ the mean masked "
        "image: fit the mean masked image, minimise the variance of predictions over masks.",
        paper_value="identity (exact)",
        criterion=Below(4.0, z=0.0),
        notebook="bisulco_linear_mae",
        kind="identity",
        measure="max over m of |Monte-Carlo loss − Lemma 6 expression| / Monte-Carlo s.e.",
    ),
    Claim(
        id="bisulco.lemma4_small_m",
        paper="bisulco2025",
        where="Supp. §B (text after Lemma 4's statement)",
        statement='The Taylor approximation around 0 (Lemma 4) "is only valid for small masking ratio": its error '
        "grows with m.",
        paper_value="qualitative",
        criterion=Monotone("increasing"),
        notebook="bisulco_linear_mae",
        kind="computation",
        measure="relative error |Lemma 4 − Monte-Carlo loss| / loss of a tanh autoencoder f(x) = s·tanh(xA/s)B, "
        "against m; ± s.e. of the Monte-Carlo loss",
    ),
    # ---- bisulco_ising ----
    Claim(
        id="bisulco.fig21_scale_grows_with_m",
        paper="bisulco2025",
        where="Supp. §E, Fig. 21; main text Fig. 1",
        statement="Raising the masking ratio biases the linear MAE towards long-range correlations: the spatial scale "
        "of its reconstruction weights AB grows with m.",
        paper_value="qualitative (Fig. 21)",
        criterion=Monotone("increasing"),
        notebook="bisulco_ising",
        kind="computation",
        measure="decay length of mean |(AB)_ij| against torus distance, closed form on Ising samples at T_c, rank "
        "d/4, m = 0.01 … 0.99 at fixed p; mean ± s.e. over independent sample draws",
    ),
    Claim(
        id="bisulco.fig20_scale_grows_with_p",
        paper="bisulco2025",
        where="Supp. §E, Fig. 20; main text Fig. 1",
        statement="Increasing the patch size at fixed masking ratio biases the encoder towards long-range "
        "correlations: the spatial scale of AB grows with p.",
        paper_value="qualitative (Fig. 20)",
        criterion=Monotone("increasing"),
        notebook="bisulco_ising",
        kind="computation",
        measure="decay length of mean |(AB)_ij| against torus distance at m = 0.5, p = 2 … 16, rank d/4; mean ± s.e. "
        "over sample draws",
    ),
    Claim(
        id="bisulco.fig21_high_vs_low_m",
        paper="bisulco2025",
        where="Supp. §E, Fig. 21",
        statement="p = 16, m = 0.99 captures longer-range correlations than p = 8, m = 0.01.",
        paper_value="qualitative (Fig. 21)",
        criterion=PairedGreater(),
        notebook="bisulco_ising",
        kind="computation",
        measure="paired difference of decay lengths, (p 16, m 0.99) − (p 8, m 0.01), per sample draw, rank d/4",
    ),
    Claim(
        id="bisulco.fig1_ae_dae_shortest",
        paper="bisulco2025",
        where="Main text Fig. 1 (as summarised in the supplement)",
        statement="Plain and denoising autoencoders learn shorter-range features than MAEs.",
        paper_value="qualitative",
        criterion=PairedGreater(),
        notebook="bisulco_ising",
        kind="computation",
        measure="per sample draw: smallest decay length among the MAEs of Figs. 20–21 (m, p) ∈ {(0.5, 8), (0.5, 16), "
        "(0.99, 16)} minus the larger of AE (= PCA) and Gaussian DAE, rank d/4",
    ),
    # ---- bisulco_jacobians ----
    Claim(
        id="bisulco.jac_linear_spread_vs_m",
        paper="bisulco2025",
        where="Main text Fig. 1; Supp. Fig. 13C (linear MAE)",
        statement="For the optimal linear MAE (Theorem 1) on natural-photo crops, the weights an output pixel puts on "
        "the input spread further as the mask ratio m grows (patch size as in Fig. 13, p = 8).",
        paper_value="qualitative (Fig. 1, 13C)",
        criterion=Monotone("increasing"),
        notebook="bisulco_jacobians",
        kind="computation",
        measure="half-mass radius (px) of the columns of W = A*B*, mean over central output pixels; mean ± s.e. over "
        "data seeds; m = 0.1 … 0.9",
    ),
    Claim(
        id="bisulco.jac_linear_spread_vs_p",
        paper="bisulco2025",
        where="Main text Fig. 1; Supp. Figs. 13C, 20",
        statement="For the optimal linear MAE on natural-photo crops, the weights spread further as the patch size p "
        "grows (mask ratio as in Fig. 13, m = 0.8).",
        paper_value="qualitative (Fig. 1, 13C, 20)",
        criterion=Monotone("increasing"),
        notebook="bisulco_jacobians",
        kind="computation",
        measure="half-mass radius (px) of the columns of W = A*B*, mean over central output pixels; mean ± s.e. over "
        "data seeds; p = 2, 4, 8",
    ),
    Claim(
        id="bisulco.jac_linear_ae_most_local",
        paper="bisulco2025",
        where="Main text Fig. 1; Supp. Fig. 13C",
        statement="The plain linear autoencoder (m = 0, same bottleneck k) has more local weights than the linear MAE "
        "at every mask ratio and patch size tried.",
        paper_value="qualitative (Fig. 1, 13C)",
        criterion=Above(0.0),
        notebook="bisulco_jacobians",
        kind="computation",
        measure="min over MAE (m, p) of [MAE half-mass radius − AE half-mass radius] (px), per data seed",
    ),
    Claim(
        id="bisulco.jac_mae_spread_vs_m",
        paper="bisulco2025",
        where="Main text Fig. 1; Supp. Figs. 5, 13A",
        statement="For a nonlinear ViT MAE, the Jacobian of a masked output pixel with respect to the visible input "
        "spreads further as the training mask ratio m grows.",
        paper_value="qualitative (Fig. 1, 5, 13A)",
        criterion=Monotone("increasing"),
        notebook="bisulco_jacobians",
        kind="trained",
        measure="half-mass radius (px) of |∂ pred(r, c) / ∂ x| with the mask fixed, on the shared zoo's MAEs at "
        "masking unit 1 (maelab.zoo: MNIST, m = 0.1 … 0.9), each at its training m; per seed the mean over test images "
        "(one mask each, several masked output pixels); mean ± s.e. over the zoo's seeds; counts only where every "
        "compared model passes the zoo's reconstruction check (maelab.zoo.reconstruction_checks)",
    ),
    Claim(
        id="bisulco.jac_mae_spread_vs_p",
        paper="bisulco2025",
        where="Main text Fig. 1; Supp. Figs. 5, 13",
        statement="For a nonlinear ViT MAE (m = 0.8), the masked-pixel Jacobian spreads further as the patch size "
        "grows.",
        paper_value="qualitative (Fig. 1, 5, 13)",
        criterion=Monotone("increasing"),
        notebook="bisulco_jacobians",
        kind="trained",
        measure="half-mass radius (px) of the masked-pixel Jacobian; per training seed the mean over test images; "
        "mean ± s.e. over seeds (over test images where one seed); p = 4, 8, 16",
    ),
    Claim(
        id="bisulco.jac_mae_ae_most_local",
        paper="bisulco2025",
        where="Main text Fig. 1",
        statement="A nonlinear ViT autoencoder trained without masking (m = 0) has a more local Jacobian than the MAE "
        "at every mask ratio tried.",
        paper_value="qualitative (Fig. 1)",
        criterion=Above(0.0),
        notebook="bisulco_jacobians",
        kind="trained",
        measure="[half-mass radius of the most local MAE − that of the AE] (px) per training seed, each the mean over "
        "the same test images (per test image where one seed); mean ± s.e.",
    ),
    # ---- bisulco_sweeps ----
    Claim(
        id="bisulco.fig15_encoder_depth",
        paper="bisulco2025",
        where="Supp. §D, Fig. 15 (left) and text",
        statement="Linear-probe accuracy of the MAE encoder improves as the encoder gets deeper.",
        paper_value="increasing up to 12 (20) layers, CIFAR-10",
        criterion=Monotone("increasing"),
        notebook="bisulco_sweeps",
        kind="trained",
        measure="linear-probe test accuracy against encoder depth at a fixed decoder depth, mean ± s.e. over seeds",
        unit="points",
    ),
    Claim(
        id="bisulco.fig15_best_decoder",
        paper="bisulco2025",
        where="Supp. §D, Fig. 15 and text",
        statement="The optimal decoder has 2–4 layers.",
        paper_value="2–4 layers",
        criterion=Within(3.0, 1.0),
        notebook="bisulco_sweeps",
        kind="trained",
        measure="decoder depth with the highest linear-probe accuracy averaged over encoder depths (one seed)",
    ),
    Claim(
        id="bisulco.fig14_loss_not_proxy",
        paper="bisulco2025",
        where="Supp. §D, Fig. 14 and text",
        statement="The reconstruction (training) loss is not a good proxy for downstream performance: lower loss does "
        "not mean higher linear-probe accuracy. Criterion: a proxy would show Spearman ρ(loss, accuracy) ≤ "
        "−0.5.",
        paper_value="qualitative",
        criterion=Above(-0.5),
        notebook="bisulco_sweeps",
        kind="trained",
        measure="Spearman ρ between test reconstruction loss and linear-probe accuracy over the encoder × decoder grid",
    ),
    # identity: FLOPs counted, not measured: an equal-width decoder sees all L + 1 tokens, the encoder (1-m)L + 1
    Claim(
        id="bisulco.fig14_decoder_time",
        paper="bisulco2025",
        where="Supp. §D, Fig. 14 and text",
        statement="Training time grows faster with the size of the decoder than with the size of the encoder.",
        paper_value="qualitative",
        criterion=Above(1.0),
        notebook="bisulco_sweeps",
        kind="identity",
        measure="per-layer training-step FLOPs of the decoder / of the encoder (least-squares slopes over the depth "
        "grid; FLOPs, not wall time, because this machine is shared -- the step-time ratio is in the note)",
    ),
    # identity: FLOPs are counted from the architecture: a smaller patch means more tokens, so more FLOPs
    Claim(
        id="bisulco.fig16_patch_time",
        paper="bisulco2025",
        where="Supp. §D, Fig. 16",
        statement="Smaller patch sizes are a lot slower to train.",
        paper_value="qualitative",
        criterion=PairedGreater(),
        notebook="bisulco_sweeps",
        kind="identity",
        measure="log(training-step FLOPs at the smallest patch / at the largest patch), paired over mask ratios "
        "(step-time ratios in the note)",
    ),
    Claim(
        id="bisulco.fig17_patch_acc",
        paper="bisulco2025",
        where="Supp. §D, Figs. 16–17",
        statement="Smaller patch sizes usually perform better than larger ones.",
        paper_value="qualitative (patch 2 and 4 best)",
        criterion=PairedGreater(),
        notebook="bisulco_sweeps",
        kind="trained",
        measure="linear-probe accuracy at the smallest minus at the largest patch size, paired over mask ratios",
        unit="points",
    ),
    # identity: FLOPs are counted from the architecture: a larger mask ratio leaves the encoder fewer tokens
    Claim(
        id="bisulco.fig16_mask_time",
        paper="bisulco2025",
        where="Supp. §D, Fig. 16",
        statement="Larger masking ratios lead to smaller training times.",
        paper_value="qualitative",
        criterion=Monotone("decreasing"),
        notebook="bisulco_sweeps",
        kind="identity",
        measure="training-step FLOPs against mask ratio at the base patch size (step times in the note)",
    ),
    Claim(
        id="bisulco.fig18_late_gains",
        paper="bisulco2025",
        where="Supp. §D, Fig. 18 and text",
        statement="Linear-probe accuracy keeps increasing late in pre-training (long training pays off).",
        paper_value="still rising after 1000–1500 epochs",
        criterion=PairedGreater(),
        notebook="bisulco_sweeps",
        kind="trained",
        measure="probe accuracy at the last epoch minus at half of training, deepest encoder, paired over seeds",
        unit="points",
    ),
    Claim(
        id="bisulco.fig19_cka_last_layer",
        paper="bisulco2025",
        where="Supp. §D, Fig. 19 and text",
        statement="Shallower encoders are less similar (linear CKA) to the deepest encoder, particularly at the last "
        "layer.",
        paper_value="qualitative",
        criterion=Monotone("increasing"),
        notebook="bisulco_sweeps",
        kind="trained",
        measure="CKA of each encoder's last layer with the deepest encoder's last layer (another seed) against depth, "
        "mean ± s.e. over seeds",
    ),
]
