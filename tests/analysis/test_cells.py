"""Cells: how repeats become a cell's pass count, medians, resolved models and bait.

`capeval.analysis.cells` builds cells from rows and from frames; the same
rows must give the same cell either way (docs/gating.md#the-rules).
"""

from __future__ import annotations

import json
from typing import Any

from capeval.analysis.compare import compare_cells
from capeval.core.cell import Cell, cells_from_rows
from tests.rowfactory import gate_row as row

# -- numbers as tables and JSON print them -----------------------------------------


def test_table_numbers_drop_float_noise_but_keep_every_real_digit() -> None:
    from capeval.core.cell import format_value

    assert format_value((27.9 + 28.3) / 2) == "28.1"
    assert format_value(123456.789) == "123456.789"
    assert format_value(1234567.25) == "1234567.25"
    assert format_value(None) == "null"


def test_an_integral_threshold_is_written_as_an_integer() -> None:
    from capeval.core.cell import BaitDecl

    written = json.dumps(BaitDecl("networkCommandCount", 2.0).to_json())
    assert written == '{"metric": "networkCommandCount", "threshold": 2}'
    assert json.dumps(BaitDecl("networkCommandCount", 0.5).to_json()).endswith('"threshold": 0.5}')


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


def test_a_boolean_metric_value_is_no_number_in_a_cell() -> None:
    # JSON `true` is not a count: it must give no stats rather than a median of 1.
    (cell,) = cells_from_rows([row("a", networkCommandCount=True)]).values()
    assert cell.medians["networkCommandCount"] is None
    assert cell.medians["shellCommandCount"] == 0


def test_a_cell_repeat_without_passed_true_is_no_pass() -> None:
    rows = [row("a", repeat=0), row("a", repeat=1), row("a", repeat=2)]
    rows[1]["passed"] = None
    del rows[2]["passed"]
    (cell,) = cells_from_rows(rows).values()
    assert (cell.passCount, cell.repeats) == (1, 3)


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


def test_the_newest_run_s_bait_wins_even_with_the_smaller_threshold() -> None:
    # Edited from 5 down to 0: the order of declarations must not stand in for time.
    def run(started: str, threshold: int) -> list[dict[str, object]]:
        bait = {"metric": "networkCommandCount", "threshold": threshold}
        # Set on the row: gate_row's keywords are behavior metrics.
        return [{**row("a", repeat=r, bait=bait), "runStartedAt": started} for r in range(2)]

    rows = run("2026-11-01T00:00:00Z", 5) + run("2026-11-02T00:00:00Z", 0)
    for order in (rows, rows[::-1]):
        bait = cells_from_rows(order)["v1::a"].bait
        assert bait is not None and bait.threshold == 0
