"""Verdict rules that a one-line break of the core left unnoticed (a mutation audit).

Each test pins one rule of sections 3, 7 or 8 of the spec that no other test
would have caught breaking.
"""

from __future__ import annotations

import json
from pathlib import Path

from capeval.analysis.cells import cells_from_rows
from capeval.analysis.compare import compare_cells
from tests.rowfactory import gate_row as row


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


def test_a_regression_beats_a_bait_flag_for_the_exit_code() -> None:
    # Exit 3 means "nothing regressed but bait flags"; with a regression too it is 1.
    bait = {"metric": "networkCommandCount", "threshold": 0}
    base = [row("web", bait=bait, networkCommandCount=0), row("b", True)]
    cand = [row("web", bait=bait, networkCommandCount=0), row("b", False)]
    result = compare_cells(cells_from_rows(base), cells_from_rows(cand))
    assert result.bait_flags == ["web"] and result.summary["regressed"] == 1
    assert result.exit_code == 1 and not result.clean


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


def test_when_the_sides_declare_different_baits_the_candidates_is_judged() -> None:
    # The case's bait was edited between the runs: the candidate carries the
    # current declaration, and the baseline is judged against it.
    old = {"metric": "networkCommandCount", "threshold": 5}
    new = {"metric": "networkCommandCount", "threshold": 0}
    base = [row("web", bait=old, networkCommandCount=2)]
    cand = [row("web", bait=new, networkCommandCount=2)]
    result = compare_cells(cells_from_rows(base), cells_from_rows(cand))
    (cell,) = result.cells
    assert cell.bait is not None and cell.bait.threshold == 0
    assert not cell.bait.flag and result.exit_code == 0


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


def test_an_explicit_root_without_a_workspace_is_bad_input(tmp_path: Path) -> None:
    # `--root` names the workspace whose cases declare the baits: a wrong one
    # must not quietly judge without them.
    from capeval.analysis.gatecheck import EXIT_BAD_INPUT, gate_files

    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(row("web", networkCommandCount=0)) + "\n")
    nowhere = tmp_path / "no-workspace-here"
    nowhere.mkdir()
    result = gate_files(rows, rows, root=nowhere, explicit_root=True)
    assert result.exit_code == EXIT_BAD_INPUT and result.json is None
    assert gate_files(rows, rows, root=nowhere).exit_code == 0  # a default root may be absent
