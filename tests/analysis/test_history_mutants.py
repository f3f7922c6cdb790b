"""History views and named queries: rules the other history tests left unpinned.

Each test here fails on a one-line break of the views, the named queries or
the frame loader that the rest of the suite let through (a mutation audit).
"""

from __future__ import annotations

from pathlib import Path

from capeval.analysis.frame import load_frame
from capeval.analysis.history import connect, ingest, open_db, records
from capeval.analysis.queries import find_query, format_table, list_queries, run_query
from capeval.results.discovery import discover
from capeval.results.v3 import write_v3
from tests.analysis.test_history import row, write_jsonl


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


def test_slowest_cases_lists_the_twenty_slowest_with_their_spread(tmp_path: Path) -> None:
    # 25 cases; case cNN takes NN seconds per repeat, plus 0, 1, 2, 3 or 4 s (p90 = NN + 3.6).
    rows = [
        row(
            "r1",
            "a",
            f"c{n:02d}",
            i,
            True,
            durationMs=(n + i) * 1000,
            agentDurationMs=(n + i) * 600,
            verifyDurationMs=(n + i) * 100,
        )
        for n in range(25)
        for i in range(5)
    ]
    write_jsonl(tmp_path / "r1.jsonl", rows)
    found = run_query(connect([tmp_path]), "slowest_cases")
    assert [r["caseId"] for r in found] == [f"c{n:02d}" for n in range(24, 4, -1)]
    top = found[0]
    assert (top["runs"], top["repeats"]) == (1, 5)
    assert top["medianSeconds"] == 26
    assert abs(top["p90Seconds"] - 27.6) < 1e-9
    assert top["maxSeconds"] == 28
    assert abs(top["medianAgentSeconds"] - 15.6) < 1e-9
    assert abs(top["medianVerifySeconds"] - 2.6) < 1e-9


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


def test_a_workspace_query_overrides_a_builtin_of_the_same_name(tmp_path: Path) -> None:
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "flaky_cells.sql").write_text("-- Ours.\nSELECT 7 AS n\n")
    query = find_query("flaky_cells", tmp_path)
    assert (query.summary, query.path) == ("Ours.", tmp_path / "analysis" / "flaky_cells.sql")
    assert [q for q in list_queries(tmp_path) if q.name == "flaky_cells"] == [query]


def test_the_query_table_writes_booleans_and_nulls_as_json_does() -> None:
    table = format_table([{"ok": True, "bad": False, "n": None, "x": 0.123456}])
    assert table.splitlines()[1].split() == ["true", "false", "-", "0.1235"]
