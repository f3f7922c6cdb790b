"""Cases' recent durations from history (capeval.analysis.durations), which weigh shards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capeval.analysis.durations import recent_durations
from capeval.results.errors import ResultFileError
from tests.rowfactory import result_row


def _stream(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_latest_repeats_of_each_case_by_run_start(tmp_path: Path) -> None:
    old = _stream(
        tmp_path / "old.jsonl",
        [
            result_row("a", r, runId="old", runStartedAt="2026-01-01T00:00:00Z", durationMs=d)
            for r, d in enumerate([100, 200, 300])
        ],
    )
    new = _stream(
        tmp_path / "new.jsonl",
        [
            result_row("a", 0, runId="new", runStartedAt="2026-02-01T00:00:00Z", durationMs=900),
            result_row("b", 0, runId="new", runStartedAt="2026-02-01T00:00:00Z", durationMs=50),
            result_row("b", 1, runId="new", runStartedAt="2026-02-01T00:00:00Z", durationMs=None),
        ],
    )
    found = recent_durations([old, new], recent=2)
    assert found["a"][0] == 900.0 and len(found["a"]) == 2  # the newest run first
    assert found["b"] == [50.0]  # a repeat with no duration does not count


def test_no_rows_no_durations_and_a_non_result_file_is_an_error(tmp_path: Path) -> None:
    assert recent_durations([_stream(tmp_path / "empty.jsonl", [])]) == {}
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(ResultFileError):
        recent_durations([bad])
