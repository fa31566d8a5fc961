"""The figure style module: panel wrapping, widths, colours, bad input."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from maelab import plotting  # noqa: E402
from maelab._validate import ParameterError  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.mark.parametrize("n, ncols, rows, cols", [(3, 3, 1, 3), (5, 3, 2, 3), (4, 2, 2, 2), (7, 3, 3, 3), (1, 3, 1, 1)])
def test_panel_grid_wraps_into_rows_and_drops_unused_cells(n, ncols, rows, cols):
    fig, axes = plotting.panel_grid(n, ncols=ncols)
    assert len(axes) == n and len(fig.axes) == n  # the unused cells of the last row are gone
    geom = {ax.get_subplotspec().get_geometry()[:2] for ax in axes}
    assert geom == {(rows, cols)}
    # reading order: panel i sits in row i // cols, column i % cols
    for i, ax in enumerate(axes):
        spec = ax.get_subplotspec()
        assert (spec.rowspan.start, spec.colspan.start) == (i // cols, i % cols)
    w, h = fig.get_size_inches()
    assert w == pytest.approx(plotting.TEXT_WIDTH) and h == pytest.approx(rows * plotting.PANEL_HEIGHT)


def test_panel_grid_full_width_and_row_height():
    fig, axes = plotting.panel_grid(2, ncols=2, full=True, row_height=1.5)
    assert tuple(fig.get_size_inches()) == pytest.approx((plotting.FULL_WIDTH, 1.5))


@pytest.mark.parametrize(
    "kwargs, name",
    [({"n": 0}, "n"), ({"n": 2, "ncols": 0}, "ncols"), ({"n": 2.0}, "n"), ({"n": 2, "row_height": 0}, "row_height")],
)
def test_panel_grid_bad_input_names_the_parameter(kwargs, name):
    with pytest.raises(ParameterError, match=f"^{name} must be"):
        plotting.panel_grid(**kwargs)


def test_use_style_sets_sizes_and_palette_outside_ipython():
    plotting.use_style()
    assert matplotlib.rcParams["figure.dpi"] == plotting.DPI
    assert matplotlib.rcParams["font.size"] == 9
    first = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"][0]
    assert matplotlib.colors.to_hex(first) == plotting.method_color("MAE")
    with pytest.raises(ParameterError, match="^formats must be"):
        plotting.use_style(("gif",))


def test_colours():
    assert plotting.method_color("AE") == "#000000"
    assert len(set(plotting.METHOD_COLORS.values())) == len(plotting.METHOD_COLORS)  # distinct per method
    with pytest.raises(ParameterError, match="^name must be one of"):
        plotting.method_color("BYOL")
    cols = plotting.sweep_colors(4)
    assert len(cols) == 4 and len(set(cols)) == 4
    assert plotting.sweep_colors(1) == [matplotlib.colormaps["viridis"](0.4)]
    with pytest.raises(ParameterError, match="^n must be"):
        plotting.sweep_colors(0)
