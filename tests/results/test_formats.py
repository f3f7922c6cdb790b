"""One table of formats answers every question asked of a file's head.

The reference reader, a folder search, the runner's guards and the fast
paths each ask their own question (which reader? a result file at all? some
run's stream or plan?), and must agree on what one head says.
"""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import pytest

from capeval.results import formats
from capeval.results.errors import ResultFileError
from capeval.results.formats import V3Head, read_v3_head

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


def _head_with_number_at(offset: int, number: str) -> bytes:
    """A v3 document whose top-level `repeats` number starts at byte `offset`."""
    prefix = '{"version": 3, "startedAt": "2026-01-01T00:00:00Z", "note": "'
    middle = '", "repeats": '
    pad = offset - len(prefix) - len(middle)
    return (prefix + "x" * pad + middle + number + ', "cases": []}').encode()


def test_a_number_cut_by_a_chunk_boundary_is_read_whole() -> None:
    # The head is read 64 KiB at a time; a number split by that boundary must
    # not decode as its first digits (and the whole head be lost).
    for number in ("12345", "0.25", "-7e3"):
        data = _head_with_number_at(formats.HEAD_CHUNK - 1, number)
        head = read_v3_head(io.BytesIO(data))
        assert head is not None, number
        assert head.fields["repeats"] == json.loads(number)
        assert head.cases_offset == data.index(b"[]")


def _head_of(data: bytes) -> V3Head | None:
    """`read_v3_head`, failed (not hung) when it does not return within a few seconds."""
    out: list[V3Head | None] = []
    worker = threading.Thread(
        target=lambda: out.append(read_v3_head(io.BytesIO(data))), daemon=True
    )
    worker.start()
    worker.join(20)
    assert out, f"read_v3_head did not return for {data[:60]!r}"
    return out[0]


def test_a_head_is_read_as_json_reads_it() -> None:
    # CRLF and tabs (a file saved on Windows), non-ASCII values, a value
    # longer than a read chunk: the fields the reference reader sees, and
    # `cases_offset` at the `[`.
    long = "é" * (formats.HEAD_CHUNK // 2 + 10)
    text = (
        '{\r\n\t"version": 3,\r\n\t"provider": "zé",\r\n\t"note": "'
        + long
        + '",\r\n\t"cases" :\t[\r\n]}'
    )
    data = text.encode()
    head = _head_of(data)
    assert head is not None
    assert head.fields == {"version": 3, "provider": "zé", "note": long}
    assert head.cases_offset == data.index(b"[")


@pytest.mark.parametrize(
    "text",
    [
        '{"version": 3, "startedAt": "x", ',  # truncated before `cases`
        '{"version": 3, "cases',
        '{"version": 3, "cases": {"a": 1}}',  # not an array
        '{"version": 3} "cases": []}',
        '{"version" 3, "cases": []}',
        '{"version": 3 "cases": []}',
        '[{"version": 3, "cases": []}]',
        '["version": 3, "cases": []]',
        '{"version": 3, "cases" [[]]}',
        '{"id": "a", "passed": true}',  # a row of a stream
    ],
)
def test_a_head_that_is_not_a_v3_documents_is_none(text: str) -> None:
    # The reference reader refuses these (or reads no v3 document): the fast
    # path must not read them as one.
    assert _head_of(text.encode()) is None
