"""Claim rows of Cao, Xu & Clifton (arXiv 2202.03670, 2022), How to Understand Masked Autoencoders.

Data for the scoreboard: what the paper claims, where, the paper's value, the criterion that computes our verdict
(:mod:`maelab.claims`) and the notebook that measures it. ``cao_theory`` rows are exact computations on the model the
theorems describe (W^V = I, a translation-invariant symmetric kernel); ``cao_decoder`` rows are measured on trained
micro MAEs (W^V != I, learned dot-product kernels), each with the precondition that the models learned
(``Evidence(unmet=...)`` otherwise).
"""

from __future__ import annotations

from maelab.claims import Above, Below, Claim, Monotone, PairedGreater

_THM51 = (
    "Under Thm. 5.1's hypotheses (W^V = I, a translation-invariant symmetric softmax kernel, a BV feature "
    "map), the layer change ||v^(t+1) - v^(t)||_V is at most C/n (eq. 16)"
)

CLAIMS: list[Claim] = [
    # ---- cao_theory: Theorem 5.1 (a) ----
    Claim(
        id="cao.thm51_rate_grid_width",
        paper="cao2022",
        where="Sec. 5, Thm. 5.1 (eq. 16); App. A",
        statement=_THM51 + ", tested with the kernel's width fixed in grid units (patches) on smooth feature maps.",
        paper_value="rate 1/n (log-log slope -1)",
        criterion=Below(-0.9),
        notebook="cao_theory",
        kind="computation",
        measure="log-log slope of the L2 layer change against n (softmax Gaussian kernel of width S.width_grid "
        "patches, W^V = I), one slope per random smooth map; mean + 2 s.e. over maps must be < -0.9",
    ),
    Claim(
        id="cao.thm51_rate_fixed_gamma",
        paper="cao2022",
        where="Sec. 5, Thm. 5.1; App. A, Assumption (B_3)",
        statement=_THM51 + " with gamma fixed, i.e. the kernel's width fixed in the unit square's coordinates "
        "(C(gamma, d) does not depend on n).",
        paper_value="rate 1/n (log-log slope -1)",
        criterion=Below(-0.9),
        notebook="cao_theory",
        kind="computation",
        measure="as cao.thm51_rate_grid_width with the width S.width_continuum fixed in unit-square coordinates",
    ),
    Claim(
        id="cao.thm51_rate_bv_jump",
        paper="cao2022",
        where="Sec. 5, Thm. 5.1 (v in BV(omega))",
        statement=_THM51 + " also for a BV map with a jump (the indicator of a disk), kernel width in grid units.",
        paper_value="rate 1/n (log-log slope -1)",
        criterion=Below(-0.9),
        notebook="cao_theory",
        kind="computation",
        measure="as cao.thm51_rate_grid_width on indicator-of-a-disk maps (random centres)",
    ),
    Claim(
        id="cao.thm51_normalisation_needed",
        paper="cao2022",
        where="Sec. 5 (text before Thm. 5.1) and eq. (15)",
        statement="The softmax (row) normalisation is what makes the representation change vanish as n grows: with "
        "the same kernel unnormalised (int K(x - x') v(x') dmu), the layer change does not decay with n.",
        paper_value="normalisation 'plays a vital role'",
        criterion=Above(-0.5),
        notebook="cao_theory",
        kind="computation",
        measure="log-log slope of the L2 layer change against n for the unnormalised kernel (grid-unit width); "
        "mean - 2 s.e. over maps must be > -0.5 (no decay)",
    ),
    # ---- cao_theory: Theorem 5.2 ----
    # identity: for any self-adjoint PSD A the eigenvalues of beta I + A lie in [beta, beta + ||A||]
    Claim(
        id="cao.thm52_second_kind_bound",
        paper="cao2022",
        where="Sec. 5, eq. (21)-(23), Thm. 5.2",
        statement="The skip connection makes the equation well-posed: the second-kind operator beta I + alpha^-1 K "
        "has condition number at most (beta + ||alpha^-1 K||) / beta, at every n.",
        paper_value="well-posed (bound 1/beta)",
        criterion=Below(1.0 + 1e-9, z=0.0),
        notebook="cao_theory",
        kind="identity",
        measure="max over n (1-D and 2-D grids) and beta > 0 of cond(beta I + A) / ((beta + ||A||) / beta), "
        "condition numbers in the alpha-weighted norm where A = alpha^-1 K is self-adjoint",
    ),
    Claim(
        id="cao.thm52_first_kind_ill_posed",
        paper="cao2022",
        where="Sec. 5, eq. (20)",
        statement="The first-kind equation alpha^-1 K v = z is ill-posed: its condition number grows without bound "
        "as the discretisation is refined.",
        paper_value="'extremely ill-posed'",
        criterion=Monotone("increasing", z=0.0),
        notebook="cao_theory",
        kind="computation",
        measure="log10 cond_2(A) of the 1-D Gaussian kernel operator (fixed width S.tik_width) against n, over the "
        "n where cond_2 < 1e13 (beyond that float64 cannot resolve the smallest singular value)",
    ),
    Claim(
        id="cao.thm52_noise_stability",
        paper="cao2022",
        where="Sec. 5, text after eq. (21)",
        statement="The beta v term renders the solution stable: solving the second-kind equation recovers v from "
        "noisy z with a smaller error than solving the first-kind equation.",
        paper_value="qualitative",
        criterion=PairedGreater(),
        notebook="cao_theory",
        kind="computation",
        measure="per noise seed: log10(relative error of the first-kind solution) - log10(that of the second-kind "
        "solution at beta = S.claim_beta), 1-D grid n = S.claim_n, noise sigma = S.tik_sigma",
    ),
    # ---- cao_theory: Proposition 3.1 ----
    Claim(
        id="cao.prop31_patches_alone",
        paper="cao2022",
        where="Sec. 3, Prop. 3.1 (eq. 2) with eps = 0",
        statement="For an exactly rank-r image (eps = 0, r < N_c), the p = n patches of a semi-random selection (one "
        "per patch-row, columns a permutation) determine the image, so R acting on them reconstructs it.",
        paper_value="error < C(r, N_c, p) * eps = 0",
        criterion=Above(0.99, z=0.0),
        notebook="cao_theory",
        kind="computation",
        measure="fraction of the image's patches determined by the selected patches (exact: components of the "
        "selection graph; confirmed by block-CUR reconstruction and a non-uniqueness witness), min over "
        "N_c and r <= N_c",
    ),
    # identity: the tokens store the rank-r SVD factors, so R(y) is the rank-r truncation and the ratio is exactly 1
    Claim(
        id="cao.prop31_embedding_exists",
        paper="cao2022",
        where="Sec. 3, Prop. 3.1 (existence of y in R^{p x d})",
        statement="There is an embedding y of the p = n semi-randomly selected tokens (d = N_c^2 numbers each) and a "
        "rank-preserving R with ||u - R(y)|| <= C eps, where eps is the rank-r approximation error.",
        paper_value="C(r, N_c, p) finite",
        criterion=Below(1.0 + 1e-9, z=0.0),
        notebook="cao_theory",
        kind="identity",
        measure="max over natural crops, N_c and r <= N_c / 2 of ||u - R(y)||_F / (eps ||u||_F) with y the "
        "rank-r SVD factors stored in the tokens of the permutation selection (lowrank.factor_embedding)",
    ),
    Claim(
        id="cao.prop31_semirandom_vs_uniform",
        paper="cao2022",
        where="Sec. 3 (the 'semi-random' selection of Prop. 3.1)",
        statement="A semi-random selection (one patch per patch-row, columns a permutation) represents a rank-r image "
        "better than a uniformly random selection of the same number of patches.",
        paper_value="implied by the choice of selection",
        criterion=PairedGreater(),
        notebook="cao_theory",
        kind="computation",
        measure="per natural crop (truncated to rank r <= N_c): block-CUR relative error of the uniform selection "
        "minus that of the permutation selection, mean over draws, N_c and r",
    ),
    # ---- cao_decoder: trained micro MAEs ----
    Claim(
        id="cao.fig3_intermediate_readout",
        paper="cao2022",
        where="Sec. 5, Fig. 3 and text",
        statement="Thanks to the stable propagation, the outputs of earlier decoder layers read out through the last "
        "layer's norm and prediction head also give sensible reconstructions.",
        paper_value="qualitative (Fig. 3, official ViT-B)",
        criterion=PairedGreater(),
        notebook="cao_decoder",
        kind="trained",
        measure="per seed (softmax micro MAE, W^V learned): mean over test images of the PSNR (pasted image: "
        "differs on masked patches only) of the worst intermediate decoder read-out minus that of the read-out of "
        "the decoder input (encoder output + mask tokens); trained.intermediate_gain",
    ),
    Claim(
        id="cao.thm51_trained_small_change",
        paper="cao2022",
        where="Sec. 5, Thm. 5.1 and Fig. 3",
        statement="In trained MAEs the representations change stably through the layers: the relative change "
        "||v_(t+1) - v_t|| / ||v_t|| of consecutive layers is small.",
        paper_value="O(1/n) (Thm. 5.1; hypotheses not met: W^V != I)",
        criterion=Below(0.5),
        notebook="cao_decoder",
        kind="trained",
        measure="per seed (softmax micro MAE): mean over test images of the largest relative token change of any "
        "encoder or decoder block (decoder.layer_changes); mean + 2 s.e. over seeds < 0.5",
    ),
    Claim(
        id="cao.thm51b_softmax_more_stable",
        paper="cao2022",
        where="Sec. 5 (text before Thm. 5.1)",
        statement="Softmax normalisation stabilises the propagation: a trained MAE with softmax attention changes its "
        "representation less between layers than the same MAE with an unnormalised (exp) kernel.",
        paper_value="qualitative",
        criterion=PairedGreater(),
        notebook="cao_decoder",
        kind="trained",
        measure="per seed: mean relative block change (all encoder and decoder blocks, mean over test images) of "
        "the unnormalised (exp) model minus that of the softmax model (same data, seed, initial weights and recipe)",
    ),
    Claim(
        id="cao.lemma61_visible_span",
        paper="cao2022",
        where="Sec. 6, Lemma 6.1 and Prop. 6.2 (eq. 25)",
        statement="A masked patch's first-decoder-layer attention output is a combination of the visible tokens' "
        "values: the mask tokens can be dropped with re-weighted attention up to C/n.",
        paper_value="error < C/n (eq. 24)",
        criterion=Above(0.9),
        notebook="cao_decoder",
        kind="trained",
        measure="per seed: mean over masked tokens, heads and images of the least-squares R^2 of the masked "
        "token's attention output on the visible tokens' values (first decoder layer)",
    ),
    Claim(
        id="cao.prop62_global_interpolation",
        paper="cao2022",
        where="Sec. 6, Prop. 6.2 and Q5",
        statement="Masked patches are interpolated globally, not merely from adjacent patches: most of a masked "
        "token's attention on visible tokens lies beyond its 8 neighbouring patches.",
        paper_value="'globally ... not just nearby'",
        criterion=Above(0.5),
        notebook="cao_decoder",
        kind="trained",
        measure="per seed: fraction of the first decoder layer's attention mass from masked to visible tokens that "
        "falls on visible patches at Chebyshev distance > 1, mean over heads, masked tokens and images",
    ),
]
