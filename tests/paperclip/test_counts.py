"""Per-group counts of a Paperclip row stream, read by DuckDB."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from capeval.paperclip.counts import as_frame, group_counts


def write_rows(path: Path, groups: list[tuple[str, str, bool]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps({"caseId": case, "group": group, "grants": "all", "passed": passed})
        for case, group, passed in groups
    ]
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_a_path_with_glob_characters_counts_its_own_rows(tmp_path: Path) -> None:
    # A report folder named `report[2]` made DuckDB read `report2/` instead.
    named = write_rows(
        tmp_path / "report[2]" / "rows.jsonl", [("a", "mine", True), ("b", "mine", False)]
    )
    write_rows(tmp_path / "report2" / "rows.jsonl", [("c", "other", True)])
    assert group_counts(named) == {
        "mine": {"cases": 2, "configurations": 2, "passed": 1, "failed": 1}
    }


def test_an_empty_stream_is_an_empty_frame_with_the_columns(tmp_path: Path) -> None:
    empty = tmp_path / "rows.jsonl"
    empty.write_text("")
    frame = as_frame(empty)
    assert frame.height == 0
    assert frame.schema == pl.Schema(
        {"group": pl.String, "cases": pl.Int64, "configurations": pl.Int64,
         "passed": pl.Int64, "failed": pl.Int64}
    )  # fmt: skip
    assert frame.sort("group").height == 0  # what the notebook does next
