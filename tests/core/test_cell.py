"""Cells: how repeats become a cell's pass count, medians, resolved models and bait (docs/gating.md#the-rules)."""

from __future__ import annotations

import json

from capeval.core.cell import cells_from_rows
from tests.rowfactory import gate_row as row


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
