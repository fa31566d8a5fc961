"""The synthesis page's rows: claims that two or more of the four theories make about the same encoders, decided
on the shared zoo (:mod:`maelab.zoo`) by the book's engine. ``PREDICTIONS`` says, per row, what each paper
predicts (its words, with the place), so the page can show where the theories agree with each other and with the
measurements."""

from __future__ import annotations

from ...claims import Claim, Monotone, PairedGreater

P = "synthesis"
NB = "synthesis"

CLAIMS: list[Claim] = [
    Claim(
        id="synth.probe_interior",
        paper=P,
        where="Zhang et al. Sec. 3.2, Fig. 2c; Kong et al. Table 1",
        statement="The linear probe is better at intermediate mask ratios than at the extremes 0.1 and 0.9.",
        paper_value="an interior optimum",
        criterion=PairedGreater(),
        notebook=NB,
        kind="trained",
        unit="points",
        measure="per seed: mean [CLS] probe accuracy at 0.25, 0.5, 0.75 minus the mean at 0.1 and 0.9 (MNIST zoo)",
    ),
    Claim(
        id="synth.rank_tracks_probe",
        paper=P,
        where="Zhang et al. Sec. 4, Fig. 1b-c (dimensional collapse)",
        statement="Across mask ratios, the encoder's effective rank rises and falls with its probe accuracy.",
        paper_value="rank and accuracy move together",
        criterion=PairedGreater(),
        notebook=NB,
        kind="trained",
        measure="per seed: Spearman correlation of [CLS] effective rank and [CLS] probe accuracy over the 5 ratios",
    ),
    Claim(
        id="synth.psnr_falls_ratio",
        paper=P,
        where="Kong et al. Sec. 3.1, Fig. 5",
        statement="From ratio 0.1 to 0.75, pixel fidelity of unmasked reconstructions (PSNR) falls.",
        paper_value="PSNR decreasing 0.1 → 0.75",
        criterion=Monotone("decreasing"),
        notebook=NB,
        kind="trained",
        measure="mean PSNR over seeds of unmasked test reconstructions at ratios 0.1-0.75 (error: s.e.), MNIST zoo",
    ),
    Claim(
        id="synth.unit_raises_probe",
        paper=P,
        where="Kong et al. Sec. 3, Table 1 (patch size 8 -> 16)",
        statement="A moderately coarser masking unit (2 x 2 tokens instead of 1) gives a better linear probe at 0.75.",
        paper_value="probe accuracy up from the smallest unit to the next",
        criterion=PairedGreater(),
        notebook=NB,
        kind="trained",
        unit="points",
        measure="per seed: [CLS] probe accuracy with masking unit 2 minus unit 1, ratio 0.75 (MNIST zoo)",
    ),
    Claim(
        id="synth.jacobian_spread_ratio",
        paper=P,
        where="Bisulco et al. supplement Fig. 21; Kong et al. Sec. 4",
        statement="Under the same masks, a model trained at a higher ratio reads farther: its masked-pixel Jacobians "
        "spread wider.",
        paper_value="spread increasing with the ratio",
        criterion=Monotone("increasing"),
        notebook=NB,
        kind="trained",
        measure="median 50 %-mass radius (pixels) of masked-pixel Jacobians at common masks (ratio 0.75), mean over "
        "seeds per training ratio",
    ),
    Claim(
        id="synth.attention_distance_ratio",
        paper=P,
        where="Kong et al. Sec. 3.2, Figs 6-7",
        statement="Attention reaches farther in models trained at higher ratios.",
        paper_value="attention distance increasing with the ratio",
        criterion=Monotone("increasing"),
        notebook=NB,
        kind="trained",
        measure="mean attention distance (tokens) of the last encoder layer on unmasked images, mean over seeds per "
        "training ratio",
    ),
]

#: For each row, what each paper predicts (direction, with the place), keyed by paper; "" where it says nothing.
PREDICTIONS: dict[str, dict[str, str]] = {
    "synth.probe_interior": {
        "Zhang et al.": "yes: a sweet spot near 0.7 of the mask graph's connectivity trade-off (Sec. 3.2, Fig. 2c)",
        "Kong et al.": "yes: accuracy rises until 0.75, 0.9 hurts (Table 1)",
        "Cao et al.": "",
        "Bisulco et al.": "no clear optimum: many ratios work surprisingly well downstream (supplement Figs 16-17)",
    },
    "synth.rank_tracks_probe": {
        "Zhang et al.": "implied: dimensional collapse (low effective rank) limits representation power (Sec. 4)",
        "Kong et al.": "",
        "Cao et al.": "",
        "Bisulco et al.": "",
    },
    "synth.psnr_falls_ratio": {
        "Zhang et al.": "",
        "Kong et al.": "yes: lower ratios reconstruct low-level information better (Sec. 3.1, Fig. 5)",
        "Cao et al.": "",
        "Bisulco et al.": "",
    },
    "synth.unit_raises_probe": {
        "Zhang et al.": "",
        "Kong et al.": "yes: linear-probe accuracy rises from masking patch 8 to 16 (Table 1); 32 hurts",
        "Cao et al.": "",
        "Bisulco et al.": "",
    },
    "synth.jacobian_spread_ratio": {
        "Zhang et al.": "",
        "Kong et al.": "yes: aggressive masking forces global information over local interpolation (Sec. 4, after "
        "He et al.)",
        "Cao et al.": "",
        "Bisulco et al.": "yes: higher ratios favour long-range over local correlations (supplement Fig. 21)",
    },
    "synth.attention_distance_ratio": {
        "Zhang et al.": "",
        "Kong et al.": "yes: from 0.1 to 0.9 attention grasps the whole object, not the region around a token "
        "(Sec. 3.2, Figs 6-7)",
        "Cao et al.": "no ratio dependence stated: masked patches are interpolated globally at any ratio (Sec. 6)",
        "Bisulco et al.": "",
    },
}
