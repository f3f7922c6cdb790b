"""What the eye sees in the plots: nothing overprints, counts get whole ticks,
colours a colour-blind reader can tell apart."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from capeval.analysis import plots, report
from capeval.analysis.compare import compare_cells
from capeval.core.cell import cells_from_rows
from tests.rowfactory import gate_row

TITLE = "Behavior metrics per cell — 20261130T170114Z-508b36"


def repeats(variants: int = 2) -> pl.DataFrame:
    rows = [
        {"id": case, "variantId": f"variant-{v}", "passed": True, "networkCommandCount": n,
         "editViaShellCount": n % 2, "maxTurnDurationMs": 250.0 * (n + 1)}
        for v in range(variants)
        for case in ("fix-greeting", "web-release-token")
        for n in (0, 1)
    ]  # fmt: skip
    return pl.DataFrame(rows)


def boxes(figure: Figure) -> tuple[Any, Any, list[Any], Any]:
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    assert figure._suptitle is not None
    title = figure._suptitle.get_window_extent(renderer)
    (legend,) = figure.legends
    axes = [ax.get_tightbbox(renderer) for ax in figure.axes if ax.get_visible()]
    return title, legend.get_window_extent(renderer), axes, figure.bbox


@pytest.mark.parametrize(
    "metrics",
    [["networkCommandCount"], ["networkCommandCount", "editViaShellCount"], None],
)
@pytest.mark.parametrize("title", [TITLE, TITLE + " with a long suffix, as a user may give"])
def test_the_behaviors_title_legend_and_panels_never_overlap(
    metrics: list[str] | None, title: str
) -> None:
    figure = plots.behaviors(repeats(variants=4), metrics, title=title)
    title_box, legend, axes, whole = boxes(figure)
    assert not title_box.overlaps(legend)
    for box in (title_box, legend, *axes):
        assert box.x0 >= 0 and box.x1 <= whole.x1 and box.y0 >= 0 and box.y1 <= whole.y1
    assert all(legend.y0 >= ax.y1 for ax in axes)


def test_the_compare_title_and_legend_never_overlap() -> None:
    frame = pl.DataFrame([{"id": "c", "variantId": "v", "passed": p} for p in (True, False)])
    figure = plots.compare(frame, frame, title="Build A vs build B, every cell, " * 3)
    title_box, legend, axes, _ = boxes(figure)
    assert not title_box.overlaps(legend) and all(legend.y0 >= ax.y1 for ax in axes)


def test_count_metrics_get_whole_ticks_and_durations_keep_theirs() -> None:
    figure = plots.behaviors(repeats(), ["networkCommandCount", "maxTurnDurationMs"])
    counts, durations = figure.axes[0], figure.axes[1]
    ticks = [t for t in counts.get_xticks() if counts.get_xlim()[0] <= t <= counts.get_xlim()[1]]
    assert ticks == [0.0, 1.0]
    assert len(durations.get_xticks()) > 2


def _captured(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    figures: list[Figure] = []
    monkeypatch.setattr(report, "_png_base64", lambda fig: figures.append(fig) or "")
    return figures


def test_the_html_pass_rate_legend_hides_no_point(monkeypatch: pytest.MonkeyPatch) -> None:
    # The baseline at pass rate 0 in the bottom row sat under the legend.
    base = cells_from_rows([gate_row(f"c{i}", passed=i != 9) for i in range(10)])
    cand = cells_from_rows([gate_row(f"c{i}") for i in range(10)])
    figures = _captured(monkeypatch)
    report.render_html(compare_cells(base, cand))
    figure = figures[0]
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    ax = figure.axes[0]
    legend = ax.get_legend().get_window_extent(renderer)
    assert legend.y0 >= ax.get_window_extent(renderer).y1  # above the axes, over no point


def test_the_html_behavior_chart_is_colour_blind_safe_with_whole_ticks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = cells_from_rows([gate_row("a", networkCommandCount=1, editViaShellCount=0)])
    cand = cells_from_rows([gate_row("a", networkCommandCount=0, editViaShellCount=1)])
    figures = _captured(monkeypatch)
    report.render_html(compare_cells(base, cand))
    ax = figures[1].axes[0]
    colours = {to_hex(bar.get_facecolor()) for bar in ax.patches}
    assert colours == {plots.OKABE_ITO[0].lower(), plots.OKABE_ITO[5].lower()}
    assert all(float(t).is_integer() for t in ax.get_xticks())
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert "-1" not in labels and "0.5" not in labels
