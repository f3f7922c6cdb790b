"""What keeps the history honest: queries only read it, and the views type fields as load_frame.

Real DuckDB files and real `capeval` processes throughout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from capeval.analysis import frame as frame_module
from capeval.analysis.frame import load_frame
from capeval.analysis.history import TYPED_FIELDS, connect, ingest, open_db, records
from capeval.commands.common import history_connection
from capeval.results.columns import ColumnTypeError
from capeval.results.errors import ResultFileError
from capeval.results.v3 import write_v3
from tests.analysis.test_history import row, write_jsonl
from tests.clirun import capeval


def runs_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    for run in ("r1", "r2"):
        rows = [row(run, "v", case, i, i != 1) for case in ("a", "b") for i in range(3)]
        write_jsonl(folder / f"{run}.jsonl", rows)
    return folder


def stored_rows(db: Path) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT count(*) FROM repeats").fetchone()[0]  # type: ignore[index]


# -- a query never changes the stored history -------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM result_rows",
        "UPDATE result_files SET rowCount = 0",
        "DROP TABLE cell_stats",
        "SELECT 1; DELETE FROM result_rows",
    ],
)
def test_a_query_given_db_and_from_cannot_change_the_history(tmp_path: Path, sql: str) -> None:
    folder, db = runs_folder(tmp_path), tmp_path / "h.duckdb"
    assert capeval("history", folder, "--db", db).returncode == 0
    assert stored_rows(db) == 12

    proc = capeval("query", sql, "--db", db, "--from", folder)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "a query only reads the history" in proc.stderr
    assert "h.duckdb is opened read-only" in proc.stderr
    assert stored_rows(db) == 12

    again = capeval("history", folder, "--db", db)
    assert again.returncode == 0
    assert "0 rows added (0 new, 0 grown, 0 rewritten, 2 unchanged files)" in again.stderr
    assert again.stdout.count("\nr") == 2  # both runs still listed


def test_db_and_from_still_ingest_and_answer(tmp_path: Path) -> None:
    folder, db = runs_folder(tmp_path), tmp_path / "h.duckdb"
    proc = capeval(
        "query",
        "CREATE TEMP TABLE t AS SELECT runId FROM runs; SELECT count(*) AS n FROM t",
        "--db",
        db,
        "--from",
        folder,
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [{"n": 2}]
    assert stored_rows(db) == 12  # the ingest itself was kept


def test_history_connection_hands_over_a_read_only_db(tmp_path: Path) -> None:
    folder, db = runs_folder(tmp_path), tmp_path / "h.duckdb"
    con, report = history_connection([folder], db, None)
    assert report is not None and report.rows_added == 12
    with pytest.raises(duckdb.Error, match="read-only"):
        con.execute("DELETE FROM result_rows")
    con.close()
    assert stored_rows(db) == 12


def test_rows_deleted_behind_the_ingest_are_read_again(tmp_path: Path) -> None:
    # A database emptied by hand (or by an older capeval's query) kept its
    # files recorded as unchanged, so their runs never came back.
    folder, db = runs_folder(tmp_path), tmp_path / "h.duckdb"
    con = open_db(db)
    ingest(con, [folder])
    con.execute("DELETE FROM result_rows WHERE source LIKE '%r1.jsonl'")
    report = ingest(con, [folder])
    assert report.rows_added == 6
    assert report.files_replaced == 1 and report.files_unchanged == 1
    assert any("held 0 of the 6 rows recorded" in w for w in report.warnings)
    assert records(con, "SELECT runId, repeats FROM runs ORDER BY runId") == [
        {"runId": "r1", "repeats": 3},
        {"runId": "r2", "repeats": 3},
    ]
    assert records(con, "SELECT count(*) AS n FROM cells WHERE runId = 'r1'") == [{"n": 2}]
    assert ingest(con, [folder]).rows_added == 0  # and then it is steady again
    con.close()


# -- typed fields: refused as load_frame refuses them -------------------------------

BAD_TYPED = [
    ("turnsUsed", 7.5, "an integer", "7.5"),  # was 8 turns
    ("turnsUsed", "7", "an integer", '"7"'),  # was 7
    ("turnsUsed", True, "an integer", "true"),
    ("maxTurns", 2**63, "an integer", str(2**63)),  # past a 64-bit column
    ("agentExitCode", "0", "an integer", '"0"'),
    ("durationMs", True, "a number", "true"),  # was 1 ms
    ("costUsd", "0.5", "a number", '"0.5"'),
    ("overBudget", "false", "true or false", '"false"'),  # was false
    ("skipPermissions", 1, "true or false", "1"),  # was true
    ("gitDirty", "yes", "true or false", '"yes"'),
    ("tokenUsage.input", "100", "an integer", '"100"'),  # was 100 tokens
    ("tokenUsage.output", 10.5, "an integer", "10.5"),
    ("bait.threshold", "2", "a number", '"2"'),
]


def with_field(base: dict[str, Any], name: str, value: Any) -> dict[str, Any]:
    parent, _, key = name.rpartition(".")
    if parent:
        return {**base, parent: {**(base.get(parent) or {"metric": "x"}), key: value}}
    return {**base, key: value}


def bad_stream(path: Path, name: str, value: Any) -> Path:
    rows = [row("r1", "v", "c", i, True) for i in range(3)]
    rows[2] = with_field(rows[2], name, value)
    write_jsonl(path, rows)
    return path


@pytest.mark.parametrize("name, value, right, shown", BAD_TYPED)
def test_a_mistyped_field_is_refused_naming_file_line_and_field(
    tmp_path: Path, name: str, value: Any, right: str, shown: str
) -> None:
    stream = bad_stream(tmp_path / "r.jsonl", name, value)
    with pytest.raises(ColumnTypeError, match=rf"field '[^']+' must be {right}"):
        load_frame(stream)
    # Ingested (what `capeval query --from` and `history` do): file, line, field.
    with pytest.raises(ResultFileError) as ingested:
        ingest(open_db(), [stream])
    assert str(ingested.value).startswith(
        f"{stream.resolve()}:3: field '{name}' must be {right}"
    ), ingested.value
    assert f"found {shown}" in str(ingested.value)
    assert str(ingested.value).endswith("(case 'c')")
    # Read in place: the query that reads the field fails, naming file and field.
    with pytest.raises(duckdb.Error, match=rf"r\.jsonl: field '{name}' must be {right}"):
        connect([stream]).execute("SELECT * FROM repeats").fetchall()


def test_the_query_command_refuses_a_fractional_turn_count(tmp_path: Path) -> None:
    stream = bad_stream(tmp_path / "f.jsonl", "turnsUsed", 7.5)
    proc = capeval("query", "SELECT turnsUsed, durationMs FROM repeats", "--from", stream)
    assert proc.returncode == 2, proc.stdout
    assert "f.jsonl:3: field 'turnsUsed' must be an integer, found 7.5 (case 'c')" in proc.stderr


def test_a_mistyped_field_of_a_v3_file_names_its_case(tmp_path: Path) -> None:
    rows = [row("r1", "v", "c", i, True) for i in range(3)]
    rows[1]["durationMs"] = "12"
    path = tmp_path / "run.json"
    write_v3(path, rows, started_at="2026-01-02T03:04:05.000Z", finished_at=None)
    with pytest.raises(ResultFileError, match=r"run\.json: cases\[1\]: field 'durationMs' must"):
        ingest(open_db(), [path])


def test_a_grown_stream_names_the_line_in_the_file_not_in_its_new_part(tmp_path: Path) -> None:
    stream, db = tmp_path / "r.jsonl", tmp_path / "h.duckdb"
    write_jsonl(stream, [row("r1", "v", "c", i, True) for i in range(4)])
    con = open_db(db)
    ingest(con, [stream])
    with stream.open("a") as handle:
        handle.write(json.dumps(row("r1", "v", "c", 4, True)) + "\n")
        handle.write(json.dumps(row("r1", "v", "c", 5, True, gitDirty="no")) + "\n")
    with pytest.raises(ResultFileError, match=r"r\.jsonl:6: field 'gitDirty' must be true"):
        ingest(con, [stream])
    assert records(con, "SELECT count(*) AS n FROM repeats") == [{"n": 4}]
    con.close()


def test_odd_but_valid_values_read_as_load_frame_reads_them(tmp_path: Path) -> None:
    text_rows = [
        # 7.0 turns is 7 to load_frame; an integer is a fine duration.
        '"turnsUsed": 7.0, "durationMs": 12, "overBudget": false, "costUsd": 0.25',
        '"turnsUsed": -0, "maxTurns": 1E1, "tokenUsage": {"input": 100.0, "output": null}',
        '"agentExitCode": null, "gitDirty": true, "bait": {"metric": "m", "threshold": 3}',
    ]
    lines = []
    for i, extra in enumerate(text_rows):
        base_row = row("r1", "v", "c", i, True)
        for written in ("turnsUsed", "durationMs", "tokenUsage"):
            del base_row[written]
        base = json.dumps(base_row)[:-1]
        lines.append(base + ", " + extra + "}\n")
    stream = tmp_path / "r.jsonl"
    stream.write_text("".join(lines))
    columns = [
        "turnsUsed",
        "durationMs",
        "overBudget",
        "costUsd",
        "maxTurns",
        "tokenInput",
        "tokenOutput",
        "agentExitCode",
        "gitDirty",
        "baitThreshold",
    ]
    expected = load_frame(stream, fast=False).sort("repeat").select(columns).to_dicts()
    assert expected[0]["turnsUsed"] == 7 and expected[1]["tokenInput"] == 100
    quoted = ", ".join(f'"{c}"' for c in columns)
    for con in (connect([stream]), history_connection([stream], None, None)[0]):
        assert records(con, f'SELECT {quoted} FROM repeats ORDER BY "repeat"') == expected


def test_the_checked_fields_are_the_typed_columns_of_load_frame() -> None:
    # A typed column added to the frames but not checked here would be cast
    # leniently by the views again.
    kinds = {"int": frame_module.INT, "float": frame_module.FLOAT, "bool": frame_module.BOOL}
    expected = {
        name: kind for name, kind in frame_module.ROW_COLUMNS.items() if kind != frame_module.STR
    }
    del expected["repeat"]  # checked as the reader checks it: a 0-based integer only
    del expected["passed"]  # checked as the reader checks it
    expected.update(
        {
            f"tokenUsage.{key}": frame_module.TOKEN_COLUMNS[c]
            for c, key in frame_module.TOKEN_KEYS.items()
        }
    )
    expected["bait.threshold"] = frame_module.BAIT_COLUMNS["baitThreshold"]
    assert {name: kinds[kind] for name, kind in TYPED_FIELDS.items()} == expected
