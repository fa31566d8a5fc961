"""The ``kong_reconstruction`` page's stored example images and the table and sentences it assembles from the
shared zoo's records (:func:`maelab.zoo.load_entries`).

:func:`examples_config` / :func:`examples`: the original test images the zoo's stored reconstructions show, stored
with the page so the book draws them without the fetched data set. :func:`loss_table`: the masked-patch loss of
every model against its two references; :func:`series_text`: one metric's mean over seeds at each point of a series.
Every number they show comes from the records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import zoo
from ..._validate import ParameterError
from .evidence import series_stats
from .settings import KongReconstructionSettings

__all__ = ["examples_config", "examples", "loss_table", "series_text"]

#: the zoo record columns :func:`loss_table` reads
LOSS_COLUMNS = ("model", "loss", "reference_loss", "patch_mean_loss", "train_loss")


def _settings(S: Any) -> KongReconstructionSettings:
    if not isinstance(S, KongReconstructionSettings):
        raise ParameterError("S", "the kong_reconstruction page's KongReconstructionSettings", type(S).__name__)
    return S


def examples_config(S: KongReconstructionSettings) -> dict[str, Any]:
    """The config of the stored result ``example_originals``: the data of the zoo's first seed and how many of its
    first test images the zoo stores reconstructions of (``maelab.zoo.N_EXAMPLES``)."""
    S = _settings(S)
    return {
        "what": "the first test images the zoo's stored examples reconstruct",
        "data": zoo.spec(S, S.unit_ratio, 1, S.seeds[0]).init_config(),
        "n": zoo.N_EXAMPLES,
    }


def examples(S: KongReconstructionSettings) -> dict[str, Any]:
    """``{"images": (N_EXAMPLES, C, H, W) array}``: the first test images of the zoo's data (needs the data set)."""
    S = _settings(S)
    return {"images": zoo.data(S)[1].images[: zoo.N_EXAMPLES].cpu().numpy()}


def loss_table(trained, checks: Sequence[Any]):
    """Masked-patch test loss per model (mean ± std over seeds), its random-init and patch-mean references, and the
    smallest drop below the better reference over seeds (from each model's
    :class:`~maelab.claims.ReconstructionCheck`, whose ``ratios`` are loss / better reference per seed).

    ``trained``: the zoo's entries without the random init; ``checks``: one check per model, in the order the models
    first appear in ``trained`` (as :func:`maelab.zoo.reconstruction_checks` returns them)."""
    import pandas as pd

    missing = set(LOSS_COLUMNS) - set(getattr(trained, "columns", ()))
    if missing:
        raise ParameterError("trained", f"zoo entries with columns {list(LOSS_COLUMNS)}", f"missing {sorted(missing)}")
    tab = trained.groupby("model", sort=False)[list(LOSS_COLUMNS[1:])].agg(["mean", "std"])
    if len(checks) != len(tab):
        raise ParameterError("checks", f"one check per model ({len(tab)})", len(checks))
    return pd.DataFrame(
        {
            "masked-patch loss": [f"{m:.3f} ± {sd:.3f}" for m, sd in tab["loss"].to_numpy()],
            "random init": [f"{m:.3f}" for m in tab[("reference_loss", "mean")]],
            "patch-mean predictor": [f"{m:.3f}" for m in tab[("patch_mean_loss", "mean")]],
            "drop below the better reference (%)": [f"{100 * (1 - max(c.ratios)):.1f}" for c in checks],
        },
        index=tab.index,
    )


def series_text(frame, x: str, column: str, digits: int) -> str:
    """``"x1: mean1, x2: mean2, ..."``: the mean of ``column`` over seeds at each value of ``x``
    (:func:`maelab.papers.kong2023.evidence.series_stats`), with ``digits`` decimals."""
    if not isinstance(digits, int) or digits < 0:
        raise ParameterError("digits", "an int >= 0", digits)
    return ", ".join(f"{k:g}: {v:.{digits}f}" for k, v in series_stats(frame, x, column)["mean"].items())
