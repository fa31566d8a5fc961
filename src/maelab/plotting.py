"""The book's figure style: one look for every notebook, legible at the page's text width.

In a notebook's import cell::

    from maelab import plotting
    plotting.use_style()                      # seaborn theme, sizes, 2x PNG output in notebooks

    fig, axes = plotting.panel_grid(5, ncols=3)                   # 5 panels wrapped into 2 rows at the text width
    ax.plot(x, y, color=plotting.method_color("U-MAE"))           # one colour per method, on every page
    colors = plotting.sweep_colors(len(ratios))                   # ordered values of a swept parameter

Figures are sized in inches at :data:`DPI` so that a figure of :data:`TEXT_WIDTH` fills the text column of the book
at 100 % zoom (about 730 px in the Jupyter Book theme) and :data:`FULL_WIDTH` a ``full-width`` cell. Inline images
are PNG at twice that resolution ("retina": sharp on high-density screens); myst-nb shows them at their nominal
width from the output's metadata.
"""

from __future__ import annotations

import math
from typing import Any

from ._validate import ParameterError

#: Dots per inch of every figure.
DPI = 100
#: Width in inches of a figure that fills the book's text column at :data:`DPI`.
TEXT_WIDTH = 7.2
#: Width in inches of a figure in a cell tagged ``full-width``.
FULL_WIDTH = 10.0
#: Height in inches of one row of panels.
PANEL_HEIGHT = 2.6

# seaborn's colour-blind palette
_CB = ("#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4", "#949494", "#ece133", "#56b4e9")
#: One colour per method or variant, the same on every page (seaborn's colour-blind palette; AE in black).
METHOD_COLORS: dict[str, str] = {
    "MAE": _CB[0],
    "U-MAE": _CB[1],
    "SimMIM": _CB[2],
    "DAE": _CB[3],
    "no mask": _CB[4],
    "linear": _CB[5],
    "AE": "#000000",
    "baseline": _CB[7],
    "theory": _CB[9],
}
SEQUENTIAL_CMAP = "viridis"  # ordered parameter sweeps (mask ratio, patch size, depth)
DIVERGING_CMAP = "RdBu_r"  # signed maps (Jacobians, receptive fields), centred on 0
IMAGE_CMAP = "magma"  # spectra and other non-negative maps


def _rc() -> dict[str, Any]:
    return {
        "figure.dpi": DPI,
        "savefig.dpi": DPI,
        "figure.figsize": (TEXT_WIDTH, PANEL_HEIGHT + 0.4),
        "figure.constrained_layout.use": True,
        "font.size": 9,
        "axes.titlesize": 9,
        "axes.labelsize": 9,
        "xtick.labelsize": 8,
        "ytick.labelsize": 8,
        "legend.fontsize": 7.5,
        "legend.frameon": False,
        "figure.titlesize": 10,
        "lines.linewidth": 1.4,
        "lines.markersize": 4,
        "image.cmap": SEQUENTIAL_CMAP,
        "axes.spines.top": False,
        "axes.spines.right": False,
    }


def use_style(formats: tuple[str, ...] = ("retina",)) -> None:
    """Apply the book's style (seaborn ``ticks`` theme, colour-blind palette, sizes) and the inline figure format.

    Args:
        formats: inline-backend formats for notebooks (``"retina"``: PNG at 2x; ``"svg"`` also works with myst-nb
            but makes pages heavy for images and dense scatter plots). Ignored outside IPython.
    """
    import matplotlib as mpl
    import seaborn as sns

    allowed = {"png", "retina", "png2x", "svg", "jpeg", "pdf"}
    bad = [f for f in formats if f not in allowed]
    if bad or not formats:
        allowed_text = "a non-empty tuple of " + ", ".join(sorted(allowed))
        raise ParameterError("formats", allowed_text, bad[0] if bad else formats)
    sns.set_theme(context="paper", style="ticks", palette=list(_CB), rc=_rc())
    mpl.rcParams.update(_rc())
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with the book dependencies
        return
    if get_ipython() is not None:
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats(*formats)


def method_color(name: str) -> str:
    """The colour of a method or variant (keys of :data:`METHOD_COLORS`), the same on every page."""
    if name not in METHOD_COLORS:
        raise ParameterError("name", "one of " + ", ".join(repr(k) for k in METHOD_COLORS), name)
    return METHOD_COLORS[name]


def sweep_colors(n: int, cmap: str = SEQUENTIAL_CMAP) -> list:
    """``n`` colours along a sequential colour map for the ordered values of a swept parameter (ends trimmed)."""
    import matplotlib as mpl

    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ParameterError("n", "an integer >= 1", n)
    cm = mpl.colormaps[cmap]
    return [cm(0.1 + 0.8 * i / max(1, n - 1)) if n > 1 else cm(0.4) for i in range(n)]


def figure_width(full: bool = False) -> float:
    """Width in inches of a figure spanning the text column (or, ``full=True``, a full-width cell)."""
    return FULL_WIDTH if full else TEXT_WIDTH


def panel_grid(
    n: int,
    ncols: int = 3,
    *,
    full: bool = False,
    row_height: float = PANEL_HEIGHT,
    sharex: bool = False,
    sharey: bool = False,
    **subplot_kw,
):
    """A figure with ``n`` panels wrapped into rows of at most ``ncols``, at the text (or full) width.

    Unused cells of the last row are removed, so ``axes`` holds exactly ``n`` panels in reading order.

    Args:
        n: number of panels (>= 1).
        ncols: panels per row (>= 1); rows = ceil(n / ncols).
        full: size for a ``full-width`` cell instead of the text column.
        row_height: inches per row.
        sharex, sharey, subplot_kw: passed to :func:`matplotlib.pyplot.subplots`.

    Returns:
        ``(fig, axes)`` with ``axes`` a list of ``n`` Axes.
    """
    import matplotlib.pyplot as plt

    for name, v in (("n", n), ("ncols", ncols)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ParameterError(name, "an integer >= 1", v)
    if not row_height > 0:
        raise ParameterError("row_height", "a number > 0 (inches)", row_height)
    ncols = min(ncols, n)
    nrows = math.ceil(n / ncols)
    fig, grid = plt.subplots(
        nrows,
        ncols,
        figsize=(figure_width(full), row_height * nrows),
        squeeze=False,
        sharex=sharex,
        sharey=sharey,
        **subplot_kw,
    )
    flat = list(grid.ravel())
    for ax in flat[n:]:
        ax.remove()
    return fig, flat[:n]


def no_ticks(*axes) -> None:
    """Hide ticks and spines on image panels."""
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
        for sp in ax.spines.values():
            sp.set_visible(False)
