"""Cell aggregation rules a mutation audit found no test for.

The gate's DuckDB path (`capeval.analysis.fastload`) must send every row the
reference reader refuses back to that reader, and must call a cell mixed
exactly when the reference does; otherwise the same files gate differently
depending on which reader ran.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from capeval.analysis import fastload
from capeval.analysis.fastload import load_sides
from capeval.results.errors import ResultFileError
from tests.rowfactory import gate_row


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


# -- numbers as tables and JSON print them -----------------------------------------


def test_table_numbers_drop_float_noise_but_keep_every_real_digit() -> None:
    from capeval.analysis.cells import format_value

    assert format_value((27.9 + 28.3) / 2) == "28.1"
    assert format_value(123456.789) == "123456.789"
    assert format_value(1234567.25) == "1234567.25"
    assert format_value(None) == "null"


def test_an_integral_threshold_is_written_as_an_integer() -> None:
    from capeval.analysis.cells import BaitDecl

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
    from capeval.analysis.cells import Cell, cell_frame

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
