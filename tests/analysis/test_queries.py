"""Named queries: each one's answer on the sample history, computed independently."""

from __future__ import annotations

import itertools
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from capeval.analysis.history import VIEWS, connect
from capeval.analysis.queries import (
    QueryFileError,
    QueryNotFound,
    find_query,
    format_table,
    is_name,
    list_queries,
    query_frame,
    run_query,
)
from capeval.core.aggregate import median
from capeval.core.metrics import METRIC_NAMES, NUMERIC_METRICS
from tests.analysis.test_history import SAMPLES, row, sample_rows, write_jsonl
from tests.clirun import capeval
from tests.specfacts import LOWER_IS_BETTER

REQUIRED = {
    "flaky_cells",
    "pass_rate_trend",
    "cost_per_pass",
    "behavior_drift",
    "bait_stopped",
    "slowest_cases",
}


@pytest.fixture(scope="module")
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    connection = connect([SAMPLES])
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def cells() -> dict[tuple[str, str, str], dict[str, Any]]:
    """(runId, variantId, caseId) -> repeats, passes, start, medians, bait; plain Python."""
    groups: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for r in sample_rows():
        groups[(r["runId"], r["variantId"], r["id"])].append(r)
    out = {}
    for key, rows in groups.items():
        medians = {}
        for metric in METRIC_NAMES:
            values = [r["behaviors"][metric] for r in rows if r["behaviors"] is not None]
            medians[metric] = median(values) if values else None
        out[key] = {
            "repeats": len(rows),
            "passes": sum(r["passed"] for r in rows),
            "start": rows[0]["runStartedAt"],
            "medians": medians,
            "bait": rows[0].get("bait"),
        }
    return out


def by_time(cells: dict, variant: str, case: str) -> list[tuple[str, dict]]:
    found = [(k[0], v) for k, v in cells.items() if k[1] == variant and k[2] == case]
    return sorted(found, key=lambda item: (item[1]["start"], item[0]))


def test_the_required_queries_exist_and_document_their_columns(
    con: duckdb.DuckDBPyConnection,
) -> None:
    queries = {q.name: q for q in list_queries()}
    assert set(queries) >= REQUIRED
    for query in queries.values():
        assert query.summary, f"{query.path.name}: no comment header"
        documented = query.doc.split("Columns:", 1)[1]
        # Each line: "  name, name    what they mean"; names come before the gap.
        names = [
            n
            for line in documented.splitlines()
            for n in re.findall(r"[A-Za-z][A-Za-z0-9]*", line.strip().split("  ")[0])
        ]
        columns = [d[0] for d in con.execute(query.sql).description]
        assert set(columns) <= set(names), f"{query.name}: undocumented {set(columns) - set(names)}"


def test_flaky_cells(con: duckdb.DuckDBPyConnection, cells: dict) -> None:
    expected = sorted(
        (k[0], k[1], k[2], v["passes"]) for k, v in cells.items() if 0 < v["passes"] < v["repeats"]
    )
    found = sorted(
        (r["runId"], r["variantId"], r["caseId"], r["passCount"])
        for r in run_query(con, "flaky_cells")
    )
    assert found == expected
    assert found, "the samples are meant to show flaky cells"
    listed = [
        (r["runStartedAt"], r["runId"], r["variantId"], r["caseId"])
        for r in run_query(con, "flaky_cells")
    ]
    assert listed == sorted(listed) and len({r[1] for r in listed}) > 1  # oldest run first


def test_pass_rate_trend(con: duckdb.DuckDBPyConnection, cells: dict) -> None:
    found = run_query(con, "pass_rate_trend")
    expected = []
    for variant, case in sorted({(k[1], k[2]) for k in cells}):
        previous = None
        for run_id, cell in by_time(cells, variant, case):
            rate = cell["passes"] / cell["repeats"]
            change = None if previous is None else rate - previous
            expected.append((variant, case, run_id, rate, previous, change))
            previous = rate
    assert len(found) == len(expected)
    for got_row, want in zip(found, expected, strict=True):
        got = (got_row["variantId"], got_row["caseId"], got_row["runId"])
        assert got == want[:3]
        assert got_row["passRate"] == pytest.approx(want[3])
        assert got_row["previousPassRate"] == (None if want[4] is None else pytest.approx(want[4]))
        assert got_row["change"] == (None if want[5] is None else pytest.approx(want[5]))
    assert any(row["change"] and row["change"] < 0 for row in found)


def test_cost_per_pass(con: duckdb.DuckDBPyConnection) -> None:
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in sample_rows():
        groups[(r["runId"], r["variantId"])].append(r)
    found = {(r["runId"], r["variantId"]): r for r in run_query(con, "cost_per_pass")}
    assert set(found) == set(groups)
    for key, rows in groups.items():
        passes = sum(r["passed"] for r in rows)
        row = found[key]
        assert (row["repeats"], row["passes"]) == (len(rows), passes)
        tokens = sum(r["tokenUsage"]["input"] for r in rows)
        assert row["tokenInputPerPass"] == pytest.approx(tokens / passes)
        output = sum(r["tokenUsage"]["output"] for r in rows)
        assert row["tokenOutputPerPass"] == pytest.approx(output / passes)
        seconds = sum(r["durationMs"] for r in rows) / 1000
        assert row["secondsPerPass"] == pytest.approx(seconds / passes)
        assert row["turnsPerPass"] == pytest.approx(sum(r["turnsUsed"] for r in rows) / passes)


def test_behavior_drift(con: duckdb.DuckDBPyConnection, cells: dict) -> None:
    expected = set()
    for variant, case in {(k[1], k[2]) for k in cells}:
        for metric in METRIC_NAMES:
            measured = [
                (run_id, cell["medians"][metric])
                for run_id, cell in by_time(cells, variant, case)
                if cell["medians"][metric] is not None
            ]
            for (before_run, before), (run_id, now) in itertools.pairwise(measured):
                if now == before:
                    continue
                if NUMERIC_METRICS[metric] == "lower":
                    verdict = "better" if now < before else "worse"
                else:
                    verdict = "neutral"
                expected.add((variant, case, metric, before_run, run_id, now - before, verdict))
    found = {
        (
            r["variantId"],
            r["caseId"],
            r["metric"],
            r["previousRunId"],
            r["runId"],
            r["delta"],
            r["verdict"],
        )
        for r in run_query(con, "behavior_drift")
    }
    assert found == expected
    assert {v[-1] for v in found} == {"better", "worse", "neutral"}


def test_bait_stopped(con: duckdb.DuckDBPyConnection, cells: dict) -> None:
    expected = set()
    for variant, case in {(k[1], k[2]) for k in cells}:
        history = [
            (run_id, cell["medians"][cell["bait"]["metric"]], cell["bait"]["threshold"])
            for run_id, cell in by_time(cells, variant, case)
            if cell["bait"] and cell["medians"][cell["bait"]["metric"]] is not None
        ]
        if not history:
            continue
        latest_run, latest, threshold = history[-1]
        reproduced = [h for h in history if h[1] > threshold]
        if latest <= threshold and reproduced:
            expected.add((variant, case, reproduced[-1][0], latest_run))
    found = {
        (r["variantId"], r["caseId"], r["lastReproducedRunId"], r["runId"])
        for r in run_query(con, "bait_stopped")
    }
    assert found == expected
    assert found, "the dev agent's baits stop reproducing once it is fixed"


def test_slowest_cases(con: duckdb.DuckDBPyConnection) -> None:
    durations: dict[str, list[float]] = defaultdict(list)
    for r in sample_rows():
        durations[r["id"]].append(r["durationMs"])
    expected = sorted(durations, key=lambda case: (-median(durations[case]), case))[:20]
    found = run_query(con, "slowest_cases")
    assert [r["caseId"] for r in found] == expected
    runs = defaultdict(set)
    agent: dict[str, list[float]] = defaultdict(list)
    verify: dict[str, list[float]] = defaultdict(list)
    for r in sample_rows():
        runs[r["id"]].add(r["runId"])
        agent[r["id"]].append(r["agentDurationMs"])
        verify[r["id"]].append(r["verifyDurationMs"])
    for r in found:
        values = durations[r["caseId"]]
        assert r["runs"] == len(runs[r["caseId"]]) < r["repeats"]
        assert r["repeats"] == len(values)
        assert r["medianSeconds"] == pytest.approx(median(values) / 1000)
        assert r["p90Seconds"] == pytest.approx(_interpolated(values, 0.9) / 1000)
        assert r["maxSeconds"] == pytest.approx(max(values) / 1000)
        assert r["medianAgentSeconds"] == pytest.approx(median(agent[r["caseId"]]) / 1000)
        assert r["medianVerifySeconds"] == pytest.approx(median(verify[r["caseId"]]) / 1000)


def _interpolated(values: list[float], q: float) -> float:
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def test_slowest_cases_lists_twenty_and_skips_repeats_without_a_time(tmp_path: Path) -> None:
    from tests.analysis.test_history import row, write_jsonl

    rows = [row("r1", "v", f"case{i:02}", 0, True, durationMs=1000 * i) for i in range(21)]
    rows.append(row("r1", "v", "case20", 1, True, durationMs=None))
    rows.append(row("r1", "v", "case19b", 0, True, durationMs=19000))  # a tie: by case id
    write_jsonl(tmp_path / "r1.jsonl", rows)
    found = run_query(connect([tmp_path]), "slowest_cases")
    expected = ["case20", "case19", "case19b", *(f"case{i:02}" for i in range(18, 1, -1))]
    assert [r["caseId"] for r in found] == expected
    assert (found[0]["repeats"], found[0]["medianSeconds"]) == (1, 20)


def test_raw_sql_and_frames(con: duckdb.DuckDBPyConnection) -> None:
    assert run_query(con, "SELECT count(*) AS n FROM repeats") == [{"n": len(sample_rows())}]
    frame = query_frame(con, "flaky_cells")
    assert frame.columns[:3] == ["runId", "runStartedAt", "variantId"]
    assert frame.height == len(run_query(con, "flaky_cells"))


def test_names_and_lookup() -> None:
    assert is_name("flaky_cells") and is_name("flaky_cells.sql")
    assert not is_name("SELECT 1") and not is_name("select * from runs")
    assert find_query("flaky_cells.sql").name == "flaky_cells"
    with pytest.raises(QueryNotFound, match=r"named queries: .*flaky_cells"):
        find_query("flakey")


def test_a_workspace_query_overrides_and_adds(tmp_path: Path) -> None:
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "mine.sql").write_text("-- Mine.\nSELECT 42 AS answer\n")
    names = {q.name for q in list_queries(tmp_path)}
    assert "mine" in names and names >= REQUIRED
    assert find_query("mine", tmp_path).summary == "Mine."
    # The project's own file of a built-in query's name is the one that runs.
    (tmp_path / "analysis" / "flaky_cells.sql").write_text("-- Ours.\nSELECT 1 AS one\n")
    ours = find_query("flaky_cells", tmp_path)
    assert (ours.summary, ours.path.parent) == ("Ours.", tmp_path / "analysis")
    assert [q.name for q in list_queries(tmp_path)].count("flaky_cells") == 1


def test_a_query_file_in_another_encoding_is_named_not_a_traceback(tmp_path: Path) -> None:
    # Every query is read to find one: a latin-1 file (or a folder named
    # x.sql) ended every `capeval query NAME` in a UnicodeDecodeError traceback.
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "cafe.sql").write_bytes(b"-- caf\xe9.\nSELECT 1\n")
    (tmp_path / "analysis" / "folder.sql").mkdir()
    with pytest.raises(QueryFileError, match=r"cafe\.sql: not UTF-8 text .*save it as UTF-8"):
        list_queries(tmp_path)
    for args in (["--list"], ["flaky_cells", "--from", str(SAMPLES)]):
        done = capeval("query", *args, "--root", str(tmp_path))
        assert done.returncode == 2, done.stderr
        assert "cafe.sql: not UTF-8 text" in done.stderr and "Traceback" not in done.stderr
    (tmp_path / "analysis" / "cafe.sql").unlink()
    assert {q.name for q in list_queries(tmp_path)} >= REQUIRED  # the folder is no query


# -- the command ------------------------------------------------------------------------


@pytest.mark.slow
def test_query_command_named_and_raw(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    named = capeval("query", "flaky_cells", "--from", str(SAMPLES), "--json")
    assert named.returncode == 0, named.stderr
    assert json.loads(named.stdout) == run_query(con, "flaky_cells")
    table = capeval("query", "SELECT runId, rows FROM runs ORDER BY runId", "--from", str(SAMPLES))
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["runId", "rows"]
    assert len(lines) == 1 + len({r["runId"] for r in sample_rows()})
    db = tmp_path / "h.duckdb"
    assert capeval("history", str(SAMPLES), "--db", str(db)).returncode == 0
    stored = capeval("query", "flaky_cells", "--db", str(db), "--json")
    assert json.loads(stored.stdout) == json.loads(named.stdout)


def test_the_listed_views_are_the_views(con: duckdb.DuckDBPyConnection) -> None:
    views = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    made = {r[0] for r in views}
    assert set(VIEWS) <= made and made - set(VIEWS) == {"result_rows"}


def test_query_command_errors_exit_2() -> None:
    unknown = capeval("query", "flakey", "--from", str(SAMPLES))
    assert unknown.returncode == 2
    assert "no named query 'flakey'" in unknown.stderr and "flaky_cells" in unknown.stderr
    bad = capeval("query", "SELECT nope FROM runs", "--from", str(SAMPLES))
    assert bad.returncode == 2
    assert "nope" in bad.stderr and "the views are" not in bad.stderr
    no_table = capeval("query", "SELECT * FROM repeat", "--from", str(SAMPLES))
    assert no_table.returncode == 2
    assert "(the views are repeats, cells, cell_metrics, runs, metric_directions;" in (
        no_table.stderr
    )
    listing = capeval("query", "--list")
    assert listing.returncode == 0
    assert {line.split()[0] for line in listing.stdout.splitlines()} >= REQUIRED


def test_cost_per_pass_divides_the_agents_reported_cost(tmp_path: Path) -> None:
    from tests.analysis.test_history import row, write_jsonl

    priced = [row("r1", "claude", "c", i, i < 2, costUsd=0.5) for i in range(3)]
    unpriced = [row("r1", "codex", "c", i, True) for i in range(2)]
    write_jsonl(tmp_path / "r1.jsonl", priced + unpriced)
    con = connect([tmp_path])
    found = {r["variantId"]: r for r in run_query(con, "cost_per_pass")}
    assert found["claude"]["costUsdPerPass"] == pytest.approx(1.5 / 2)  # failures paid for too
    assert found["codex"]["costUsdPerPass"] is None  # no cost stated, not zero


def test_query_json_writes_uuid_and_blob_values(tmp_path: Path) -> None:
    from tests.analysis.test_history import row, write_jsonl

    write_jsonl(tmp_path / "r.jsonl", [row("r1", "v", "c", 0, True)])
    sql = "SELECT '00000000-0000-0000-0000-000000000001'::UUID AS u, '\\xAA'::BLOB AS b"
    proc = capeval("query", sql, "--from", str(tmp_path / "r.jsonl"), "--json")
    assert proc.returncode == 0, proc.stderr  # was: TypeError, not JSON serializable
    assert json.loads(proc.stdout) == [{"u": "00000000-0000-0000-0000-000000000001", "b": "aa"}]


@pytest.mark.slow
def test_query_command_names_files_it_skipped(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text('{"hello": "world"}')
    proc = capeval("query", "flaky_cells", "--from", str(tmp_path))
    assert proc.returncode == 0 and "(no rows)" in proc.stdout
    assert "skipped" in proc.stderr and "report.json" in proc.stderr  # was silent


def test_a_join_keeps_both_columns_of_a_repeated_name() -> None:
    # cells JOIN runs returns passRate twice; the run's used to overwrite the cell's.
    con = connect([SAMPLES])
    sql = (
        "SELECT c.passRate, r.passRate, c.passRate AS passRate_1 FROM cells c "
        "JOIN runs r USING (runId) WHERE c.passCount < c.repeats ORDER BY c.resultKey, runId"
    )
    records = run_query(con, sql)
    frame = query_frame(con, sql)
    con.close()
    assert frame.columns == ["passRate", "passRate_2", "passRate_1"]
    assert records and list(records[0]) == frame.columns
    for record in records:
        assert record["passRate"] < 1 and record["passRate"] == record["passRate_1"]
        assert record["passRate_2"] != record["passRate"]  # the run's rate, kept apart
    assert frame.to_dicts() == [{k: float(v) for k, v in r.items()} for r in records]


def test_queries_order_runs_by_time_and_skip_runs_without_behaviors(tmp_path: Path) -> None:
    """Run ids that do not sort by time, and runs whose streams were lost.

    The samples' run ids start with their start time, so ordering by id
    would pass there; here ids run backwards. A run with no behaviors must
    be skipped (never a gap that hides a change, never the bait's "latest").
    """
    from tests.analysis.test_history import row, write_jsonl

    bait = {"metric": "networkCommandCount", "threshold": 0}
    history = [  # (runId, day, passed, networkCommandCount or None for a lost stream)
        ("r-e", 1, True, 2),
        ("r-d", 2, False, None),
        ("r-c", 3, True, 3),
        ("r-b", 4, False, 0),
        ("r-a", 5, True, None),
    ]
    for run, day, passed, network in history:
        behaviors = None if network is None else {"networkCommandCount": network}
        started = f"2026-01-0{day}T00:00:00.000Z"
        rows = [row(run, "v", "web-bait", 0, passed, behaviors=behaviors, bait=bait)]
        write_jsonl(tmp_path / f"{run}.jsonl", [{**r, "runStartedAt": started} for r in rows])
    con = connect([tmp_path])

    trend = run_query(con, "pass_rate_trend")
    assert [(r["runId"], r["previousPassRate"]) for r in trend] == [
        ("r-e", None),
        ("r-d", 1),
        ("r-c", 0),
        ("r-b", 1),
        ("r-a", 0),
    ]

    drift = run_query(con, "behavior_drift")
    assert [
        (r["previousRunId"], r["runId"], r["delta"], r["verdict"])
        for r in drift
        if r["metric"] == "networkCommandCount"
    ] == [("r-e", "r-c", 1, "worse"), ("r-c", "r-b", -3, "better")]

    stopped = run_query(con, "bait_stopped")
    assert [
        (r["lastReproducedRunId"], r["lastReproducedMedian"], r["runId"], r["median"])
        for r in stopped
    ] == [("r-c", 3, "r-b", 0)]
    con.close()


def test_cost_per_pass_is_null_when_nothing_passed(tmp_path: Path) -> None:
    # DuckDB divides by zero to Infinity: a variant that never passed would
    # read as costing infinitely much instead of "no pass to cost".
    from tests.analysis.test_history import row, write_jsonl

    write_jsonl(
        tmp_path / "r1.jsonl", [row("r1", "v", "c", i, False, costUsd=0.5) for i in range(2)]
    )
    con = connect([tmp_path])
    # Not `run_query`: its JSON-ready records already turn Infinity into null.
    (found,) = query_frame(con, "cost_per_pass").to_dicts()
    con.close()
    assert (found["repeats"], found["passes"]) == (2, 0)
    per_pass = [c for c in found if c.endswith("PerPass")]
    assert len(per_pass) == 5
    assert all(found[c] is None for c in per_pass), found


@pytest.mark.parametrize(
    "sql",
    [
        "COPY (SELECT * FROM repeats) TO '{out}'",
        "SELECT * FROM read_csv('{secret}')",
        "ATTACH '{out}' AS other",
        "INSTALL httpfs",
        "SET enable_external_access = true",
    ],
)
def test_a_query_reaches_no_file_network_or_extension(tmp_path: Path, sql: str) -> None:
    # The docs say a query only reads; COPY ... TO wrote anywhere, INSTALL reached the network.
    out = tmp_path / "written.csv"
    secret = tmp_path / "secret.csv"
    secret.write_text("token\nhunter2\n")
    proc = capeval("query", "--from", SAMPLES, sql.format(out=out, secret=secret))
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stderr and "hunter2" not in proc.stdout
    assert not out.exists()


def test_a_named_query_of_the_workspace_cannot_write_either(tmp_path: Path) -> None:
    queries = tmp_path / "analysis"
    queries.mkdir()
    out = tmp_path / "leak.csv"
    (queries / "leak.sql").write_text(f"-- Leaks the rows.\nCOPY (SELECT 1) TO '{out}'\n")
    (tmp_path / "evals" / "capability" / "cases").mkdir(parents=True)
    proc = capeval("query", "--root", tmp_path, "--from", SAMPLES, "leak")
    assert proc.returncode == 2 and "a query only reads the history views" in proc.stderr
    assert not out.exists()


def test_the_case_column_is_caseid_in_every_view() -> None:
    # `id` in repeats and `caseId` in cells made a join of the two a puzzle.
    con = connect([SAMPLES])
    for view in ("repeats", "cells", "cell_metrics"):
        columns = {row[0] for row in con.execute(f"DESCRIBE {view}").fetchall()}
        assert "caseId" in columns, view
    joined = con.execute(
        "SELECT count(*) FROM repeats r JOIN cells c USING (runId, resultKey, caseId)"
    ).fetchone()
    assert (
        joined is not None
        and joined[0] == con.execute("SELECT count(*) FROM repeats").fetchone()[0]
    )  # type: ignore[index]


def test_metric_directions_are_the_specs(con: Any) -> None:
    found = dict(con.execute("SELECT metric, direction FROM metric_directions").fetchall())
    assert set(found) == set(METRIC_NAMES)
    assert {m for m, d in found.items() if d == "lower"} == LOWER_IS_BETTER
    assert {d for m, d in found.items() if m not in LOWER_IS_BETTER} == {"neutral"}


def test_slowest_cases_reports_each_time_of_its_own(con: Any) -> None:
    from collections import defaultdict

    import numpy as np

    from capeval.analysis.queries import run_query
    from capeval.core.aggregate import median
    from tests.analysis.test_history import sample_rows

    times: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in sample_rows():
        for field in ("durationMs", "agentDurationMs", "verifyDurationMs"):
            times[r["id"]][field].append(r[field])
    found = run_query(con, "slowest_cases")
    assert found and len(found) == min(20, len(times))
    for r in found:
        t = times[r["caseId"]]
        assert r["p90Seconds"] == pytest.approx(float(np.quantile(t["durationMs"], 0.9)) / 1000)
        assert r["medianAgentSeconds"] == pytest.approx(median(t["agentDurationMs"]) / 1000)
        assert r["medianVerifySeconds"] == pytest.approx(median(t["verifyDurationMs"]) / 1000)
    # The times differ, or the checks above could not tell one column from another.
    assert any(r["medianAgentSeconds"] != r["medianVerifySeconds"] for r in found)
    assert any(r["p90Seconds"] != r["medianSeconds"] for r in found)


def test_cost_per_pass_divides_output_tokens_by_passes(con: Any) -> None:
    from collections import defaultdict

    from capeval.analysis.queries import run_query
    from tests.analysis.test_history import sample_rows

    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in sample_rows():
        groups[(r["runId"], r["variantId"])].append(r)
    found = {(r["runId"], r["variantId"]): r for r in run_query(con, "cost_per_pass")}
    checked = 0
    for key, rows in groups.items():
        passes = sum(r["passed"] for r in rows)
        output = sum(r["tokenUsage"]["output"] for r in rows)
        want = output / passes if passes else None
        assert found[key]["tokenOutputPerPass"] == (None if want is None else pytest.approx(want))
        checked += passes > 0
    assert checked


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


def test_a_workspace_query_overrides_a_builtin_of_the_same_name(tmp_path: Path) -> None:
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "flaky_cells.sql").write_text("-- Ours.\nSELECT 7 AS n\n")
    query = find_query("flaky_cells", tmp_path)
    assert (query.summary, query.path) == ("Ours.", tmp_path / "analysis" / "flaky_cells.sql")
    assert [q for q in list_queries(tmp_path) if q.name == "flaky_cells"] == [query]


def test_the_query_table_writes_booleans_and_nulls_as_json_does() -> None:
    table = format_table([{"ok": True, "bad": False, "n": None, "x": 0.123456}])
    assert table.splitlines()[1].split() == ["true", "false", "-", "0.1235"]


def test_bait_stopped_reads_a_bait_the_rows_do_not_declare_from_the_workspace(
    tmp_path: Path,
) -> None:
    # The original harness's rows carry no bait: the workspace's case declares it, as
    # the gate resolves it (rows first, else the workspace).
    from tests.casefactory import write_case

    ws = tmp_path / "ws"
    write_case(ws, "web", tier="bait", bait={"metric": "shellCommandCount", "threshold": 1})
    results = tmp_path / "results"
    results.mkdir()
    early = {"runStartedAt": "2026-01-01T00:00:00.000Z", "tier": "bait"}
    late = {"runStartedAt": "2026-01-02T00:00:00.000Z", "tier": "bait"}
    write_jsonl(results / "r1.jsonl", [row("r1", "v", "web", 2, True, **early)])
    write_jsonl(results / "r2.jsonl", [row("r2", "v", "web", 0, True, **late)])
    args = ("query", "bait_stopped", "--from", results, "--json")
    assert json.loads(capeval(*args, cwd=tmp_path).stdout) == []  # declared nowhere
    found = json.loads(capeval(*args, "--root", ws, cwd=tmp_path).stdout)
    assert [(r["caseId"], r["lastReproducedRunId"], r["runId"]) for r in found] == [
        ("web", "r1", "r2")
    ]
    assert json.loads(capeval(*args, cwd=ws).stdout) == found
