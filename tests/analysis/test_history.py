"""History on DuckDB: ingest, de-duplication, the views and `capeval history`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb
import pytest

from capeval.analysis.frame import load_frame
from capeval.analysis.history import connect, ingest, open_db, records, runs
from capeval.core.aggregate import aggregate
from capeval.results.discovery import discover
from capeval.results.errors import ResultFileError
from capeval.results.jsonl import JsonlWriter
from capeval.results.load import read_rows
from capeval.results.v3 import write_v3
from tests.clirun import capeval
from tests.rowfactory import result_row

SAMPLES = Path(__file__).resolve().parents[2] / "evals" / "capability" / "samples"


def row(run: str, variant: str, case: str, repeat: int, passed: bool, **extra: Any) -> dict:
    defaults = {
        "tier": "simple",
        "title": case,
        "provider": "scripted",
        "model": "oracle",
        "durationMs": 1000 + repeat,
        "turnsUsed": 3 + repeat,
        "tokenUsage": {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0, "thinking": 0},
        "behaviors": {"shellCommandCount": repeat, "toolCallsByName": {"run_shell": repeat}},
        "runId": run,
        "runStartedAt": "2026-01-02T03:04:05.000Z",
    }
    return result_row(case, repeat, variant=variant, passed=passed, **{**defaults, **extra})


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with JsonlWriter(path) as writer:
        for r in rows:
            writer.write(r)


def count(con: Any, sql: str) -> int:
    return con.execute(sql).fetchone()[0]


def sample_rows() -> list[dict]:
    """Every sample row, each repeat once (JSONL preferred), read by the reference reader."""
    seen: dict[tuple, dict] = {}
    for path in sorted(SAMPLES.glob("*.jsonl")) + sorted(SAMPLES.glob("*.json")):
        for r in read_rows(path):
            seen.setdefault((r["runId"], r["variantId"], r["id"], r["repeat"]), r)
    return list(seen.values())


# -- ingest -------------------------------------------------------------------------


def test_ingest_twice_adds_nothing(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(SAMPLES, results)
    con = open_db(tmp_path / "h.duckdb")
    first = ingest(con, [results])
    stored = count(con, "SELECT count(*) FROM result_rows")
    second = ingest(con, [results])
    assert first.rows_added == stored > 0
    assert second.rows_added == 0
    assert second.files_unchanged == first.files_seen
    assert count(con, "SELECT count(*) FROM result_rows") == stored


def test_ingest_survives_reopening_the_database(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_jsonl(results / "a.jsonl", [row("r1", "v", "c", i, True) for i in range(3)])
    db = tmp_path / "h.duckdb"
    open_db(db).close()
    con = connect([results], db)
    con.close()
    con = connect([results], db)
    assert count(con, "SELECT count(*) FROM result_rows") == 3
    con.close()
    stored = connect(db=db)  # no paths: the stored history as it is
    assert count(stored, "SELECT count(*) FROM repeats") == 3


def test_grown_jsonl_adds_only_its_new_rows(tmp_path: Path) -> None:
    stream = tmp_path / "run.jsonl"
    write_jsonl(stream, [row("r1", "v", "c", i, True) for i in range(3)])
    con = open_db(tmp_path / "h.duckdb")
    assert ingest(con, [tmp_path]).rows_added == 3
    write_jsonl(stream, [row("r1", "v", "c", i, False) for i in (3, 4)])  # reopen: appends
    report = ingest(con, [tmp_path])
    assert (report.rows_added, report.files_grown) == (2, 1)
    assert count(con, "SELECT count(*) FROM result_rows") == 5
    assert sorted(r[0] for r in con.execute('SELECT "repeat" FROM repeats').fetchall()) == [
        0,
        1,
        2,
        3,
        4,
    ]


def test_a_torn_last_line_waits_for_the_next_ingest(tmp_path: Path) -> None:
    stream = tmp_path / "run.jsonl"
    write_jsonl(stream, [row("r1", "v", "c", 0, True)])
    whole = json.dumps(row("r1", "v", "c", 1, True)) + "\n"
    with open(stream, "a", encoding="utf-8") as handle:
        handle.write(whole[:25])  # a run still writing
    con = open_db(tmp_path / "h.duckdb")
    report = ingest(con, [stream])
    assert report.rows_added == 1
    assert any("incomplete" in w for w in report.warnings)
    with open(stream, "a", encoding="utf-8") as handle:
        handle.write(whole[25:])
    report = ingest(con, [stream])
    assert (report.rows_added, report.warnings) == (1, [])
    assert count(con, "SELECT count(*) FROM repeats") == 2


def test_a_rewritten_file_replaces_its_rows(tmp_path: Path) -> None:
    stream = tmp_path / "run.jsonl"
    write_jsonl(stream, [row("r1", "v", "c", i, True) for i in range(4)])
    con = open_db(tmp_path / "h.duckdb")
    ingest(con, [stream])
    stream.unlink()
    write_jsonl(stream, [row("r2", "v", "c", 0, False)])  # same name, other content
    report = ingest(con, [stream])
    assert report.files_replaced == 1
    assert con.execute("SELECT runId, passed FROM result_rows").fetchall() == [("r2", False)]


def test_jsonl_and_v3_of_one_run_count_once(tmp_path: Path) -> None:
    rows = [row("r1", v, c, i, i != 1) for v in ("a", "b") for c in ("x", "y") for i in range(3)]
    write_jsonl(tmp_path / "r1.jsonl", rows)
    write_v3(tmp_path / "r1.json", rows, started_at="2026-01-02T03:04:05.000Z", finished_at=None)
    con = connect([tmp_path])
    assert count(con, "SELECT count(*) FROM result_rows") == 24
    assert count(con, "SELECT count(*) FROM repeats") == 12
    assert count(con, "SELECT count(*) FROM repeats WHERE format = 'jsonl'") == 12
    assert count(con, "SELECT count(*) FROM runs") == 1
    assert count(con, "SELECT passed FROM runs") == 8


def test_the_sample_run_written_twice_counts_once() -> None:
    con = connect([SAMPLES])
    duplicated = count(con, "SELECT count(DISTINCT runId) FROM result_rows WHERE format = 'v3'")
    assert duplicated == 1
    assert count(con, "SELECT count(*) FROM repeats") == len(sample_rows())
    assert count(con, "SELECT count(*) FROM result_rows") > len(sample_rows())


def test_v3_files_without_run_id_are_runs_of_their_own(real_results: Path) -> None:
    con = connect([real_results])
    found = {r["runId"]: r for r in runs(con)}
    assert set(found) == {
        "baseline-0286@2026-07-30T04:55:09.792Z",
        "baseline-0286-grok@2026-07-30T23:22:21.413Z",
        "after-0286-grok@2026-07-30T23:15:08.506Z",
    }
    for path in real_results.glob("*.json"):
        doc = json.loads(path.read_text())
        run = found[f"{path.stem}@{doc['startedAt']}"]
        assert run["rows"] == len(doc["cases"])
        assert run["passed"] == sum(c["passed"] for c in doc["cases"])
        assert run["tokenInput"] == sum(
            (c["tokenUsage"] or {}).get("input", 0) for c in doc["cases"]
        )
        assert run["finishedAt"] == doc["finishedAt"]


# -- the views against an independent count ------------------------------------------------


def test_runs_view_matches_the_sample_rows() -> None:
    by_run: dict[str, list[dict]] = defaultdict(list)
    for r in sample_rows():
        by_run[r["runId"]].append(r)
    found = runs(connect([SAMPLES]))
    assert [r["runId"] for r in found] == sorted(by_run)  # run ids sort by start time
    for run in found:
        rows = by_run[run["runId"]]
        assert run["rows"] == len(rows)
        assert run["passed"] == sum(r["passed"] for r in rows)
        assert run["variants"] == sorted({r["variantId"] for r in rows})
        assert run["cases"] == len({r["id"] for r in rows})
        assert run["repeats"] == 3
        assert run["turnsUsed"] == sum(r["turnsUsed"] or 0 for r in rows)
        assert run["tokenOutput"] == sum(r["tokenUsage"]["output"] for r in rows)
        assert run["gitCommit"] == rows[0]["gitCommit"]
        assert run["capevalVersion"] == rows[0]["capevalVersion"]
        assert run["wallMs"] > 0


def test_cells_view_matches_the_reference_aggregates() -> None:
    rows = sample_rows()
    con = connect([SAMPLES])
    cells = {(c["runId"], c["resultKey"]): c for c in records(con, "SELECT * FROM cells")}
    expected = 0
    for run_id in {r["runId"] for r in rows}:
        for agg in aggregate([r for r in rows if r["runId"] == run_id]):
            cell = cells[(run_id, agg["resultKey"])]
            expected += 1
            assert (cell["repeats"], cell["passCount"]) == (agg["repeats"], agg["passCount"])
            assert cell["passRate"] == pytest.approx(agg["passRate"])
            for metric, stats in agg["behaviorStats"].items():
                assert cell[metric] == pytest.approx(stats["median"]), (agg["resultKey"], metric)
    assert expected == len(cells)


def test_missing_task_metric_is_backfilled_and_null_behaviors_stay_null(tmp_path: Path) -> None:
    old = row("r", "v", "c", 0, True, behaviors={"toolCallsByName": {"task": 2, "spawn_agent": 1}})
    lost = row("r", "v", "c", 1, True, behaviors=None)
    write_jsonl(tmp_path / "r.jsonl", [old, lost])
    con = connect([tmp_path])
    values = con.execute(
        'SELECT "repeat", taskToolCallCount, shellCommandCount, behaviorsCaptured '
        'FROM repeats ORDER BY "repeat"'
    ).fetchall()
    assert values == [(0, 3.0, None, True), (1, None, None, False)]
    assert count(con, "SELECT taskToolCallCount FROM cells") == 3


def test_legacy_task_calls_count_only_integers_as_the_reference_does(tmp_path: Path) -> None:
    # A cast read "2", 2.5 and true as calls; `backfill_legacy` (the gate, the
    # frames, `capeval aggregate`) counts only integers, so the medians differed.
    odd: list[Any] = ["2", 2.5, True, None, 4]
    rows = [
        row("r", "v", "c", i, True, behaviors={"toolCallsByName": {"task": v, "spawn_agent": 1}})
        for i, v in enumerate(odd)
    ]
    write_jsonl(tmp_path / "r.jsonl", rows)
    stored = open_db()
    ingest(stored, [tmp_path])
    for con in (connect([tmp_path]), stored):
        values = con.execute('SELECT taskToolCallCount FROM repeats ORDER BY "repeat"').fetchall()
        assert [v for (v,) in values] == [1, 1, 1, 1, 5]
        median = aggregate(rows)[0]["behaviorStats"]["taskToolCallCount"]["median"]
        assert count(con, "SELECT taskToolCallCount FROM cells") == median == 1


# -- bad input ---------------------------------------------------------------------------


def test_a_broken_line_names_the_file_and_line(tmp_path: Path) -> None:
    good = json.dumps(row("r", "v", "c", 0, True))
    (tmp_path / "bad.jsonl").write_text(f"{good}\n{{not json\n{good}\n")
    with pytest.raises(ResultFileError, match=r"bad\.jsonl:2"):
        ingest(open_db(), [tmp_path / "bad.jsonl"])
    # Found in a folder, it is passed over with the same reason (one bad file
    # must not hide every other run of a folder).
    (reason,) = [r for p, r in ingest(open_db(), [tmp_path]).skipped if p.endswith("bad.jsonl")]
    assert re.search(r"bad\.jsonl:2", reason)
    # Scanned without copying, the file is read when queried; DuckDB names it.
    con = connect([tmp_path])
    with pytest.raises(duckdb.Error, match=r"bad\.jsonl"):
        con.execute("SELECT count(*) FROM runs").fetchall()


def test_a_mistyped_field_names_the_file(tmp_path: Path) -> None:
    bad = row("r", "v", "c", 0, True, turnsUsed="many")
    (tmp_path / "typed.jsonl").write_text(json.dumps(bad) + "\n")
    with pytest.raises(ResultFileError, match=r"typed\.jsonl"):
        ingest(open_db(), [tmp_path / "typed.jsonl"])
    assert [Path(p).name for p, _ in ingest(open_db(), [tmp_path]).skipped] == ["typed.jsonl"]


def test_scan_and_ingest_agree_on_every_view() -> None:
    scanned, stored = connect([SAMPLES]), open_db()
    ingest(stored, [SAMPLES])
    for view, key in (
        ("repeats", 'runId, variantId, id, "repeat"'),
        ("cells", "runId, resultKey"),
        ("runs", "runId"),
    ):
        sql = (
            f"SELECT * EXCLUDE (source) FROM {view} ORDER BY {key}"
            if view == "repeats"
            else f"SELECT * FROM {view} ORDER BY {key}"
        )
        assert records(scanned, sql) == records(stored, sql), view


def test_a_failed_ingest_changes_nothing(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "a.jsonl", [row("r", "v", "c", 0, True)])
    con = open_db(tmp_path / "h.duckdb")
    ingest(con, [tmp_path])
    write_jsonl(tmp_path / "b.jsonl", [row("r2", "v", "c", 0, True)])
    (tmp_path / "c.jsonl").write_text('{"id": "c", "passed": true, "variantId": 3}\n{oops\n{}\n')
    with pytest.raises(ResultFileError):
        ingest(con, [tmp_path / "b.jsonl", tmp_path / "c.jsonl"])
    assert count(con, "SELECT count(*) FROM result_rows") == 1
    assert count(con, "SELECT count(*) FROM result_files") == 1


def test_other_json_files_are_skipped_not_fatal(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "run.jsonl", [row("r", "v", "c", 0, True)])
    (tmp_path / "run.jsonl.plan.json").write_text('{"cases": [], "runId": "r"}')
    (tmp_path / "paperclip.jsonl").write_text('{"caseId": "ap-1", "group": "ap", "passed": true}\n')
    (tmp_path / "notes.json").write_text('{"hello": "world"}')
    assert discover([tmp_path]) == sorted(
        p.resolve()
        for p in (tmp_path / "run.jsonl", tmp_path / "paperclip.jsonl", tmp_path / "notes.json")
    )
    con = open_db()
    report = ingest(con, [tmp_path])
    assert report.rows_added == 1
    assert sorted(Path(p).name for p, _ in report.skipped) == ["notes.json", "paperclip.jsonl"]


def test_a_missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match="no such file"):
        connect([tmp_path / "nope"])


# -- the command ------------------------------------------------------------------------------


@pytest.mark.slow
def test_history_command_lists_each_run_once() -> None:
    proc = capeval("history", str(SAMPLES), "--json")
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    ids = sorted({r["runId"] for r in sample_rows()})
    assert [r["runId"] for r in payload["runs"]] == ids
    assert payload["ingest"]["rowsAdded"] > len(sample_rows())  # both copies stored, one counted
    table = capeval("history", str(SAMPLES))
    assert table.returncode == 0
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["runId", "startedAt", "variants"]
    assert [line.split()[0] for line in lines[1:]] == ids


def test_history_command_db_is_incremental(tmp_path: Path) -> None:
    db = tmp_path / "h.duckdb"
    first = capeval("history", str(SAMPLES), "--db", str(db))
    second = capeval("history", str(SAMPLES), "--db", str(db), "--json")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert "rows added" in first.stderr
    assert json.loads(second.stdout)["ingest"]["rowsAdded"] == 0
    assert len(json.loads(second.stdout)["runs"]) == len({r["runId"] for r in sample_rows()})


def test_history_command_defaults_to_the_workspace_results(tmp_path: Path) -> None:
    (tmp_path / "evals" / "capability" / "cases").mkdir(parents=True)
    results = tmp_path / "evals" / "capability" / "results"
    write_jsonl(results / "r.jsonl", [row("only-run", "v", "c", 0, True)])
    proc = capeval("history", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [r["runId"] for r in json.loads(proc.stdout)["runs"]] == ["only-run"]


def test_history_command_bad_file_exits_2_naming_it(tmp_path: Path) -> None:
    (tmp_path / "broken.jsonl").write_text(
        '{"id": "c", "variantId": "v", "passed": true}\n{nope\n{}\n'
    )
    proc = capeval("history", str(tmp_path / "broken.jsonl"))
    assert proc.returncode == 2
    assert "broken.jsonl:2" in proc.stderr
    in_folder = capeval("history", str(tmp_path))
    assert in_folder.returncode == 0 and "skipped" in in_folder.stderr
    assert "broken.jsonl:2" in in_folder.stderr


def test_command_modules_import_no_heavy_library() -> None:
    code = (
        "import sys, capeval.commands.history, capeval.commands.query, capeval.commands.plot\n"
        "heavy = {'duckdb', 'polars', 'scipy', 'matplotlib'} & set(sys.modules)\n"
        "print(sorted(heavy))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "[]", proc.stderr


def test_start_times_with_an_offset_are_converted_to_utc(tmp_path: Path) -> None:
    # A cast to TIMESTAMP dropped the offset: A (04:00Z next day) sorted before B.
    rows = [
        row("A", "v", "c", 0, True, runStartedAt="2026-01-01T20:00:00-08:00"),
        row("B", "v", "c", 0, True, runStartedAt="2026-01-02T00:00:00+09:00"),
        row("C", "v", "c", 0, True, runStartedAt="2026-01-01T01:00:00.5Z"),
        row("D", "v", "c", 0, True, runStartedAt="2026-01-01T02:00:00"),  # no offset: UTC
    ]
    write_jsonl(tmp_path / "r.jsonl", rows)
    for con in (connect([tmp_path]), connect([tmp_path], tmp_path / "h.duckdb")):
        con.execute("SET TimeZone = 'Asia/Tokyo'")  # the session's zone must not matter
        got = con.execute(
            "SELECT runId, strftime(startedAt, '%Y-%m-%dT%H:%M:%S') FROM runs ORDER BY startedAt"
        ).fetchall()
        assert got == [
            ("C", "2026-01-01T01:00:00"),
            ("D", "2026-01-01T02:00:00"),
            ("B", "2026-01-01T15:00:00"),
            ("A", "2026-01-02T04:00:00"),
        ]
        con.close()


def test_an_edit_in_place_that_keeps_the_size_replaces_the_rows(tmp_path: Path) -> None:
    # Only the last 256 bytes were compared: this edit was "grown" by 0 rows.
    stream = tmp_path / "run.jsonl"
    write_jsonl(stream, [row("r1", "v", "c", i, True) for i in range(6)])
    con = open_db(tmp_path / "h.duckdb")
    ingest(con, [tmp_path])
    text = stream.read_text()
    edited = text.replace('"passed": true', '"passed":false', 1)  # the same size
    assert len(edited) == len(text)
    stream.write_text(edited)
    report = ingest(con, [tmp_path])
    assert (report.files_replaced, report.files_grown) == (1, 0)
    assert count(con, "SELECT count(*) FROM repeats WHERE NOT passed") == 1


def test_an_edit_before_an_append_is_not_missed(tmp_path: Path) -> None:
    stream = tmp_path / "run.jsonl"
    write_jsonl(stream, [row("r1", "v", "c", i, True) for i in range(3)])
    con = open_db(tmp_path / "h.duckdb")
    ingest(con, [tmp_path])
    stream.write_text(stream.read_text().replace('"passed": true', '"passed": false', 1))
    write_jsonl(stream, [row("r1", "v", "c", 3, True)])  # and a new row appended
    report = ingest(con, [tmp_path])
    assert report.files_replaced == 1
    assert count(con, "SELECT count(*) FROM repeats") == 4
    assert count(con, "SELECT count(*) FROM repeats WHERE NOT passed") == 1


def test_rows_of_a_deleted_file_stay_and_the_ingest_says_so(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_jsonl(results / "a.jsonl", [row("ra", "v", "c", 0, True)])
    write_jsonl(results / "b.jsonl", [row("rb", "v", "c", 0, True)])
    con = open_db(tmp_path / "h.duckdb")
    ingest(con, [results])
    (results / "a.jsonl").unlink()
    report = ingest(con, [results])
    assert report.files_gone == [str((results / "a.jsonl").resolve())]
    assert count(con, "SELECT count(DISTINCT runId) FROM repeats") == 2
    con.close()
    proc = capeval("history", str(results), "--db", str(tmp_path / "h.duckdb"))
    assert "kept the rows of 1 file(s) no longer on disk" in proc.stderr


@pytest.mark.parametrize("value", ["yes", "true", 1])
def test_a_passed_that_is_not_a_boolean_is_refused_as_everywhere_else(
    tmp_path: Path, value: object
) -> None:
    # A BOOLEAN column read "yes", "true" and 1 as passes that aggregate and the gate refuse.
    stream = tmp_path / "r.jsonl"
    write_jsonl(stream, [row("r1", "v", "c", 0, True), row("r1", "v", "c", 1, True)])
    text = stream.read_text().splitlines()
    text[1] = text[1].replace('"passed": true', f'"passed": {json.dumps(value)}')
    stream.write_text("\n".join(text) + "\n")
    for args in (("query", "SELECT count_if(passed) FROM repeats", "--from", str(stream)),
                 ("history", str(stream), "--db", str(tmp_path / "h.duckdb"))):  # fmt: skip
        proc = capeval(*args)
        assert proc.returncode == 2, proc.stdout
        assert "r.jsonl:2: field 'passed' must be true or false" in proc.stderr


def test_other_json_in_a_results_folder_is_skipped_not_fatal(tmp_path: Path) -> None:
    # A Paperclip report or a case.json (pretty-printed) aborted history, query and plot.
    write_jsonl(tmp_path / "run.jsonl", [row("r1", "v", "c", 0, True)])
    (tmp_path / "eval-parity-report.json").write_text(json.dumps({"verdict": "pass"}, indent=2))
    (tmp_path / "case.json").write_text(json.dumps({"id": "c", "prompt": "p"}, indent=2))
    proc = capeval("history", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "skipped" in proc.stderr and "eval-parity-report.json" in proc.stderr
    assert "r1" in proc.stdout
    # Under the working directory, the skipped file is named as the user would type it.
    proc = capeval("history", ".", cwd=tmp_path)
    assert "skipped eval-parity-report.json: " in proc.stderr, proc.stderr


def test_a_row_stream_with_a_damaged_first_line_is_an_error_not_skipped(tmp_path: Path) -> None:
    # Was sniffed as "not a result file" (its first line is no JSON), so every
    # later row vanished from history, queries and plots without an error.
    good = json.dumps(row("r", "v", "c", 0, True))
    (tmp_path / "run.jsonl").write_text('{"id": "c", "pas\n' + good + "\n")
    with pytest.raises(ResultFileError, match=r"run\.jsonl:1"):
        ingest(open_db(), [tmp_path / "run.jsonl"])  # what the commands do
    # In a folder: passed over, and said so with the line, never silently.
    (reason,) = [r for _, r in ingest(open_db(), [tmp_path]).skipped]
    assert "run.jsonl:1" in reason
    # An indented line of a pretty-printed document is no row: still skipped.
    (tmp_path / "run.jsonl").unlink()
    (tmp_path / "report.json").write_text(
        '{\n  "rows": [\n    {"id": "c", "passed": true}\n  ]\n}\n'
    )
    report = ingest(open_db(), [tmp_path])
    assert [Path(p).name for p, _ in report.skipped] == ["report.json"]


def test_a_first_row_longer_than_the_sniffed_head_is_still_a_row(tmp_path: Path) -> None:
    # The first row was judged by its first 64 KiB alone: cut, it was no JSON
    # and no later line was in the head, so the whole stream was skipped as
    # "not a result file" while `load_frame` and the gate read every row.
    rows = [row("r1", "v", "c", 0, False, error="x" * 70_000), row("r1", "v", "c", 1, True)]
    write_jsonl(tmp_path / "run.jsonl", rows)
    report = ingest(con := open_db(), [tmp_path])
    assert report.skipped == []
    assert count(con, "SELECT count(*) FROM repeats") == 2
    assert count(connect([tmp_path]), "SELECT count(*) FROM repeats") == 2


def test_rows_without_a_repeat_number_are_each_counted(tmp_path: Path) -> None:
    # `repeat` is optional in a row; three unnumbered repeats of one cell are
    # three repeats, as `capeval aggregate` counts them, never folded into one.
    rows = [row("r1", "v", "c", i, passed) for i, passed in enumerate((True, False, True))]
    for r in rows:
        del r["repeat"]
    write_jsonl(tmp_path / "old.jsonl", rows)
    expected = aggregate(read_rows(tmp_path / "old.jsonl"))[0]
    assert (expected["repeats"], expected["passCount"]) == (3, 2)
    scanned, stored = connect([tmp_path]), open_db()
    ingest(stored, [tmp_path])
    for con in (scanned, stored):
        assert count(con, "SELECT count(*) FROM repeats") == 3
        cell = records(con, "SELECT repeats, passCount FROM cells")
        assert cell == [{"repeats": 3, "passCount": 2}]
        assert records(con, "SELECT repeats, passed FROM runs") == [{"repeats": 3, "passed": 2}]


def test_a_path_with_glob_characters_is_read_as_named(tmp_path: Path) -> None:
    # DuckDB expands `[1]` in a file name as a pattern: `run[1]/r.jsonl` read
    # `run1/r.jsonl` instead (another run), or nothing at all.
    (tmp_path / "run[1]").mkdir()
    (tmp_path / "run1").mkdir()
    write_jsonl(tmp_path / "run[1]" / "r.jsonl", [row("bracketed", "v", "c", 0, True)])
    write_jsonl(tmp_path / "run1" / "r.jsonl", [row("plain", "v", "c", 0, False)])
    scanned, stored = connect([tmp_path / "run[1]"]), open_db()
    ingest(stored, [tmp_path])
    assert records(scanned, "SELECT runId, passed FROM repeats") == [
        {"runId": "bracketed", "passed": True}
    ]
    assert records(stored, "SELECT runId, source FROM repeats ORDER BY runId") == [
        {"runId": "bracketed", "source": str(tmp_path / "run[1]" / "r.jsonl")},
        {"runId": "plain", "source": str(tmp_path / "run1" / "r.jsonl")},
    ]


def test_connect_takes_one_path_bare_as_load_frame_does(tmp_path: Path) -> None:
    # A lone str was iterated: "no such file or folder" for its first letter.
    from capeval.analysis.history import connect as connect_to
    from capeval.analysis.history import runs as runs_of

    for one in (str(SAMPLES), SAMPLES):
        con = connect_to(one)
        assert len(runs_of(con)) == 4
        con.close()
        con = connect_to(one, db=tmp_path / "h.duckdb")
        assert len(runs_of(con)) == 4
        con.close()


class _CountingConnection:
    """A DuckDB connection that counts the statements run through it."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.statements = 0

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        self.statements += 1
        return self.con.execute(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.con, name)


def test_ingest_statements_do_not_grow_with_the_number_of_files(tmp_path: Path) -> None:
    # One INSERT per file, each counting rows over the whole table, made an
    # ingest of 1,500 small runs take 30 s more than reading them.
    def statements(files: int) -> int:
        folder = tmp_path / f"n{files}"
        folder.mkdir()
        for i in range(files):
            write_jsonl(folder / f"r{i}.jsonl", [row(f"r{i}", "v", "c", 0, True)])
        con = _CountingConnection(open_db())
        report = ingest(con, [folder])  # type: ignore[arg-type]
        assert report.rows_added == files
        assert con.execute("SELECT sum(rowCount), count(*) FROM result_files").fetchone() == (
            files,
            files,
        )
        return con.statements

    assert statements(2) == statements(20)


def test_a_malformed_file_in_a_folder_is_skipped_with_the_reason(tmp_path: Path) -> None:
    # One bad file among many aborted `capeval history DIR` (exit 2): every other
    # run went unlisted. Named directly, it is still an error.
    import shutil

    shutil.copy(SAMPLES / "run1-dev-sloppy.jsonl", tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": "x", "resultKey": "v::x", "variantId": "v", "repeat": 0, "passed": "maybe"}\n'
    )
    proc = capeval("history", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "20261130T165948Z-94d20f" in proc.stdout
    assert (
        f"skipped {bad}: unreadable: {bad}:1: field 'passed' must be true or false" in proc.stderr
    )
    named = capeval("history", bad)
    assert named.returncode == 2 and "field 'passed' must be true or false" in named.stderr


def test_a_torn_last_line_longer_than_the_head_is_left_as_the_gate_leaves_it(
    tmp_path: Path,
) -> None:
    # A torn last line past 64 MiB made history refuse a stream that gate and
    # aggregate read (skipping the torn line, with a warning).
    stream = tmp_path / "run.jsonl"
    write_jsonl(stream, [row("r", "v", "c", 0, True)])
    with stream.open("a") as handle:
        handle.write('{"id": "c", "text": "' + "a" * (65 << 20))
    report = ingest(open_db(), [stream])
    assert report.rows_added == 1
    assert any("the last line is incomplete" in w for w in report.warnings)


def test_a_rows_own_run_start_wins_over_its_v3_header(tmp_path: Path) -> None:
    # A v3 file merged from runs dates itself once; each row keeps its own run's start.
    rows = [
        row("r1", "a", "x", 0, True, runStartedAt="2026-03-01T10:00:00.000Z"),
        row("r2", "a", "x", 0, False, runStartedAt="2026-03-02T10:00:00.000Z"),
    ]
    path = tmp_path / "merged.json"
    write_v3(path, rows, started_at="2026-05-05T05:05:05.000Z", finished_at=None)
    con = connect([tmp_path])
    started = {r["runId"]: r["startedAt"] for r in records(con, "SELECT * FROM runs")}
    assert started == {"r1": "2026-03-01T10:00:00.000Z", "r2": "2026-03-02T10:00:00.000Z"}
    frame = load_frame(path)
    assert dict(zip(frame["runId"], frame["runStartedAt"], strict=True)) == {
        "r1": "2026-03-01T10:00:00.000Z",
        "r2": "2026-03-02T10:00:00.000Z",
    }


def test_a_row_without_result_key_is_the_cell_variant_and_case(tmp_path: Path) -> None:
    # Older rows carry no resultKey; their cell is `<variant>::<case>`, as the gate names it.
    legacy = row("r1", "base", "fix-bug", 0, True)
    del legacy["resultKey"]
    write_jsonl(tmp_path / "r1.jsonl", [legacy])
    con = connect([tmp_path])
    assert records(con, "SELECT resultKey, variantId, caseId FROM cells") == [
        {"resultKey": "base::fix-bug", "variantId": "base", "caseId": "fix-bug"}
    ]


def test_a_runs_wall_time_ends_at_its_v3_header_finish(tmp_path: Path) -> None:
    # Rows of older writers carry no finishedAt: the file's header dates the run's end.
    rows = [row("r1", "a", "x", i, True) for i in range(2)]
    write_v3(
        tmp_path / "r1.json",
        rows,
        started_at="2026-01-02T03:04:05.000Z",
        finished_at="2026-01-02T03:14:05.000Z",
    )
    found = records(connect([tmp_path]), "SELECT finishedAt, wallMs FROM runs")
    assert found == [{"finishedAt": "2026-01-02T03:14:05.000Z", "wallMs": 600000}]


def test_run_artifact_folders_are_not_searched_for_results(tmp_path: Path) -> None:
    # The runner keeps agent streams beside a run in `<run>.artifacts/`; they are no results.
    write_jsonl(tmp_path / "r1.jsonl", [row("r1", "a", "x", 0, True)])
    evidence = tmp_path / "r1.artifacts" / "a__x__0"
    evidence.mkdir(parents=True)
    (evidence / "agent.jsonl").write_text('{"type": "turn", "text": "hi"}\n')
    (evidence / "summary.json").write_text('{"turns": 1}\n')
    assert discover([tmp_path]) == [(tmp_path / "r1.jsonl").resolve()]
    report = ingest(open_db(), [tmp_path])
    assert (report.files_seen, report.skipped) == (1, [])


def test_a_rewritten_v3_file_replaces_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "r1.json"
    started = "2026-01-02T03:04:05.000Z"
    write_v3(path, [row("r1", "a", "x", 0, False)], started_at=started, finished_at=None)
    con = open_db(tmp_path / "h.duckdb")
    ingest(con, [tmp_path])
    rerun = [row("r1", "a", "x", 0, True, durationMs=5), row("r1", "a", "x", 1, True)]
    write_v3(path, rerun, started_at=started, finished_at=None)
    report = ingest(con, [tmp_path])
    assert report.files_replaced == 1
    assert records(con, "SELECT passed, count(*) AS n FROM result_rows GROUP BY passed") == [
        {"passed": True, "n": 2}
    ]
    assert records(con, "SELECT passCount, repeats FROM cells") == [{"passCount": 2, "repeats": 2}]
