"""The JSON Lines row stream: durable appends, torn-line handling, lossless rows."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capeval.core.row import ROW_FIELDS
from capeval.results import formats
from capeval.results.errors import ResultFileError, ResultFileWarning
from capeval.results.jsonl import JsonlWriter, StreamBusy, read_jsonl, torn_sidecar
from capeval.results.load import read_rows
from tests.rowfactory import result_row


def make_row(case: str = "c1", repeat: int = 0, **extra: Any) -> dict[str, Any]:
    return result_row(case, repeat, **{"behaviors": None, **extra})


def test_rows_round_trip_with_unknown_fields(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    rows = [
        make_row("a", 0, futureField={"nested": [1, 2.5, None]}, textPreview="é\nline"),
        make_row("b", 1, passed=False, behaviors={"shellCommandCount": 2, "newMetric": 7}),
    ]
    with JsonlWriter(path) as writer:
        for row in rows:
            writer.write(row)
    back, warnings = read_jsonl(path)
    assert back == rows
    assert warnings == []
    assert path.read_bytes().count(b"\n") == 2


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
# Unknown fields only: the row contract's own fields are checked on read.
@given(extras=st.dictionaries(st.text().filter(lambda k: k not in ROW_FIELDS), json_values))
def test_round_trip_property(tmp_path: Path, extras: dict[str, Any]) -> None:
    path = tmp_path / "prop.jsonl"
    path.unlink(missing_ok=True)
    # Added to the row, not passed to `make_row`: a key `case` or `variant`
    # would become its id or variant (an id of 0 is rightly refused on read).
    row = {**make_row(), **extras}
    with JsonlWriter(path) as writer:
        writer.write(row)
    assert read_jsonl(path) == ([row], [])


def test_each_write_is_visible_before_close(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    writer = JsonlWriter(path)
    writer.write(make_row("a"))
    # A second reader (as a crash-surviving process would) already sees it.
    assert read_jsonl(path)[0] == [make_row("a")]
    writer.close()


def test_each_write_is_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A spy, because power loss cannot be simulated in a test: it only checks
    # that fsync is called on the stream for every row.
    calls: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real_fsync(fd))[1])
    with JsonlWriter(tmp_path / "s.jsonl") as writer:
        writer.write(make_row("a"))
        writer.write(make_row("b"))
    assert len(calls) == 2


def test_one_writer_shared_by_threads_keeps_every_line_whole(tmp_path: Path) -> None:
    path = tmp_path / "threads.jsonl"
    big = "x" * 20_000  # larger than a pipe buffer, so interleaving would show

    with JsonlWriter(path) as writer:

        def work(t: int) -> None:
            for i in range(25):
                writer.write(make_row(f"t{t}", i, textPreview=big))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    rows, warnings = read_jsonl(path)
    assert warnings == []
    assert sorted((r["id"], r["repeat"]) for r in rows) == sorted(
        (f"t{t}", i) for t in range(6) for i in range(25)
    )


def test_a_second_writer_is_refused_until_the_first_closes(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    first = JsonlWriter(path)
    first.write(result_row(id="a"))
    with pytest.raises(StreamBusy, match=r"rows\.jsonl: is being written by another capeval run"):
        JsonlWriter(path)
    first.close()
    with JsonlWriter(path) as second:  # free again once closed
        second.write(result_row(id="b"))
    assert [r["id"] for r in read_jsonl(path)[0]] == ["a", "b"]


def test_reopening_appends(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with JsonlWriter(path) as writer:
        writer.write(make_row("a"))
    with JsonlWriter(path) as writer:
        writer.write(make_row("b"))
    assert [r["id"] for r in read_jsonl(path)[0]] == ["a", "b"]


def write_torn(path: Path) -> bytes:
    with JsonlWriter(path) as writer:
        writer.write(make_row("a"))
        writer.write(make_row("b"))
    torn = json.dumps(make_row("c")).encode()[:25]
    with open(path, "ab") as handle:
        handle.write(torn)
    return torn


def test_reader_skips_torn_last_line_with_warning(tmp_path: Path) -> None:
    path = tmp_path / "torn.jsonl"
    write_torn(path)
    rows, warnings = read_jsonl(path)
    assert [r["id"] for r in rows] == ["a", "b"]
    assert len(warnings) == 1
    assert "torn.jsonl:3" in warnings[0] and "torn" in warnings[0]


def test_reader_skips_torn_multibyte_tail(tmp_path: Path) -> None:
    path = tmp_path / "utf8.jsonl"
    with JsonlWriter(path) as writer:
        writer.write(make_row("a"))
    with open(path, "ab") as handle:
        handle.write('{"id": "é'.encode()[:-1])  # cut inside a UTF-8 sequence
    rows, warnings = read_jsonl(path)
    assert [r["id"] for r in rows] == ["a"] and len(warnings) == 1


def test_writer_after_torn_line_sets_it_aside(tmp_path: Path) -> None:
    path = tmp_path / "resume.jsonl"
    torn = write_torn(path)
    with pytest.warns(ResultFileWarning, match="torn last line"):
        writer = JsonlWriter(path)
    with writer:
        writer.write(make_row("d"))
    rows, warnings = read_jsonl(path)
    assert [r["id"] for r in rows] == ["a", "b", "d"]
    assert warnings == []
    # The torn bytes are kept, not destroyed.
    assert torn_sidecar(path).read_bytes() == torn + b"\n"
    assert writer.warnings and "resume.jsonl:3" in writer.warnings[0]


def test_writer_keeps_complete_last_row_missing_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "nonl.jsonl"
    path.write_text(json.dumps(make_row("a")) + "\n" + json.dumps(make_row("b")))
    with JsonlWriter(path) as writer:
        writer.write(make_row("c"))
    assert [r["id"] for r in read_jsonl(path)[0]] == ["a", "b", "c"]
    assert not torn_sidecar(path).exists()


def test_torn_only_line_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "only.jsonl"
    path.write_bytes(b'{"id": "a", "pas')
    with pytest.warns(ResultFileWarning), JsonlWriter(path) as writer:
        writer.write(make_row("b"))
    assert [r["id"] for r in read_jsonl(path)[0]] == ["b"]


def test_invalid_middle_line_is_an_error_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(make_row("a")) + "\n{oops\n" + json.dumps(make_row("b")) + "\n")
    with pytest.raises(ResultFileError, match=r"bad\.jsonl:2: line is not valid JSON") as info:
        read_jsonl(path)
    assert info.value.line == 2
    assert "Repair or delete this line" in str(info.value)


def test_invalid_terminated_last_line_is_an_error(tmp_path: Path) -> None:
    # A line that ends in a newline was written whole: it is corrupt, not torn.
    path = tmp_path / "bad2.jsonl"
    path.write_text(json.dumps(make_row("a")) + "\n{oops\n")
    with pytest.raises(ResultFileError, match=r"bad2\.jsonl:2"):
        read_jsonl(path)


def test_row_missing_required_field_names_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "field.jsonl"
    row = make_row("a")
    del row["passed"]
    path.write_text(json.dumps(make_row("z")) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(ResultFileError, match=r"field\.jsonl:2: field 'passed'"):
        read_jsonl(path)


def test_blank_lines_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_text("\n" + json.dumps(make_row("a")) + "\n\n  \n")
    assert read_jsonl(path) == ([make_row("a")], [])


def test_unstorable_row_leaves_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "nan.jsonl"
    with JsonlWriter(path) as writer:
        writer.write(make_row("a"))
        before = path.read_bytes()
        with pytest.raises(ValueError):
            writer.write(make_row("b", durationMs=float("nan")))
        with pytest.raises(TypeError):
            writer.write(["not", "a", "dict"])  # type: ignore[arg-type]
    assert path.read_bytes() == before


def test_write_after_close_is_refused(tmp_path: Path) -> None:
    writer = JsonlWriter(tmp_path / "closed.jsonl")
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.write(make_row())


def test_missing_file_is_a_result_file_error(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match=r"missing\.jsonl: cannot read"):
        read_jsonl(tmp_path / "missing.jsonl")


# A subprocess whose file size limit (RLIMIT_FSIZE) makes the kernel accept
# only part of a row, then refuse: the same partial write a full disk gives.
_FULL_DISK_SCRIPT = """
import json, os, resource, signal, sys
from capeval.results.errors import ResultFileError
from capeval.results.jsonl import JsonlWriter
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
path, first, second = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
writer = JsonlWriter(path)
writer.write(first)
limit = os.path.getsize(path) + 100
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    writer.write(second)
except ResultFileError as exc:
    print("refused:", exc)
writer.close()
"""


def test_a_write_cut_short_by_a_full_disk_leaves_no_torn_row(tmp_path: Path) -> None:
    # Other rows are appended after a failed one (the run's other repeats),
    # so partial bytes left behind would become a corrupt line mid-stream
    # that every reader refuses. The writer must roll them back and say so.
    import subprocess
    import sys

    path = tmp_path / "full.jsonl"
    first, second = make_row("a"), make_row("b", textPreview="x" * 5000)
    proc = subprocess.run(
        [sys.executable, "-c", _FULL_DISK_SCRIPT, str(path), json.dumps(first), json.dumps(second)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "refused:" in proc.stdout and "full.jsonl" in proc.stdout
    assert "rows before it are intact" in proc.stdout
    assert read_jsonl(path) == ([first], [])


def test_a_stream_that_cannot_be_created_is_a_result_file_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with pytest.raises(ResultFileError, match=r"not-a-dir/rows\.jsonl: cannot write"):
        JsonlWriter(blocker / "rows.jsonl")


def test_bytes_another_process_appended_are_never_glued_to_a_row(tmp_path: Path) -> None:
    # An agent appended half a forged row; the next row would have finished its line.
    from capeval.results.jsonl import StreamChanged

    path = tmp_path / "rows.jsonl"
    with JsonlWriter(path) as writer:
        writer.write(make_row("a"))
        good = path.read_bytes()
        with open(path, "ab") as other:
            other.write(b'{"passed": true, "id": "forged"')
        with pytest.raises(StreamChanged) as info:
            writer.write(make_row("b"))
    assert info.value.offset == len(good) and info.value.size == len(good) + 31
    assert str(path) in str(info.value) and "changed by another process" in str(info.value)
    assert path.read_bytes() == good + b'{"passed": true, "id": "forged"'


def test_a_stream_cut_short_behind_the_writer_is_refused_too(tmp_path: Path) -> None:
    from capeval.results.jsonl import StreamChanged

    path = tmp_path / "rows.jsonl"
    with JsonlWriter(path) as writer:
        writer.write(make_row("a"))
        path.write_bytes(b"")
        with pytest.raises(StreamChanged):
            writer.write(make_row("b"))


def test_a_reopened_stream_starts_from_its_size(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    with JsonlWriter(path) as writer:
        writer.write(make_row("a"))
    with JsonlWriter(path) as writer:
        writer.write(make_row("b"))
        writer.write(make_row("c"))
    assert [r["id"] for r in read_jsonl(path)[0]] == ["a", "b", "c"]


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
