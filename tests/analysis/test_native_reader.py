"""The native JSON Lines reader (capeval/analysis/native/jsonl_cells.cpp) against the reference.

It is the gate's first reader on JSON Lines files, so it must give the
reference reader's cells bit for bit, whatever the cut of the files into
chunks and threads, and refuse (for the DuckDB reader, then the reference
one, to take the files) every line it does not judge exactly. The module is
compiled on install by hatch_build.py; without a compiler these tests skip
with that reason, except under CAPEVAL_REQUIRE_NATIVE=1 (CI), where a build
that stopped producing the module fails.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capeval.analysis import fastload
from capeval.analysis.fastload import FastPathUnavailable, load_sides
from capeval.analysis.native_reader import native_reader
from capeval.core.metrics import METRIC_NAMES
from tests.analysis.test_compare_differential import _fields, _write, result_rows

REAL = Path(__file__).resolve().parents[2] / "evals" / "capability" / "samples"


@pytest.fixture(autouse=True)
def _native_built() -> None:
    if native_reader() is not None:
        return
    if os.environ.get("CAPEVAL_REQUIRE_NATIVE") == "1":
        pytest.fail("the native reader was not built (see the install's hatch_build.py warning)")
    pytest.skip("the native reader is not built here (no C++ compiler)")


def _row(case: str = "alpha", repeat: int = 0, **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "resultKey": f"v1::{case}",
        "id": case,
        "variantId": "v1",
        "provider": "prov",
        "model": "m",
        "passed": repeat % 2 == 0,
        "repeat": repeat,
        "tokenUsage": {"input": 10},
        "behaviors": {m: repeat for m in METRIC_NAMES},
    }
    row.update(fields)
    return row


def _lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _same_as_reference(paths: list[list[Path]], **native: Any) -> None:
    for full in (False, True):
        fast = fastload._load_native(paths, with_values=full, headline=full, **native)
        slow, _ = load_sides(paths, with_values=full, fast=False)
        assert [list(s) for s in fast] == [list(s) for s in slow]
        for f_side, s_side in zip(fast, slow, strict=True):
            for key, cell in f_side.items():
                assert _fields(cell, full=full) == _fields(s_side[key], full=full), key


def test_ci_builds_the_native_reader() -> None:
    # Reached only when it is built (the fixture fails or skips otherwise).
    assert callable(native_reader().scan)  # type: ignore[union-attr]


def test_the_gate_reads_jsonl_natively_and_the_switch_turns_it_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _lines(tmp_path / "r.jsonl", [json.dumps(_row(repeat=r)) for r in range(3)])
    calls: list[str] = []
    real = fastload._load_native

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append("native")
        return real(*args, **kwargs)

    monkeypatch.setattr(fastload, "_load_native", spy)
    fast, _ = load_sides([[path], [path]])
    assert calls == ["native"] and fast[0]["v1::alpha"].repeats == 3
    monkeypatch.setenv("CAPEVAL_NATIVE", "0")
    with pytest.raises(FastPathUnavailable, match="not built"):
        real([[path]], with_values=False, headline=False)


def test_the_runners_sample_runs_read_as_the_reference_reads_them() -> None:
    samples = sorted(REAL.glob("*.jsonl"))
    assert samples, f"no sample runs in {REAL}"
    for sample in samples:
        _same_as_reference([[sample], [sample]])


@pytest.mark.parametrize("threads, chunk_bytes", [(1, 0), (3, 1), (2, 7), (3, 100), (4, 1000)])
def test_every_cut_into_chunks_gives_the_same_cells(
    tmp_path: Path, threads: int, chunk_bytes: int
) -> None:
    # Chunks of 1 byte: every line starts in one chunk and ends in others, and
    # a chunk may start right after a newline, on one, or inside a blank line.
    # Tiers and titles differ by repeat: a cell's are its first row's, across chunks too.
    rows = [
        _row(case, r, passed=(r * 7 + len(case)) % 3 == 0, tier=f"t{r}", title=f"T{r}")
        for case in ("a", "bb")
        for r in range(9)
    ]
    lines = [json.dumps(r) for r in rows]
    lines.insert(4, "   ")  # blank lines are skipped, as the reference skips them
    lines.insert(9, "")
    path = _lines(tmp_path / "r.jsonl", lines)
    other = tmp_path / "o.jsonl"
    # CRLF line ends, and no newline after the last line.
    other.write_text("".join(line + "\r\n" for line in lines[:5]) + lines[5])
    _same_as_reference([[path, other], [other]], threads=threads, chunk_bytes=chunk_bytes)


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sides=st.lists(
        st.lists(result_rows(legacy=False), min_size=1, max_size=3), min_size=2, max_size=2
    ),
    threads=st.integers(1, 4),
    chunk_bytes=st.sampled_from([0, 1, 13, 200, 4096]),
)
def test_native_and_reference_give_identical_cells_on_random_files(
    sides: list[list[list[dict[str, Any]]]], threads: int, chunk_bytes: int
) -> None:
    """Rows as writers produce them (the legacy ones are the DuckDB reader's)."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = [
            [
                _write(Path(tmp) / f"s{s}f{i}.jsonl", rows, "jsonl", False)
                for i, rows in enumerate(side)
            ]
            for s, side in enumerate(sides)
        ]
        _same_as_reference(paths, threads=threads, chunk_bytes=chunk_bytes)


def _bad(**fields: Any) -> str:
    return json.dumps({**_row(repeat=1), **fields})


REFUSED = {
    "not JSON": '{"resultKey": "v1::alpha", "id": ',
    "not an object": "[1, 2]",
    "two values on a line": _bad() + " " + _bad(),
    "trailing comma": _bad()[:-1] + ",}",
    "NaN literal": _bad().replace('"repeat": 1', '"repeat": 1, "x": NaN'),
    "duplicate passed": _bad().replace('"passed": false', '"passed": false, "passed": true'),
    "duplicate metric": _bad().replace(
        '"shellCommandCount": 1', '"shellCommandCount": 1, "shellCommandCount": 9'
    ),
    "numeric string metric": _bad(
        behaviors={**{m: 1 for m in METRIC_NAMES}, "shellCommandCount": "5"}
    ),
    "boolean metric": _bad(behaviors={**{m: 1 for m in METRIC_NAMES}, "shellCommandCount": True}),
    "huge metric": _bad(behaviors={**{m: 1 for m in METRIC_NAMES}, "shellCommandCount": 2**60}),
    "metric past a double": _bad().replace('"shellCommandCount": 1', '"shellCommandCount": 1e400'),
    "legacy row": _bad(behaviors={m: 1 for m in METRIC_NAMES if m != "taskToolCallCount"}),
    "passed 1": _bad(passed=1),
    "passed null": _bad(passed=None),
    "no resultKey": json.dumps({k: v for k, v in _row(repeat=1).items() if k != "resultKey"}),
    "empty id": _bad(id=""),
    "numeric id": _bad(id=7),
    "numeric provider": _bad(provider=3),
    "behaviors a list": _bad(behaviors=[1]),
    "tokenUsage a string": _bad(tokenUsage="10"),
    "fractional repeat": _bad(repeat=1.5),
    "another id in the cell": _bad(id="beta"),
    "another bait in the cell": _bad(bait={"metric": "networkCommandCount", "threshold": 1}),
    "invalid UTF-8": _bad(title="caf\u00e9").replace("\\u00e9", "\udce9"),
    "lone surrogate in a title": _bad(title="\ud800"),
    "lone surrogate in a key": _bad(resultKey="v1::\ud800", id="\ud800"),
}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_odd_lines_are_refused_and_the_other_readers_judge_them(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = [
        json.dumps(_row(repeat=r, bait={"metric": "networkCommandCount", "threshold": 0}))
        for r in (0, 2)
    ]
    text = "\n".join([good[0], REFUSED[kind], good[1]]) + "\n"
    path = tmp_path / "r.jsonl"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(FastPathUnavailable):
        fastload._load_native([[path]], with_values=False, headline=True, chunk_bytes=64, threads=2)
    # The refusal changes nothing: the gate says what it said without the native reader.
    assert _outcome(path, monkeypatch) == _outcome(path, monkeypatch, native="0")


def _outcome(path: Path, monkeypatch: pytest.MonkeyPatch, native: str = "1") -> Any:
    monkeypatch.setenv("CAPEVAL_NATIVE", native)
    try:
        sides, warnings = load_sides([[path]], with_values=True)
    except Exception as exc:
        return type(exc).__name__, str(exc)
    return [{k: _fields(c, full=True) for k, c in s.items()} for s in sides], warnings


metric_values = st.one_of(
    st.lists(st.integers(-20, 20), min_size=64, max_size=200),  # counted
    st.lists(st.integers(0, 5000), min_size=64, max_size=200),  # counted or selected by spread
    st.lists(st.integers(0, 3), min_size=1, max_size=63),  # too few to count
    st.lists(
        st.one_of(st.integers(-5, 5), st.floats(-10, 10, allow_nan=False), st.none()),
        min_size=64,
        max_size=150,
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=metric_values, threads=st.integers(1, 3), chunk_bytes=st.sampled_from([0, 300]))
def test_medians_of_many_repeats_are_the_reference_medians(
    values: list[float | None], threads: int, chunk_bytes: int
) -> None:
    """Small integral counts are counted rather than selected: both give the reference median."""
    rows = [
        _row(repeat=r, behaviors={**{m: 1 for m in METRIC_NAMES}, "shellCommandCount": v})
        for r, v in enumerate(values)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = _lines(Path(tmp) / "r.jsonl", [json.dumps(r) for r in rows])
        _same_as_reference([[path]], threads=threads, chunk_bytes=chunk_bytes)
        (cells,) = fastload._load_native([[path]], with_values=False, headline=False)
    numbers = sorted(v for v in values if v is not None)
    if numbers:
        mid = len(numbers) // 2
        want = numbers[mid] if len(numbers) % 2 else (numbers[mid - 1] + numbers[mid]) / 2
        assert cells["v1::alpha"].medians["shellCommandCount"] == want
