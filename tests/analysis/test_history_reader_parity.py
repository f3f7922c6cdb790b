"""The history views count and refuse rows as the reference reader does.

`capeval aggregate`, `load_frame` and the gate read rows through
`capeval.results.load`; the views read them with DuckDB. Where the two
disagreed, `capeval query` and `capeval history` gave other pass rates than
`capeval aggregate` for the same file, without a word.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from capeval.analysis.history import connect, ingest, open_db, records
from capeval.core.aggregate import aggregate
from capeval.results.errors import ResultFileError, ResultFileWarning
from capeval.results.load import read_rows
from capeval.results.v3 import write_v3
from tests.analysis.test_history import row, write_jsonl
from tests.clirun import capeval


def reader_cells(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """(resultKey, caseId, repeats, passCount) per cell, as `capeval aggregate` counts
    them, and the reader's warnings."""
    found: list[str] = []
    cells = [
        {
            "resultKey": c["resultKey"],
            "caseId": c["id"],
            "repeats": c["repeats"],
            "passCount": c["passCount"],
        }
        for c in aggregate(read_rows(path, on_warning=found.append))
    ]
    return sorted(cells, key=lambda c: c["resultKey"]), found


CELLS_SQL = "SELECT resultKey, caseId, repeats, passCount FROM cells ORDER BY resultKey"


def resumed_stream(path: Path) -> Path:
    """A run whose stream holds repeat 0 of one cell twice (a resume re-ran it), the
    second copy with the other verdict."""
    rows = [row("r1", v, c, i, i != 1) for v in ("a", "b") for c in ("x", "y") for i in range(2)]
    again = {**rows[0], "passed": not rows[0]["passed"]}
    write_jsonl(path, [*rows, again])
    return path


def test_a_repeat_twice_in_one_stream_counts_twice_and_warns_as_the_reader_does(
    tmp_path: Path,
) -> None:
    stream = resumed_stream(tmp_path / "r1.jsonl")
    expected, warned = reader_cells(stream)
    assert [c for c in expected if c["resultKey"] == "a::x"] == [
        {"resultKey": "a::x", "caseId": "x", "repeats": 3, "passCount": 1}
    ]
    assert len(warned) == 1 and warned[0].endswith("both are counted")
    scanned, stored = connect([stream]), open_db(tmp_path / "h.duckdb")
    report = ingest(stored, [tmp_path])
    for con in (scanned, stored):
        assert records(con, CELLS_SQL) == expected
        assert records(con, "SELECT rows, passed FROM runs") == [{"rows": 9, "passed": 4}]
    # The reader's warning, word for word (the file named by its resolved path).
    assert report.warnings == [w.replace(str(stream), str(stream.resolve())) for w in warned]
    # Unchanged, the file is not read again, so neither is it warned about again.
    assert ingest(stored, [tmp_path]).warnings == []


def test_the_commands_give_the_readers_numbers_and_warning(tmp_path: Path) -> None:
    stream = resumed_stream(tmp_path / "r1.jsonl")
    proc = capeval("query", CELLS_SQL, "--from", str(stream), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == reader_cells(stream)[0]
    assert "r1.jsonl: row 9 repeats a::x repeat 0 (first at row 1); both are counted" in (
        proc.stderr
    )
    proc = capeval("history", str(stream), "--json")
    assert json.loads(proc.stdout)["runs"][0]["passRate"] == pytest.approx(4 / 9)


def test_a_stream_and_its_v3_export_still_count_once(tmp_path: Path) -> None:
    stream = resumed_stream(tmp_path / "r1.jsonl")
    rows = read_rows(stream, on_warning=lambda _: None)
    write_v3(tmp_path / "r1.json", rows, started_at="2026-01-02T03:04:05.000Z", finished_at=None)
    expected = reader_cells(stream)[0]
    report = ingest(stored := open_db(), [tmp_path])
    with pytest.warns(ResultFileWarning, match="r1.json: row 9 repeats a::x"):
        scanned = connect([tmp_path])
    for con in (scanned, stored):
        assert records(con, CELLS_SQL) == expected
        assert records(con, "SELECT DISTINCT format FROM repeats") == [{"format": "jsonl"}]
    # Each file holds the repeat twice, and each says so (the v3 one too, on stderr
    # with the rest, not as a Python warning).
    assert len(report.warnings) == 2
    assert any("r1.json: row 9 repeats a::x" in w for w in report.warnings)


def test_a_grown_stream_that_repeats_an_earlier_row_warns(tmp_path: Path) -> None:
    stream = tmp_path / "r1.jsonl"
    first = [row("r1", "a", "x", i, True) for i in range(2)]
    write_jsonl(stream, first)
    con = open_db(tmp_path / "h.duckdb")
    assert ingest(con, [stream]).warnings == []
    with stream.open("a") as handle:
        handle.write(json.dumps({**first[1], "passed": False}) + "\n")
    report = ingest(con, [stream])
    assert report.files_grown == 1
    assert [w.split(": ", 1)[1] for w in report.warnings] == [
        "row 3 repeats a::x repeat 1 (first at row 2); both are counted"
    ]
    assert records(con, CELLS_SQL) == [
        {"resultKey": "a::x", "caseId": "x", "repeats": 3, "passCount": 2}
    ]


BAD_FIELDS: list[tuple[str, Any]] = [
    ("repeat", "1"),  # was read as 1, collided with repeat 1 and vanished
    ("repeat", 1.5),  # was rounded to 2
    ("repeat", 1.0),
    ("repeat", True),
    ("id", None),  # was a cell with a NULL case id
    ("id", 7),  # was the case id "7"
    ("id", ""),
    ("behaviors", {"shellCommandCount": "3"}),  # was the count 3
    ("behaviors", {"shellCommandCount": True}),  # was the count 1
    ("behaviors", {"maxTurnDurationMs": "12.5"}),
    ("behaviors", {"taskToolCallCount": "2"}),
    ("variantId", None),  # with no resultKey either: no cell at all
]


def bad_stream(path: Path, field: str, value: Any) -> Path:
    rows = [row("r1", "v", "c", i, True) for i in range(3)]
    rows[2][field] = value
    if field == "variantId":
        del rows[2]["resultKey"]
    write_jsonl(path, rows)
    return path


@pytest.mark.parametrize("field, value", BAD_FIELDS)
def test_a_row_the_reader_refuses_is_refused_with_its_error(
    tmp_path: Path, field: str, value: Any
) -> None:
    stream = bad_stream(tmp_path / "r.jsonl", field, value)
    with pytest.raises(ResultFileError) as reader:
        read_rows(stream)
    assert f"r.jsonl:3: field '{field}" in str(reader.value) or "needs 'resultKey'" in str(
        reader.value
    )
    with pytest.raises(ResultFileError) as viewed:
        ingest(open_db(), [stream])
    assert str(viewed.value) == str(reader.value).replace(str(stream), str(stream.resolve()))
    # Read in place, the file fails when a query reads the field, naming file and field.
    if field in ("repeat", "id"):
        with pytest.raises(duckdb.Error, match=rf"r\.jsonl: field '{field}' must be"):
            connect([stream]).execute("SELECT count(*) FROM cells").fetchall()


def test_the_query_command_refuses_a_repeat_that_is_a_string(tmp_path: Path) -> None:
    stream = bad_stream(tmp_path / "r.jsonl", "repeat", "1")
    proc = capeval("query", "SELECT count(*) AS n FROM repeats", "--from", str(stream))
    assert proc.returncode == 2, proc.stdout
    assert "r.jsonl:3: field 'repeat' must be a 0-based integer (case 'c')" in proc.stderr


def test_good_values_of_the_checked_fields_still_read(tmp_path: Path) -> None:
    rows = [
        row("r1", "v", "c", 0, True, behaviors={"shellCommandCount": 2, "maxTurnDurationMs": 1.5}),
        row("r1", "v", "c", 1, False, behaviors={"shellCommandCount": None}),
        row("r1", "v", "d", -1, True, behaviors=None),
        {**row("r1", "v", 'é"q', 0, True), "resultKey": None},
    ]
    del rows[3]["repeat"]
    write_jsonl(tmp_path / "r.jsonl", rows)
    expected = reader_cells(tmp_path / "r.jsonl")[0]
    assert len(expected) == 3
    scanned, stored = connect([tmp_path]), open_db()
    ingest(stored, [tmp_path])
    for con in (scanned, stored):
        assert records(con, CELLS_SQL) == expected
        repeats = records(con, 'SELECT "repeat", shellCommandCount FROM repeats')
        assert {"repeat": -1, "shellCommandCount": None} in repeats
        assert {"repeat": 0, "shellCommandCount": 2} in repeats


def test_an_empty_result_key_files_the_row_under_variant_and_case(tmp_path: Path) -> None:
    # The views grouped such a row in a cell named "", the reader (as
    # `row_result_key` says) under variantId::id.
    rows = [row("r1", "a", "x", 0, True), {**row("r1", "a", "x", 1, False), "resultKey": ""}]
    stream = tmp_path / "r1.jsonl"
    write_jsonl(stream, rows)
    expected, _ = reader_cells(stream)
    assert expected == [{"resultKey": "a::x", "caseId": "x", "repeats": 2, "passCount": 1}]
    assert records(connect([stream]), CELLS_SQL) == expected


@pytest.mark.parametrize("stored", [False, True])
def test_connect_warns_of_what_reading_passed_over(tmp_path: Path, stored: bool) -> None:
    # connect() dropped its scan's report: a notebook counted a torn stream
    # and a stream holding a repeat twice without a word.
    stream = resumed_stream(tmp_path / "r1.jsonl")
    torn = tmp_path / "r2.jsonl"
    write_jsonl(torn, [row("r2", "a", "x", 0, True)])
    with torn.open("a") as handle:
        handle.write('{"id": "x", "passed": tr')
    db = tmp_path / "h.duckdb" if stored else None
    with pytest.warns(ResultFileWarning) as caught:
        connect([stream, torn], db=db)
    said = [str(w.message) for w in caught]
    assert any("r2.jsonl: the last line is incomplete" in m for m in said), said
    # An ingest reads every row up front, so it also names the repeat held
    # twice; a scan reads rows only when queried.
    assert any("both are counted" in m for m in said) is stored, said
