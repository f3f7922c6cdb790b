"""Small result files are read as one batch: the same rows, facts and errors as one by one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capeval.analysis import staging
from capeval.analysis.history import connect, ingest, open_db
from capeval.results.errors import ResultFileError
from capeval.results.v3 import write_v3
from tests.analysis.test_history import row, write_jsonl

TABLE = 'SELECT * EXCLUDE (ingestedAt) FROM result_rows ORDER BY source, resultKey, "repeat"'


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    for n in range(4):
        rows = [row(f"run-{n}", "v", c, r, (n + r) % 2 == 0) for c in ("a", "b") for r in range(2)]
        write_jsonl(folder / f"run-{n}.jsonl", rows)
    # A v3 file (staged through a temp JSONL), and a stream whose rows hold the
    # batch's own key, which must be read on its own.
    write_v3(
        folder / "old.json",
        [{k: v for k, v in row("x", "v", "a", 0, True).items() if k != "runId"}],
        started_at="2026-01-01T00:00:00Z",
        finished_at="2026-01-01T00:01:00Z",
    )
    odd = {**row("run-odd", "v", "a", 0, True), "__capevalinput": 7}
    write_jsonl(folder / "odd.jsonl", [odd])
    return folder


def _rows(folder: Path) -> list[tuple]:
    con = open_db()  # in memory
    try:
        ingest(con, [folder])
        columns = [
            c
            for (c,) in con.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'result_rows' AND column_name <> 'ingestedAt'"
            ).fetchall()
        ]
        return con.execute(
            f"SELECT {', '.join(json.dumps(c) for c in columns)} FROM result_rows "
            'ORDER BY source, resultKey, "repeat"'
        ).fetchall()
    finally:
        con.close()


def test_a_batch_gives_the_rows_and_file_facts_of_reading_file_by_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path)
    batched = _rows(folder)
    monkeypatch.setattr(staging, "BATCH_MAX_BYTES", 0)  # every file on its own
    one_by_one = _rows(folder)
    assert batched == one_by_one
    assert len({r[0] for r in batched}) > 1  # rows of several sources, each its own
    # And the views over the rows agree too (runs named from their own files).
    with connect([folder]) as con:
        runs = con.execute("SELECT runId, rows FROM runs ORDER BY runId").fetchall()
    assert ("run-0", 4) in runs and ("run-odd", 1) in runs


def test_the_batch_tags_every_object_line_and_leaves_the_rest_as_it_was(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_bytes(b'{"id":"x"}\n  { }\n\n')
    second.write_bytes(b'[1]\n {"id" : "y"}')  # no final newline
    big = tmp_path / "big.jsonl"
    big.write_bytes(b'{"id":"z"}\n' * (staging.BATCH_MAX_BYTES // 11 + 1))
    marked = tmp_path / "m.jsonl"
    marked.write_bytes(b'{"id":"m","__CAPEVALINPUT":1}\n')
    inputs = [staging.Input(str(p), "jsonl", str(p), p.stem) for p in (first, big, marked, second)]
    temps: list[str] = []
    batch = staging.batch(inputs, temps)
    assert batch is not None
    name, chosen = batch
    assert [i.source for i in chosen] == [str(first), str(second)]
    assert Path(name).read_bytes() == (
        b'{"__capevalInput":0,"id":"x"}\n{"__capevalInput":0 }\n\n\n'
        b'[1]\n{"__capevalInput":1,"id" : "y"}\n'
    )
    assert temps == [name]
    Path(name).unlink()
    assert staging.batch(inputs[:2], []) is None  # one small file: nothing to batch


def test_a_bad_row_in_a_batch_is_named_by_its_own_file_and_line(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "run-2.jsonl").write_text(
        (folder / "run-2.jsonl").read_text()
        + json.dumps({**row("run-2", "v", "c", 0, True), "passed": "yes"})
        + "\n"
    )
    with pytest.raises(ResultFileError) as info:
        ingest(open_db(), [folder / "run-2.jsonl"])
    assert str(info.value).startswith(f"{folder / 'run-2.jsonl'}:5: ")
    assert "passed" in str(info.value)
    # Found in the folder, among files read as one batch: that file alone is
    # passed over, named by its own line; every other file's rows are kept.
    con = open_db()
    report = ingest(con, [folder])
    ((source, reason),) = report.skipped
    assert source == str(folder / "run-2.jsonl") and f"{source}:5: " in reason
    stored = {r[0] for r in con.execute("SELECT DISTINCT source FROM result_rows").fetchall()}
    assert str(folder / "run-2.jsonl") not in stored and stored
