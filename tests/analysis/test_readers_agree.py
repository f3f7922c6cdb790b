"""Every reader refuses what the reference reader refuses, and reads the rest as it does.

The gate's fast path (DuckDB, `capeval.analysis.fastload`) reads only what
its verdicts need and judges each cell from SQL aggregates; the reference
reader (`capeval.results.load`) builds every row in Python. On rows with odd
values (a metric written as `true` or "5", a `passed` written twice, a
fractional repeat, a token usage that is no object, a legacy tool-call count
that is no integer) the fast path must either give the reference's cells
exactly or give way to the reference reader, which refuses the row naming
file, line and field: never read such a row as a value. The history views and
`load_frame` refuse the same rows with the same words.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from capeval.analysis import fastload
from capeval.analysis.fastload import FastPathUnavailable, load_sides
from capeval.analysis.frame import load_frame
from capeval.analysis.history import ingest, open_db
from capeval.core.cell import Cell
from capeval.core.metrics import METRIC_NAMES
from capeval.results.columns import ColumnTypeError
from capeval.results.errors import ResultFileError
from capeval.results.load import read_rows
from tests.clirun import capeval
from tests.rowfactory import gate_row

FIELDS = [n for n in Cell.__slots__ if n not in ("passes", "values")]


def _row(case: str = "alpha", repeat: int = 0, **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "resultKey": f"v1::{case}",
        "id": case,
        "variantId": "v1",
        "provider": "prov",
        "model": "m",
        "passed": repeat % 2 == 0,
        "repeat": repeat,
        "runId": "r1",
        "tokenUsage": {"input": 10},
        "behaviors": {m: repeat for m in METRIC_NAMES},
    }
    row.update(fields)
    return row


def _text(**fields: Any) -> str:
    return json.dumps({**_row(repeat=1), **fields})


def _metrics(**values: Any) -> dict[str, Any]:
    return {**{m: 1 for m in METRIC_NAMES}, **values}


# Lines the reference reader refuses, and the field its message names.
REFUSED: dict[str, tuple[str, str]] = {
    "numeric string metric": (_text(behaviors=_metrics(shellCommandCount="5")), "behaviors"),
    "boolean metric": (_text(behaviors=_metrics(shellCommandCount=True)), "behaviors"),
    "metric past a double": (
        _text().replace('"shellCommandCount": 1', '"shellCommandCount": 1e400'),
        "behaviors.shellCommandCount",
    ),
    "passed written twice": (
        _text().replace('"passed": false', '"passed": false, "passed": true'),
        "'passed' is written twice",
    ),
    "metric written twice": (
        _text().replace('"shellCommandCount": 1', '"shellCommandCount": 1, "shellCommandCount": 9'),
        "'behaviors.shellCommandCount' is written twice",
    ),
    "legacy count written twice": (
        _text(behaviors={"toolCallsByName": {"task": 1}}).replace(
            '"task": 1', '"task": 1, "task": 2'
        ),
        "'behaviors.toolCallsByName.task' is written twice",
    ),
    "passed 1": (_text(passed=1), "'passed'"),
    "passed null": (_text(passed=None), "'passed'"),
    "empty id": (_text(id=""), "'id'"),
    "numeric id": (_text(id=7), "'id'"),
    "fractional repeat": (_text(repeat=1.5), "'repeat'"),
    "repeat written 1.0": (_text(repeat=1.0), "'repeat'"),
    "repeat as a string": (_text(repeat="1"), "'repeat'"),
    "behaviors a list": (_text(behaviors=[1]), "'behaviors'"),
    "tokenUsage a string": (_text(tokenUsage="10"), "'tokenUsage'"),
    "no resultKey or variantId": (
        json.dumps(
            {k: v for k, v in _row(repeat=1).items() if k not in ("resultKey", "variantId")}
        ),
        "needs 'resultKey'",
    ),
}


def _stream(path: Path, middle: str) -> Path:
    good = [json.dumps(_row(repeat=r)) for r in (0, 2)]
    path.write_text("\n".join([good[0], middle, good[1]]) + "\n")
    return path


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_every_reader_refuses_what_the_reference_reader_refuses(tmp_path: Path, kind: str) -> None:
    line, field = REFUSED[kind]
    path = _stream(tmp_path / "r.jsonl", line)
    with pytest.raises(ResultFileError) as reference:
        read_rows(path)
    message = str(reference.value)
    assert message.startswith(f"{path}:2: ") and field in message, message
    # The gate's DuckDB path reads none of these as a value: it gives way...
    with pytest.raises(FastPathUnavailable):
        fastload._load_duckdb([[path]], with_values=True, headline=True)
    # ...so the gate, load_frame and the history views all say what the reference says.
    for read in (
        lambda: load_sides([[path], [path]]),
        lambda: load_frame(path),
        lambda: ingest(open_db(), [path]),
    ):
        with pytest.raises(ResultFileError) as raised:
            read()
        assert str(raised.value).replace(str(path.resolve()), str(path)) == message


@pytest.mark.parametrize("kind", ["boolean metric", "passed written twice", "repeat as a string"])
def test_the_gate_exits_2_naming_file_line_and_field(tmp_path: Path, kind: str) -> None:
    line, field = REFUSED[kind]
    bad = _stream(tmp_path / "cand.jsonl", line)
    base = _stream(tmp_path / "base.jsonl", json.dumps(_row(repeat=1)))
    (tmp_path / "evals" / "capability" / "cases").mkdir(parents=True)
    done = capeval("gate", "--root", tmp_path, "--baseline", base, "--candidate", bad)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"{bad}:2: " in done.stderr and field in done.stderr, done.stderr


def test_a_field_no_verdict_reads_may_be_written_twice(tmp_path: Path) -> None:
    # As every JSON reader takes it: the last one. Only fields a verdict reads are refused.
    line = _text(sessionId="a").replace('"sessionId": "a"', '"sessionId": "a", "sessionId": "b"')
    path = _stream(tmp_path / "r.jsonl", line)
    assert read_rows(path)[1]["sessionId"] == "b"
    assert load_sides([[path]], fast=False)[0] == load_sides([[path]])[0]


def test_a_v3_file_with_two_cases_arrays_is_refused_by_every_reader(tmp_path: Path) -> None:
    rows = [_row(repeat=r) for r in range(2)]
    path = tmp_path / "run.json"
    path.write_text(
        '{"version": 3, "startedAt": "2026-01-01T00:00:00Z", '
        f'"cases": {json.dumps(rows[:1])}, "cases": {json.dumps(rows)}}}'
    )
    with pytest.raises(ResultFileError, match=r"run\.json: field 'cases' is written twice"):
        read_rows(path)
    with pytest.raises(FastPathUnavailable):
        fastload._load_duckdb([[path]], with_values=False, headline=False)
    with pytest.raises(ResultFileError, match="'cases' is written twice"):
        load_sides([[path], [path]])


# -- random rows: the fast path gives the reference's cells, or gives way -------------------

ODD_METRIC = st.sampled_from(
    [True, False, "5", "x", 1.5, 5e-324, 1e308, None, [1], {"a": 1}, 2**70, -0.0, 7]
)
ODD = {
    "passed": st.sampled_from([1, "true", None, 0]),
    "id": st.sampled_from([7, "", None, True, "beta"]),
    "resultKey": st.sampled_from([5, "", None, "v1::beta", "other::alpha"]),
    "repeat": st.sampled_from([1.5, "1", True, 1.0, 2**70, None, -1]),
    "tokenUsage": st.sampled_from(["10", [1], {"input": "5"}, {"input": 2.5}, None, {}]),
    "provider": st.sampled_from([3, True, None, "other"]),
    "tier": st.sampled_from([5, None, "t2"]),
    "title": st.sampled_from([None, "T", 1]),
    "durationMs": st.sampled_from(["7", True, 1e300, 12.5, None]),
    "turnsUsed": st.sampled_from([7.5, "7", None, 3]),
    "bait": st.sampled_from(
        [
            "x",
            {"metric": 5, "threshold": 1},
            {"metric": "networkCommandCount", "threshold": "2"},
            {"metric": "networkCommandCount", "threshold": 1},
            {"metric": "networkCommandCount"},
            None,
        ]
    ),
}
LEGACY_CALLS = st.sampled_from(
    [{"task": 2.5}, {"task": True}, {"task": "2"}, {"task": 3, "spawn_agent": 1}, [1], "x", None]
)
TWICE = st.sampled_from(["passed", "shellCommandCount", "sessionId", "resultKey", None])


@st.composite
def odd_lines(draw: st.DrawFn) -> list[str]:
    """A file's lines: mostly rows as writers write them, some with odd values."""
    lines = []
    odd_file = draw(st.booleans())
    for repeat in range(draw(st.integers(1, 6))):
        row = _row(draw(st.sampled_from(["alpha", "beta"])), repeat)
        row["behaviors"] = {m: draw(st.integers(0, 9)) for m in METRIC_NAMES}
        if draw(st.integers(0, 3)) == 0:  # a legacy row, its task calls counted
            del row["behaviors"]["taskToolCallCount"]
            row["behaviors"]["toolCallsByName"] = draw(LEGACY_CALLS)
        for _ in range(draw(st.sampled_from([0, 0, 1, 2] if odd_file else [0]))):
            field = draw(st.sampled_from([*ODD, "metric"]))
            if field == "metric":
                row["behaviors"][draw(st.sampled_from(METRIC_NAMES))] = draw(ODD_METRIC)
            else:
                row[field] = draw(ODD[field])
        text = json.dumps(row)
        twice = draw(TWICE) if odd_file else None
        if twice is not None and f'"{twice}": ' in text:
            text = text.replace(f'"{twice}": ', f'"{twice}": 0, "{twice}": ', 1)
        lines.append(text)
    return lines


def _outcome(read: Any) -> Any:
    try:
        return read()
    except (ResultFileError, ColumnTypeError) as exc:
        return ("refused", str(exc))


def _fields(cell: Cell) -> dict[str, Any]:
    out = {name: getattr(cell, name) for name in FIELDS}
    out["medians"] = {m: (None if v is None else float(v)) for m, v in cell.medians.items()}
    return out


@pytest.mark.slow
@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(sides=st.lists(odd_lines(), min_size=2, max_size=2), headline=st.booleans())
def test_the_fast_path_gives_the_reference_cells_or_gives_way(
    sides: list[list[str]], headline: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for index, lines in enumerate(sides):
            path = Path(tmp) / f"s{index}.jsonl"
            path.write_text("\n".join(lines) + "\n")
            paths.append([path])
        reference = _outcome(lambda: load_sides(paths, with_values=True, fast=False)[0])
        try:
            fast = fastload._load_duckdb(paths, with_values=True, headline=headline)
        except FastPathUnavailable:
            event("gave way")
            return
        event("read by DuckDB")
    # Read by DuckDB: then the reference reader reads the same cells, never refuses them.
    assert not isinstance(reference, tuple), reference
    assert [list(side) for side in fast] == [list(side) for side in reference]
    for f_side, r_side in zip(fast, reference, strict=True):
        for key, cell in f_side.items():
            want = _fields(r_side[key])
            got = _fields(cell)
            if not headline:  # what only reports read
                for name in ("tier", "title", "durationMs", "turnsUsed", "tokenInput"):
                    got.pop(name), want.pop(name)
                for name in ("durationReported", "turnsReported", "tokenReported"):
                    got.pop(name), want.pop(name)
            assert got == want, key
            assert cell.passes == r_side[key].passes and cell.values == r_side[key].values


def _reference_cells(path: Path) -> Any:
    """The reference reader's cells, with the types the views' columns hold checked as
    the reference checks them (`convert`): the views refuse 7.5 turns, `aggregate` need not."""
    from capeval.analysis.views import type_problem
    from capeval.core.aggregate import aggregate

    def cells() -> list[dict[str, Any]]:
        rows = read_rows(path)
        for line, row in enumerate(rows, start=1):
            problem = type_problem(row)
            if problem is not None:
                raise ResultFileError(path, problem, line=line)
        out = []
        for cell in aggregate(rows):
            medians = {m: float(s["median"]) for m, s in cell["behaviorStats"].items()}
            out.append({"resultKey": cell["resultKey"], "caseId": cell["id"],
                        "repeats": cell["repeats"], "passCount": cell["passCount"],
                        "medians": medians})  # fmt: skip
        return out

    return _outcome(cells)


def _view_cells(path: Path) -> Any:
    from capeval.analysis.history import records

    def cells() -> list[dict[str, Any]]:
        con = open_db()
        ingest(con, [path])
        rows = records(con, "SELECT * FROM cells ORDER BY resultKey")
        return [
            {"resultKey": r["resultKey"], "caseId": r["caseId"], "repeats": r["repeats"],
             "passCount": r["passCount"],
             "medians": {m: float(r[m]) for m in METRIC_NAMES if r[m] is not None}}
            for r in rows
        ]  # fmt: skip

    outcome = _outcome(cells)
    if isinstance(outcome, tuple):  # the views name the file by its resolved path
        return (outcome[0], outcome[1].replace(str(path.resolve()), str(path)))
    return outcome


@pytest.mark.slow
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(lines=odd_lines())
def test_the_history_views_count_and_refuse_as_the_reference_reader(lines: list[str]) -> None:
    # DuckDB's median loses a subnormal value (the gate gives such cells away);
    # the views take DuckDB's median, so such values are left out here.
    lines = [line for line in lines if "5e-324" not in line]
    if not lines:
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.jsonl"
        path.write_text("\n".join(lines) + "\n")
        assert _view_cells(path) == _reference_cells(path)


@pytest.mark.slow
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(lines=odd_lines())
def test_load_frames_fast_path_reads_as_the_reference_or_declines(lines: list[str]) -> None:
    from polars.testing import assert_frame_equal

    from capeval.analysis import frame as frame_module
    from capeval.analysis import framefast

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.jsonl"
        path.write_text("\n".join(lines) + "\n")
        reference = _outcome(lambda: load_frame(path, fast=False))
        if not framefast.read_fast([path]):
            event("declined")
            return
        event("read by DuckDB")
        # Read by DuckDB: the reference reader reads the same frame, never refuses it.
        assert not isinstance(reference, tuple), reference
        old = frame_module.FAST_MIN_BYTES
        frame_module.FAST_MIN_BYTES = 0
        try:
            fast = load_frame(path)
        finally:
            frame_module.FAST_MIN_BYTES = old
        assert_frame_equal(fast, reference)


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _without(row: dict[str, Any], field: str) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != field}


# The second repeat of a cell whose first repeat is well formed: DuckDB's
# aggregates (any_value, count_if) would quietly skip the missing value.
INCOMPLETE = {
    "no passed": lambda r: _without(r, "passed"),
    "passed null": lambda r: {**r, "passed": None},
    "no id": lambda r: _without(r, "id"),
    "id null": lambda r: {**r, "id": None},
}


@pytest.mark.parametrize("name", sorted(INCOMPLETE))
def test_a_repeat_without_passed_or_id_is_refused_by_either_reader(
    tmp_path: Path, name: str
) -> None:
    good, odd = gate_row("a", repeat=0), gate_row("a", False, repeat=1)
    path = _write(tmp_path / "r.jsonl", [good, INCOMPLETE[name](odd)])
    with pytest.raises(fastload.FastPathUnavailable):
        fastload._load_duckdb([[path]], with_values=False, headline=False)
    messages = []
    for fast in (True, False):
        with pytest.raises(ResultFileError) as info:
            load_sides([[path]], fast=fast)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "r.jsonl:2:" in messages[0]


PAIRS = {
    "one provider, two models": [("prov", "m1"), ("prov", "m2")],
    "one model, provider unreported once": [("prov", "m"), (None, "m")],
    "one provider, model unreported once": [("prov", "m"), ("prov", None)],
    "two providers, one model": [("a", "m"), ("b", "m")],
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_repeats_that_resolved_differently_are_mixed_on_either_path(
    tmp_path: Path, name: str
) -> None:
    rows = [
        {**gate_row("a", repeat=i), "provider": provider, "model": model}
        for i, (provider, model) in enumerate(PAIRS[name] + PAIRS[name][:1])
    ]
    path = _write(tmp_path / "r.jsonl", rows)
    (fast,) = fastload._load_duckdb([[path]], with_values=False, headline=False)
    (slow,), _ = load_sides([[path]], fast=False)
    expected = tuple(sorted(set(PAIRS[name]), key=lambda p: (p[0] or "", p[1] or "")))
    assert slow["v1::a"].resolved == expected
    assert fast["v1::a"].resolved == expected
    assert fast["v1::a"].mixed


def test_repeats_that_agree_are_not_mixed(tmp_path: Path) -> None:
    rows = [{**gate_row("a", repeat=i), "provider": None, "model": "m"} for i in range(3)]
    (fast,) = fastload._load_duckdb(
        [[_write(tmp_path / "r.jsonl", rows)]], with_values=False, headline=False
    )
    assert fast["v1::a"].resolved == ((None, "m"),)
    assert not fast["v1::a"].mixed
