"""One table of formats answers every question asked of a file's head.

The reference reader, a folder search, the runner's guards and the fast
paths each ask their own question (which reader? a result file at all? some
run's stream or plan?), and must agree on what one head says.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from capeval.results import formats
from capeval.results.errors import ResultFileError

ROW = {"resultKey": "v::a", "id": "a", "variantId": "v", "passed": True}
V3 = {"version": 3, "startedAt": "2026-01-01T00:00:00Z", "cases": [ROW]}
PLAN = {"runId": "r1", "repeats": 3, "cases": None}

# name -> (text, suffix, reader's format, folder search's, holds rows, is a plan)
HEADS: dict[str, tuple[str, str, str, str | None, bool, bool]] = {
    "row stream": (json.dumps(ROW) + "\n", ".jsonl", "jsonl", "jsonl", True, False),
    "stream named .json": (json.dumps(ROW) + "\n", ".json", "jsonl", "jsonl", True, False),
    "row with a version field": (
        json.dumps({**ROW, "version": 2}) + "\n",
        ".jsonl",
        "jsonl",
        "jsonl",
        True,
        False,
    ),
    "compact v3": (json.dumps(V3), ".json", "v3", "v3", False, False),
    "pretty v3 named .jsonl": (json.dumps(V3, indent=2), ".jsonl", "v3", "v3", False, False),
    "v3 of another version": (json.dumps({**V3, "version": 2}), ".json", "v3", "v3", False, False),
    "v3 without a version": (json.dumps({"cases": [ROW]}), ".json", "v3", None, False, False),
    "a plan": (json.dumps(PLAN, indent=2), ".plan.json", "v3", None, False, True),
    "a JSON report": (json.dumps({"title": "x"}, indent=2), ".json", "v3", None, False, False),
    "an array": ("[1, 2]", ".json", "v3", None, False, False),
    "damaged first row": (
        "{oops\n" + json.dumps(ROW) + "\n",
        ".jsonl",
        "jsonl",
        "jsonl",
        False,
        False,
    ),
    "empty stream": ("", ".jsonl", "jsonl", "jsonl", False, False),
}


@pytest.mark.parametrize("name", sorted(HEADS))
def test_each_question_gets_its_answer_from_the_same_head(tmp_path: Path, name: str) -> None:
    text, suffix, reader, folder, rows, plan = HEADS[name]
    path = tmp_path / f"f{suffix}"
    path.write_text(text)
    assert formats.format_of(path) == reader
    assert formats.result_format(path) == folder
    assert formats.holds_rows(path) is rows
    assert formats.is_plan(path) is plan


def test_an_empty_json_file_is_refused_by_the_reader_and_skipped_by_a_search(
    tmp_path: Path,
) -> None:
    path = tmp_path / "empty.json"
    path.write_text("  \n")
    with pytest.raises(ResultFileError, match="file is empty"):
        formats.format_of(path)
    assert formats.result_format(path) is None


def test_every_format_has_an_entry_and_the_result_suffixes_are_theirs() -> None:
    assert set(formats.FORMATS) == {"jsonl", "v3", "plan"}
    assert formats.RESULT_SUFFIXES == (".jsonl", ".ndjson", ".json")


@pytest.mark.parametrize(
    "data, want",
    [
        (b"", (0, False)),
        (b'{"a": 1}\n', (9, False)),
        (b'{"a": 1}\n{"a": 2}', (17, False)),  # a whole row missing its newline
        (b'{"a": 1}\n{"a": ', (9, True)),  # torn by a crash mid-write
        (b'{"a": ', (0, True)),
    ],
)
def test_rows_end_where_the_last_complete_row_ends(data: bytes, want: tuple[int, bool]) -> None:
    assert formats.rows_end(io.BytesIO(data), len(data)) == want


def test_a_member_written_twice_before_cases_is_marked() -> None:
    once = formats.read_v3_head(io.BytesIO(b'{"version": 3, "cases": []}'))
    twice = formats.read_v3_head(io.BytesIO(b'{"version": 3, "version": 3, "cases": []}'))
    assert once is not None and not once.repeated
    assert twice is not None and twice.repeated


def test_a_v3_document_on_one_line_is_told_by_its_head_not_parsed_whole() -> None:
    # The gate's probe read a 250 MB compact v3 file whole to parse its "first line".
    rows = ",".join(json.dumps(ROW) for _ in range(3000))
    data = ('{"version": 3, "startedAt": null, "cases": [' + rows + "]}").encode()
    assert len(data) > 2 * formats.HEAD_CHUNK
    head = formats.read_head(io.BytesIO(data))
    assert len(head) == formats.HEAD_CHUNK
    assert formats.parse_first_line(head)[0] is False  # no row: the v3 head walk decides


def test_a_stream_whose_first_row_is_long_is_still_read_as_rows(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({**ROW, "error": "x" * (2 * formats.HEAD_CHUNK)}) + "\n")
    assert formats.result_format(path) == "jsonl" and formats.holds_rows(path)
