"""Cells and polars frames: a frame gives the cells its rows give, and cells lay out as a frame."""

from __future__ import annotations

from typing import Any

from capeval.analysis.compare import compare_cells
from capeval.core.cell import Cell

# -- numbers as tables and JSON print them -----------------------------------------


# -- frames (notebooks) ---------------------------------------------------------------


def test_a_frame_repeat_that_left_one_metric_out_keeps_the_others() -> None:
    import polars as pl

    from capeval.analysis.cells import cells_from_frame
    from capeval.core.metrics import METRIC_NAMES

    def repeat(i: int, **metrics: float | None) -> dict[str, Any]:
        values = dict.fromkeys(METRIC_NAMES, None) | metrics
        return {
            "resultKey": "v1::a",
            "id": "a",
            "variantId": "v1",
            "passed": True,
            "repeat": i,
            **values,
        }

    frame = pl.DataFrame(
        [
            repeat(0, shellCommandCount=1, networkCommandCount=4),
            repeat(1, shellCommandCount=3),  # networkCommandCount not reported
            repeat(2),  # a lost stream: no stats at all
        ]
    )
    cell = cells_from_frame(frame)["v1::a"]
    assert cell.medians["shellCommandCount"] == 2
    assert cell.medians["networkCommandCount"] == 4
    assert cell.medians["repeatedSearchCount"] is None
    assert cell.repeats == 3


def test_the_cell_frame_lists_providers_and_models_apart() -> None:
    from capeval.analysis.cells import cell_frame

    cell = Cell(
        resultKey="v1::a",
        caseId="a",
        variantId="v1",
        repeats=2,
        passCount=1,
        medians={},
        resolved=(("anthropic", "opus"), ("openai", None)),
    )
    row = cell_frame({"v1::a": cell}).row(0, named=True)
    assert (row["providers"], row["models"], row["mixed"]) == (
        ["anthropic", "openai"],
        ["opus", ""],
        True,
    )
    assert (row["passRate"], row["repeats"], row["passCount"]) == (0.5, 2, 1)


def test_a_frame_bait_without_a_threshold_is_warned_about() -> None:
    # A bait metric with no threshold is no declaration: the comparison must
    # say it was passed over, not drop it silently.
    import polars as pl

    from capeval.analysis.cells import cells_from_frame

    frame = pl.DataFrame(
        {
            "id": ["web"],
            "variantId": ["v"],
            "passed": [True],
            "networkCommandCount": [0],
            "baitMetric": ["networkCommandCount"],
            "baitThreshold": pl.Series([None], dtype=pl.Float64),
        }
    )
    cells = cells_from_frame(frame)
    (cell,) = cells.values()
    assert cell.bait is None and cell.baitUnread is not None
    result = compare_cells(cells, cells)
    assert any("no bait" in w for w in result.warnings)


def test_a_frame_row_with_no_behaviors_gives_no_stats_not_a_backfilled_zero() -> None:
    # A lost stream is nulls in every metric column: it must not become
    # taskToolCallCount 0 by the legacy backfill, which only fills captured rows.
    import polars as pl

    from capeval.analysis.cells import cells_from_frame
    from capeval.core.metrics import METRIC_NAMES

    frame = pl.DataFrame(
        {
            "id": ["a", "a"],
            "variantId": ["v", "v"],
            "passed": [True, False],
            **{m: pl.Series([None, None], dtype=pl.Int64) for m in METRIC_NAMES},
        }
    )
    (cell,) = cells_from_frame(frame).values()
    assert cell.repeats == 2 and all(m is None for m in cell.medians.values())
