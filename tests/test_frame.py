"""Result rows as a polars frame: one row per repeat, a schema that does not drift."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from capeval.analysis.frame import FIXED_COLUMNS, FrameError, load_frame, rows_to_frame
from capeval.metrics import METRIC_NAMES
from capeval.results.jsonl import JsonlWriter
from capeval.results.v3 import write_v3


def make_row(case: str = "c", repeat: int = 0, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "resultKey": f"v::{case}",
        "id": case,
        "variantId": "v",
        "passed": True,
        "repeat": repeat,
        "durationMs": 1200,
        "tokenUsage": {"input": 10, "output": 2, "cacheRead": 3, "cacheWrite": 4, "thinking": 5},
        "behaviors": {
            "shellCommandCount": 2,
            "maxTurnDurationMs": 900,
            "taskToolCallCount": 1,
            "toolCallsByName": {"run_shell": 2},
        },
    }
    row.update(extra)
    return row


def test_one_frame_row_per_repeat_with_flattened_fields() -> None:
    frame = rows_to_frame([make_row(repeat=0), make_row(repeat=1, passed=False)], source="x.jsonl")
    assert frame.height == 2
    first = frame.row(0, named=True)
    assert first["shellCommandCount"] == 2
    assert first["maxTurnDurationMs"] == 900.0
    assert (first["tokenInput"], first["tokenOutput"], first["tokenCacheRead"]) == (10, 2, 3)
    assert (first["tokenCacheWrite"], first["tokenThinking"]) == (4, 5)
    assert json.loads(first["toolCallsByName"]) == {"run_shell": 2}
    assert first["source"] == "x.jsonl"
    assert frame["passed"].to_list() == [True, False]
    assert "behaviors" not in frame.columns and "tokenUsage" not in frame.columns


def test_null_behaviors_give_null_metrics_not_zeros() -> None:
    frame = rows_to_frame([make_row(behaviors=None, tokenUsage=None)])
    row = frame.row(0, named=True)
    assert row["behaviorsCaptured"] is False
    assert all(row[m] is None for m in METRIC_NAMES)
    assert row["tokenInput"] is None


def test_schema_is_the_same_whatever_fields_rows_carry() -> None:
    sparse = rows_to_frame([{"id": "a", "variantId": "v", "passed": True}])
    full = rows_to_frame(
        [make_row(runId="r1", bait={"metric": "networkCommandCount", "threshold": 0})]
    )
    assert sparse.schema == full.schema
    assert list(sparse.columns) == list(FIXED_COLUMNS)
    assert sparse["runId"].dtype == pl.String and sparse["runId"][0] is None
    assert full["runId"][0] == "r1"
    assert (full["baitMetric"][0], full["baitThreshold"][0]) == ("networkCommandCount", 0.0)
    assert pl.concat([sparse, full]).height == 2


def test_unknown_fields_become_extra_columns() -> None:
    frame = rows_to_frame(
        [make_row(score=1, label="x", meta={"k": 1}), make_row(score=2.5, label=None)]
    )
    assert frame["score"].dtype == pl.Float64 and frame["score"].to_list() == [1.0, 2.5]
    assert frame["label"].to_list() == ["x", None]
    assert json.loads(frame["meta"][0]) == {"k": 1}


def test_wrong_type_in_known_column_names_source_and_field() -> None:
    with pytest.raises(FrameError, match=r"f\.jsonl \(row 1, case 'b'\): field 'turnsUsed'"):
        rows_to_frame(
            [make_row("a", turnsUsed=3), make_row("b", turnsUsed="many")], source="f.jsonl"
        )


def test_integral_floats_fit_integer_columns() -> None:
    frame = rows_to_frame([make_row(turnsUsed=3.0)])
    assert frame["turnsUsed"].dtype == pl.Int64 and frame["turnsUsed"][0] == 3


def test_load_frame_mixes_formats_and_records_source(tmp_path: Path) -> None:
    jsonl = tmp_path / "new.jsonl"
    with JsonlWriter(jsonl) as writer:
        writer.write(make_row("a", runId="run-1", agent="scripted"))
    v3 = tmp_path / "old.json"
    old = make_row("b")
    old["behaviors"] = {"shellCommandCount": 1, "toolCallsByName": {"task": 3}}
    write_v3(v3, [old], started_at=None, finished_at=None)
    frame = load_frame([jsonl, v3])
    assert frame["source"].to_list() == [str(jsonl), str(v3)]
    assert frame["runId"].to_list() == ["run-1", None]
    assert frame["agent"].to_list() == ["scripted", None]
    # The older v3 row is backfilled on load.
    assert frame["taskToolCallCount"].to_list() == [1, 3]


def test_load_frame_accepts_one_path(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    with JsonlWriter(path) as writer:
        writer.write(make_row())
    assert load_frame(path).height == 1
