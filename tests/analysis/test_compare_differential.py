"""The gate's DuckDB fast path against the reference reader, on random result files.

`capeval gate` reads cells through DuckDB (`capeval.analysis.fastload`); the
reference path builds every row in Python (`load_sides(..., fast=False)`).
Verdicts compare medians exactly, so the two must agree on every field of
every cell, bit for bit, or the same files could gate differently depending
on which path read them. Files here hold what writers produce (JSONL streams
and v3 documents, compact or pretty, several per side), including the
awkward parts: lost streams, metrics left out, legacy rows without
`taskToolCallCount`, mixed providers, rows carrying baits, fractional
metric values and torn last lines.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capeval.analysis import fastload
from capeval.analysis.compare import compare_cells
from capeval.analysis.fastload import load_sides
from capeval.core.cell import Cell
from capeval.core.metrics import METRIC_NAMES

CASES = ("alpha", "beta", "web-bait")
VARIANTS = ("v1", "fast=prov:m")
# A stream that did not say what it resolved leaves provider or model null.
PAIRS = (("prov", "m"), ("prov", "m"), ("other/x", "big:8b"), ("prov", None), (None, None))

metric_value = st.one_of(
    st.integers(0, 40),
    # Fractional and large values: an even count's median is a mean of two,
    # whose rounding must be the reference's.
    st.sampled_from([0.1, 0.2, 0.3, 0.5, 1.5, 2.675, 1e-7, 123456.789, 9.007199254740993e15]),
    st.floats(0, 1e6, allow_nan=False, allow_infinity=False),
)


@st.composite
def behaviors(draw: st.DrawFn, legacy: bool = True) -> dict[str, Any] | None:
    if draw(st.integers(0, 5)) == 0:
        return None  # a lost stream: no stats, never zeros
    out: dict[str, Any] = {}
    for metric in METRIC_NAMES:
        if draw(st.integers(0, 6)) == 0 and (legacy or metric != "taskToolCallCount"):
            continue  # a metric this writer did not report
        out[metric] = draw(metric_value)
    if legacy and draw(st.booleans()):
        out.pop("taskToolCallCount", None)  # a legacy row: backfilled from toolCallsByName
    out["toolCallsByName"] = draw(
        st.dictionaries(st.sampled_from(["task", "spawn_agent", "read"]), st.integers(0, 3))
    )
    return out


@st.composite
def result_rows(draw: st.DrawFn, legacy: bool = True) -> list[dict[str, Any]]:
    rows = []
    for repeat in range(draw(st.integers(1, 12))):
        case = draw(st.sampled_from(CASES))
        variant = draw(st.sampled_from(VARIANTS))
        provider, model = draw(st.sampled_from(PAIRS))
        row: dict[str, Any] = {
            "resultKey": f"{variant}::{case}",
            "id": case,
            "tier": "bait" if case == "web-bait" else "simple",
            "title": case.title(),
            "variantId": variant,
            "provider": provider,
            "model": model,
            "passed": draw(st.booleans()),
            "durationMs": draw(st.one_of(st.none(), st.integers(0, 10**6))),
            "turnsUsed": draw(st.one_of(st.none(), st.integers(0, 50))),
            "tokenUsage": draw(
                st.one_of(st.none(), st.fixed_dictionaries({"input": st.integers(0, 10**5)}))
            ),
            "repeat": repeat,
            "runStartedAt": "2026-01-01T00:00:00Z",
            "behaviors": draw(behaviors(legacy)),
        }
        if case == "web-bait":
            row["bait"] = {"metric": "networkCommandCount", "threshold": 0}
        rows.append(row)
    return rows


def _write(path: Path, rows: list[dict[str, Any]], fmt: str, torn: bool) -> Path:
    rows = [{**r, "runId": path.stem} for r in rows]  # one run per file, as runs write them
    if fmt == "jsonl":
        text = "".join(json.dumps(r) + "\n" for r in rows)
        if torn:
            text += json.dumps(rows[0])[:-7]  # a crash mid-write: the reference skips it
        elif len(rows) % 2:
            text = text[:-1]  # a complete last row without its newline is still a row
        path.write_text(text)
        return path
    doc = {
        "version": 3,
        "startedAt": "2026-01-01T00:00:00Z",
        "finishedAt": "2026-01-01T00:10:00Z",
        "provider": "prov",
        "model": "m",
        "repeats": 3,
        "variants": [{"id": v} for v in VARIANTS],
        # Stored aggregates are never read: nonsense here must change nothing.
        "aggregates": [{"resultKey": "v1::alpha", "passCount": 99, "repeats": 1}],
        "totals": {},
        "cases": rows,
    }
    path.write_text(json.dumps(doc, indent=2 if fmt == "v3-pretty" else None))
    return path


files = st.tuples(result_rows(), st.sampled_from(["jsonl", "v3", "v3-pretty"]), st.booleans())


# What the gate reads without `headline` (reports only) and `with_values` (statistics only).
_REPORT_ONLY = (
    "tier",
    "title",
    "durationMs",
    "turnsUsed",
    "tokenInput",
    "durationReported",
    "turnsReported",
    "tokenReported",
    "passes",
    "values",
)


def _fields(cell: Cell, *, full: bool) -> dict[str, Any]:
    """Every field, with medians as exact floats (an int 2 and a float 2.0 are one median)."""
    names = [n for n in Cell.__slots__ if full or n not in _REPORT_ONLY]
    out = {name: getattr(cell, name) for name in names}
    out["medians"] = {m: (None if v is None else float(v)) for m, v in cell.medians.items()}
    return out


def _subnormal(sides: list[list[tuple[list[dict[str, Any]], str, bool]]]) -> bool:
    values = [
        v
        for side in sides
        for rows, _, _ in side
        for row in rows
        for v in (row.get("behaviors") or {}).values()
        if isinstance(v, float)
    ]
    return any(0 < abs(v) < sys.float_info.min for v in values)


def test_a_subnormal_metric_gives_its_median_exactly(tmp_path: Path) -> None:
    """Found by the property test below: DuckDB's median of two 5e-324 is 0.0."""
    rows = [
        {"resultKey": "v1::a", "id": "a", "passed": False, "repeat": r,
         "behaviors": {**dict.fromkeys(METRIC_NAMES, 1), "webFetchToolCallCount": 5e-324}}
        for r in range(2)
    ]  # fmt: skip
    path = _write(tmp_path / "r.jsonl", rows, "jsonl", False)
    (cells,), _ = load_sides([[path]])  # DuckDB gives way to the reference reader
    assert cells["v1::a"].medians["webFetchToolCallCount"] == 5e-324


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    sides=st.lists(st.lists(files, min_size=1, max_size=3), min_size=2, max_size=2),
    full=st.booleans(),
)
def test_fast_path_and_reference_reader_give_identical_cells(
    sides: list[list[tuple[list[dict[str, Any]], str, bool]]], full: bool
) -> None:
    """`full`: as `compare` and `report` read (values and headline); else as the gate reads."""
    torn = any(t and fmt == "jsonl" for side in sides for _, fmt, t in side)
    with tempfile.TemporaryDirectory() as tmp:
        paths = [
            [
                _write(Path(tmp) / f"s{s}f{i}.{'jsonl' if fmt == 'jsonl' else 'json'}", *spec)
                for i, spec in enumerate(side)
                for fmt in [spec[1]]
            ]
            for s, side in enumerate(sides)
        ]
        slow, slow_warnings = load_sides(paths, with_values=full, fast=False)
        if torn:
            # A torn line: DuckDB gives way to the reference reader, whose
            # warning names the file and line.
            fast, fast_warnings = load_sides(paths, with_values=full, headline=full, fast=True)
            assert fast_warnings == slow_warnings
            assert any("torn last line" in w for w in fast_warnings)
        elif _subnormal(sides):
            # DuckDB's median loses subnormal values: it gives such files away.
            with pytest.raises(fastload.FastPathUnavailable):
                fastload._load_duckdb(paths, with_values=full, headline=full)
            fast, _ = load_sides(paths, with_values=full, headline=full, fast=True)
        else:
            # Well-formed files must really go through DuckDB: a silent fall
            # back to the reference would make this test compare it with itself.
            fast = fastload._load_duckdb(paths, with_values=full, headline=full)
    assert [list(s) for s in fast] == [list(s) for s in slow]
    for f_side, s_side in zip(fast, slow, strict=True):
        for key, cell in f_side.items():
            assert _fields(cell, full=full) == _fields(s_side[key], full=full), key
    # And therefore the same verdicts and, seeded, the same advisory statistics.
    a = compare_cells(fast[0], fast[1], allow_provider_fallback=True, advisory=full, seed=7)
    b = compare_cells(slow[0], slow[1], allow_provider_fallback=True, advisory=full, seed=7)
    assert a.to_json() == b.to_json()
    assert a.exit_code == b.exit_code
