"""Rules of the result readers that no other test would see broken.

Each test here was written against a deliberate one-line break of the code
(a mutation) that the rest of the suite let through; it pins the rule the
break would have violated.
"""

from __future__ import annotations

import io
import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from capeval.core.metrics import METRIC_NAMES, NUMERIC_METRICS
from capeval.core.row import result_key, triple
from capeval.results import formats
from capeval.results.errors import ResultFileError, ResultFileWarning
from capeval.results.formats import V3Head, read_v3_head, v3_header
from capeval.results.jsonl import JsonlWriter, torn_sidecar
from capeval.results.load import read_rows
from capeval.results.overlap import same_run_warnings
from capeval.results.provenance import mixed_writer_warnings, written_by_capeval
from capeval.results.v3 import write_v3
from tests.rowfactory import result_row


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


def test_a_copy_is_told_when_its_header_spans_chunks(tmp_path: Path) -> None:
    data = _head_with_number_at(formats.HEAD_CHUNK - 2, "321")
    run, copy = tmp_path / "a.json", tmp_path / "copy-of-a.json"
    run.write_bytes(data)
    copy.write_bytes(data)
    assert v3_header(run) is not None
    found = same_run_warnings([run, copy])
    assert len(found) == 1 and "started at 2026-01-01T00:00:00Z" in found[0]


def _stream(tmp_path: Path, bad: dict[str, Any] | str) -> Path:
    """A row stream whose second line is `bad` (a row, or raw text)."""
    path = tmp_path / "rows.jsonl"
    line = bad if isinstance(bad, str) else json.dumps(bad)
    path.write_text(
        json.dumps(result_row("ok")) + "\n" + line + "\n" + json.dumps(result_row("z")) + "\n"
    )
    return path


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (result_row(""), "id"),
        (result_row("a", passed=1), "passed"),  # type: ignore[arg-type]
        (result_row("a", repeat=True), "repeat"),  # type: ignore[arg-type]
        (result_row("a", behaviors=[1, 2]), "behaviors"),
        (result_row("a", tokenUsage=[1, 2]), "tokenUsage"),
        (result_row("a", behaviors={"networkCommandCount": True}), "behaviors.networkCommandCount"),
        (
            '{"id": "a", "variantId": "v", "passed": true, "behaviors": {"maxTurnDurationMs": NaN}}',
            "behaviors.maxTurnDurationMs",
        ),
        (
            '{"id": "a", "variantId": "v", "passed": true, "behaviors": {"longestToolOnlyStreak": '
            "-Infinity}}",
            "behaviors.longestToolOnlyStreak",
        ),
        (
            '{"id": "a", "variantId": "v", "passed": true, "behaviors": {"chainSegmentCount": 1'
            + "0" * 400
            + "}}",
            "behaviors.chainSegmentCount",
        ),
    ]
    + [
        (result_row("a", behaviors={metric: "1"}), f"behaviors.{metric}")
        for metric in NUMERIC_METRICS
    ],
)
def test_a_row_aggregates_cannot_trust_is_refused_naming_line_and_field(
    tmp_path: Path, bad: dict[str, Any] | str, field: str
) -> None:
    # Python would count `true` as 1 and a NaN would poison every median:
    # such a row must stop the read, naming where it is and what to fix.
    path = _stream(tmp_path, bad)
    with pytest.raises(ResultFileError, match=rf"rows\.jsonl:2: field '{re.escape(field)}' must"):
        read_rows(path)


def test_a_row_with_only_a_result_key_is_a_row(tmp_path: Path) -> None:
    # The harness's rows always carry both, but either names the cell.
    row = result_row("a")
    del row["variantId"]
    assert read_rows(_stream(tmp_path, row))[1]["resultKey"] == "v::a"


def test_a_second_crash_adds_its_torn_line_to_the_first(tmp_path: Path) -> None:
    # Two crashes, two resumes: the sidecar keeps both torn lines, never only the last.
    path = tmp_path / "run.jsonl"
    torn = [json.dumps(result_row("c", 2)).encode()[:30], json.dumps(result_row("d")).encode()[:9]]
    for index, tail in enumerate(torn):
        with open(path, "ab") as handle:
            handle.write(tail)
        with pytest.warns(ResultFileWarning, match="torn last line"), JsonlWriter(path) as w:
            w.write(result_row("ok", index))
    assert torn_sidecar(path).read_bytes() == torn[0] + b"\n" + torn[1] + b"\n"
    assert [r["repeat"] for r in read_rows(path)] == [0, 1]


def test_a_torn_line_as_long_as_a_read_chunk_costs_no_complete_row(tmp_path: Path) -> None:
    # The writer looks for the last newline a chunk at a time from the end; a
    # newline that is the first byte of a chunk is still the last one.
    path = tmp_path / "run.jsonl"
    for length in (formats.HEAD_CHUNK - 1, formats.HEAD_CHUNK, formats.HEAD_CHUNK + 1):
        path.write_bytes(json.dumps(result_row("a")).encode() + b"\n" + b"{" + b"x" * (length - 1))
        torn_sidecar(path).unlink(missing_ok=True)
        with pytest.warns(ResultFileWarning, match=r"run\.jsonl:2: torn last line"):
            JsonlWriter(path).close()
        assert [r["id"] for r in read_rows(path)] == ["a"], length
        assert len(torn_sidecar(path).read_bytes()) == length + 1


def _many_cell_run(tmp_path: Path, cells: int) -> tuple[Path, Path]:
    """A run of `cells` cells written by capeval: (its row stream, its v3 export)."""
    rows = [
        result_row(
            f"case-{i:03d}",
            behaviors=dict.fromkeys(METRIC_NAMES, 1),
            runId="run-1",
            capevalVersion="0.1.0",
        )
        for i in range(cells)
    ]
    stream, export = tmp_path / f"run{cells}.jsonl", tmp_path / f"run{cells}.json"
    with JsonlWriter(stream) as writer:
        for row in rows:
            writer.write(row)
    write_v3(export, rows, started_at="2026-01-01T00:00:00Z", finished_at=None)
    return stream, export


@pytest.mark.parametrize("cells", [3, 150])
def test_a_v3_export_beside_its_stream_is_told_however_many_cells(
    tmp_path: Path, cells: int
) -> None:
    # capeval's v3 export stores one aggregate per cell before `cases`: with
    # many cells its first rows (and their run id) lie past the first 64 KiB.
    stream, export = _many_cell_run(tmp_path, cells)
    assert export.read_bytes().index(b'"cases"') > (1 << 16) or cells < 100
    assert same_run_warnings([stream, export]) == [
        f"{export} and {stream} both hold run run-1; its repeats are counted twice: pass one "
        "file per run (its .jsonl or its v3 export)"
    ]


@pytest.mark.parametrize("cells", [3, 150])
def test_capevals_own_v3_export_is_known_as_capevals(
    tmp_path: Path, real_results: Path, cells: int
) -> None:
    stream, export = _many_cell_run(tmp_path, cells)
    assert written_by_capeval(export) and written_by_capeval(stream)
    assert mixed_writer_warnings([export], [stream]) == []
    harness = real_results / "baseline-0286.json"
    assert not written_by_capeval(harness)
    (found,) = mixed_writer_warnings([harness], [export])
    assert (
        found.startswith("the baseline was not written by capeval") and "the candidate was" in found
    )
    (found,) = mixed_writer_warnings([stream], [harness])
    assert (
        found.startswith("the candidate was not written by capeval") and "the baseline was" in found
    )


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


def test_a_concatenation_of_one_line_v3_files_is_refused(tmp_path: Path) -> None:
    # Reading only the first document would drop every row of the others.
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    write_v3(one, [result_row("a")], started_at="s1", finished_at=None)
    write_v3(two, [result_row("b")], started_at="s2", finished_at=None)
    both = tmp_path / "both.json"
    compact = [json.dumps(json.loads(p.read_bytes())) for p in (one, two)]
    both.write_text("\n".join(compact) + "\n")
    with pytest.raises(
        ResultFileError, match=r"both\.json: not valid JSON at line 2 column 1: Extra data"
    ):
        read_rows(both)


def test_rows_without_a_repeat_field_are_not_duplicates(tmp_path: Path) -> None:
    rows = [result_row("a"), result_row("a")]
    for row in rows:
        del row["repeat"]
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    found: list[str] = []
    assert len(read_rows(path, on_warning=found.append)) == 2
    assert found == []


def test_files_with_an_empty_started_at_are_not_taken_for_copies(tmp_path: Path) -> None:
    # An empty header `startedAt` tells no run apart: two such files are two runs.
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    write_v3(one, [result_row("a")], started_at="", finished_at=None)
    write_v3(two, [result_row("b")], started_at="", finished_at=None)
    assert same_run_warnings([one, two]) == []


def test_result_key_and_repeat_identity() -> None:
    # `resultKey` is `variantId::caseId` (spec section 7); a row that names
    # no repeat is repeat 0, the first (repeats are 0-based).
    assert result_key("default:default", "simple-health") == "default:default::simple-health"
    row = result_row("a", variant="v2")
    del row["repeat"]
    assert triple(row) == ("v2", "a", 0)
    assert triple(result_row("a", 3, variant="v2")) == ("v2", "a", 3)


def test_a_failed_v3_write_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    (target / "inside").mkdir(parents=True)  # the rename onto it fails
    with pytest.raises(OSError):
        write_v3(target, [result_row("a")], started_at=None, finished_at=None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
