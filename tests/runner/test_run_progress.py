"""Progress lines and the per-cell table a person reads after a run."""

from __future__ import annotations

import io

from capeval.runner.progress import (
    ProgressPrinter,
    cell_summaries,
    format_table,
    progress_line,
    short_duration,
    time_left,
)

BAIT = {"metric": "networkCommandCount", "threshold": 0}


def _row(
    variant: str, case: str, repeat: int, passed: bool, turns: int | None, net: int | None
) -> dict:
    return {
        "variantId": variant,
        "id": case,
        "repeat": repeat,
        "passed": passed,
        "turnsUsed": turns,
        "durationMs": 1500,
        "error": None if passed else "grader exited 1",
        "bait": BAIT if case == "web" else None,
        "behaviors": None if net is None else {"networkCommandCount": net},
    }


ROWS = [
    _row("sloppy", "web", 0, False, 4, 2),
    _row("sloppy", "web", 1, True, 6, 1),
    _row("oracle", "web", 0, True, 3, 0),
    _row("oracle", "plain", 0, True, None, None),
    _row("oracle", "uncaptured", 0, True, 2, None),
]


def test_cells_count_passes_median_turns_and_bait_status() -> None:
    rows = [*ROWS, {**ROWS[4], "bait": BAIT}]
    cells = {(c.variantId, c.caseId): c for c in cell_summaries(rows)}
    sloppy = cells[("sloppy", "web")]
    assert (sloppy.passes, sloppy.repeats, sloppy.medianTurns) == (1, 2, 5)
    assert (sloppy.bait, sloppy.baitMedian) == ("misbehaving", 1.5)
    assert cells[("oracle", "web")].bait == "ok"
    assert cells[("oracle", "plain")].bait == "" and cells[("oracle", "plain")].medianTurns is None
    assert cells[("oracle", "uncaptured")].bait == "no data"  # null behaviors are not zeros


def test_table_has_a_line_per_cell() -> None:
    table = format_table(cell_summaries(ROWS)).splitlines()
    assert table[0].split() == ["variant", "case", "passed", "median", "turns", "bait"]
    assert table[1].split()[:4] == ["sloppy", "web", "1/2", "5"]
    assert "misbehaving (median 1.5)" in table[1]
    assert len(table) == 1 + 4


def test_progress_lines_only_when_enabled() -> None:
    out = io.StringIO()
    ProgressPrinter(enabled=False, stream=out)(ROWS[0], 1, 10)
    assert out.getvalue() == ""
    ProgressPrinter(enabled=True, stream=out, clock=iter([100.0, 140.0]).__next__)(ROWS[0], 1, 10)
    assert out.getvalue() == (
        "[ 1/10] FAIL sloppy web #0  1.5s  4 turns  ~6m left  (grader exited 1)\n"
    )
    assert progress_line(ROWS[3], 10, 10).startswith("[10/10] PASS oracle plain #0  1.5s  ? turns")


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_time_left_is_the_pace_of_this_process_times_what_remains() -> None:
    # Resumed at 40 of 100 written: those took no time here. After 2 more in
    # 60 s (30 s a repeat at this concurrency), 58 remain: 29 minutes.
    clock = _Clock()
    out = io.StringIO()
    printer = ProgressPrinter(enabled=True, stream=out, clock=clock)
    clock.now += 20
    printer(ROWS[2], 41, 100)
    clock.now += 40
    printer(ROWS[2], 42, 100)
    first, second = out.getvalue().splitlines()
    assert first.endswith("3 turns  ~20m left")  # 20 s a repeat, 59 to go
    assert second.endswith("3 turns  ~29m left")
    clock.now += 30
    printer(ROWS[3], 100, 100)  # the last one: nothing left to estimate
    assert out.getvalue().splitlines()[-1].endswith("? turns")


def test_time_left_and_its_words() -> None:
    assert time_left(60.0, 3, 6) == 120.0
    assert time_left(60.0, 0, 6) is None and time_left(60.0, 3, 0) is None
    assert time_left(0.0, 1, 6) is None
    words = [short_duration(s) for s in (0.4, 44.6, 59.4, 59.6, 90, 3569, 3600, 7500)]
    assert words == ["0s", "45s", "59s", "1m", "2m", "59m", "1h00m", "2h05m"]
