"""Supersession: a later row of a repeat replaces an earlier `error` row, in every reader.

`capeval run --resume PATH --retry-errors` appends a new row for a repeat
whose last row is an `error`. The reference reader (`read_rows`), the gate's
DuckDB path (`fastload`), `load_frame` (both paths) and the history views
must all leave the superseded row out, and keep every other duplicate.
"""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capeval.analysis import fastload
from capeval.analysis.fastload import FastPathUnavailable, load_sides
from capeval.analysis.frame import load_frame
from capeval.analysis.history import ingest, open_db, records
from capeval.core.aggregate import aggregate
from capeval.core.metrics import METRIC_NAMES
from capeval.results.errors import ResultFileWarning
from capeval.results.load import read_rows
from capeval.results.supersede import supersede, superseded


def _row(
    case: str, repeat: int | None, outcome: str, run: str = "r1", **extra: Any
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "resultKey": f"v1::{case}",
        "id": case,
        "variantId": "v1",
        "provider": "prov",
        "model": "m",
        "passed": outcome == "passed",
        "outcome": outcome,
        "runId": run,
        "behaviors": {m: 1 for m in METRIC_NAMES},
    }
    if repeat is not None:
        row["repeat"] = repeat
    row.update(extra)
    return row


def test_a_later_row_supersedes_an_error_row_and_nothing_else() -> None:
    rows = [
        _row("a", 0, "error"),
        _row("a", 1, "passed"),
        _row("a", 0, "failed"),  # supersedes the first row
        _row("a", 1, "passed"),  # a duplicate of a judged row: kept, warned about
        _row("b", None, "error"),
        _row("b", None, "passed"),  # no repeat number: nothing is superseded
        _row("c", 0, "error", run="r2"),
        _row("c", 0, "passed", run="r3"),  # another run's repeat
    ]
    assert superseded(rows) == [True, False, False, False, False, False, False, False]
    assert supersede(rows) == rows[1:]


def test_an_error_row_superseded_by_another_error_row_leaves_the_last() -> None:
    rows = [_row("a", 0, "error"), _row("a", 0, "error"), _row("a", 0, "passed")]
    assert supersede(rows) == [rows[2]]
    assert supersede(rows[:2]) == [rows[1]]


def test_an_old_row_counts_as_error_when_its_status_was_cancelled() -> None:
    old = {**_row("a", 0, "error"), "status": "cancelled"}
    del old["outcome"]
    assert supersede([old, _row("a", 0, "passed")]) == [_row("a", 0, "passed")]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _reference(path: Path) -> list[tuple[str, int, int, int]]:
    return [
        (c["resultKey"], c["repeats"], c["passCount"], c["errorCount"])
        for c in aggregate(read_rows(path, on_warning=lambda _: None))
    ]


def _cells(cells: Any) -> list[tuple[str, int, int, int]]:
    return [(k, c.repeats, c.passCount, c.errors) for k, c in sorted(cells.items())]


def _views(path: Path) -> list[tuple[str, int, int, int]]:
    con = open_db()
    ingest(con, [path])
    # The view has a cell per run; the reference pools the runs of a file.
    found = records(
        con,
        'SELECT resultKey, sum(repeats) AS "repeats", sum(passCount) AS passCount, '
        "sum(errors) AS errors FROM cells GROUP BY resultKey ORDER BY resultKey",
    )
    return [(r["resultKey"], r["repeats"], r["passCount"], r["errors"]) for r in found]


def _frame_counts(frame: Any) -> list[tuple[str, int, int, int]]:
    out = []
    for key in sorted(set(frame["resultKey"].to_list())):
        part = frame.filter(frame["resultKey"] == key)
        outcomes = part["outcome"].to_list()
        out.append(
            (
                key,
                sum(o != "error" for o in outcomes),
                outcomes.count("passed"),
                outcomes.count("error"),
            )
        )
    return out


def _all_agree(path: Path) -> None:
    want = _reference(path)
    assert _cells(load_sides([[path]], fast=False)[0][0]) == want
    try:
        fast = fastload._load_duckdb([[path]], with_values=True, headline=True)
    except FastPathUnavailable:
        pass
    else:
        assert _cells(fast[0]) == want
    assert _views(path) == want
    from capeval.analysis import frame as frame_module

    # A duplicate that is no superseded error is counted and warned about;
    # the other readers' warnings are checked where they are tested.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultFileWarning)
        assert _frame_counts(load_frame(path, fast=False)) == want
        old = frame_module.FAST_MIN_BYTES
        frame_module.FAST_MIN_BYTES = 0
        try:
            assert _frame_counts(load_frame(path)) == want
        finally:
            frame_module.FAST_MIN_BYTES = old


def test_every_reader_leaves_the_superseded_row_out(tmp_path: Path) -> None:
    rows = [
        _row("a", 0, "error"),
        _row("a", 1, "failed"),
        _row("b", 0, "error"),
        _row("a", 0, "passed"),
        _row("a", 1, "passed"),  # a duplicate: counted twice, as before supersession
    ]
    path = _write(tmp_path / "run.jsonl", rows)
    assert _reference(path) == [("v1::a", 3, 2, 0), ("v1::b", 0, 0, 1)]
    _all_agree(path)


_ROWS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.sampled_from([0, 1, None]),
        st.sampled_from(["passed", "failed", "error"]),
        st.sampled_from(["r1", "r2"]),
    ),
    min_size=1,
    max_size=12,
)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=_ROWS)
def test_every_reader_agrees_on_supersession_of_random_streams(
    drawn: list[tuple[str, int | None, str, str]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp) / "run.jsonl", [_row(c, r, o, run) for c, r, o, run in drawn])
        _all_agree(path)
