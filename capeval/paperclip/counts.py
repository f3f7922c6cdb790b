"""Per-group counts of a Paperclip conformance run, computed from its JSON Lines rows.

The report's `groups` table comes from here rather than from the suite's own
objects, so the counts are what the row stream says (the same DuckDB path
the capability evals use) and a row stream that lost or duplicated
configurations shows in the report. So do the live matrix's per-group pass
rates (`live_summary`), read from the rows `capeval paperclip live` wrote.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from capeval.results.duckdb_paths import reads_as_pattern

_COUNTS = ("cases", "configurations", "passed", "failed")
_COLUMNS = "{'caseId': 'VARCHAR', 'group': 'VARCHAR', 'grants': 'VARCHAR', 'passed': 'BOOLEAN'}"

GROUP_COUNTS_SQL = f"""
SELECT "group",
       count(DISTINCT caseId) AS cases,
       count(*) AS configurations,
       count(*) FILTER (WHERE passed) AS passed,
       count(*) FILTER (WHERE NOT passed) AS failed
FROM read_json(?, format = 'newline_delimited', columns = {_COLUMNS})
GROUP BY "group"
ORDER BY "group"
"""


def _readable(stack: contextlib.ExitStack, files: Sequence[Path]) -> list[str]:
    """The names DuckDB is given for `files`: each file itself, or a copy of it.

    By its name DuckDB would read whatever a pattern matches (an out dir
    `report[2]` reads `report2/`): such a file is read from a copy instead.
    """
    out, tmp = [], None
    for i, path in enumerate(files):
        if reads_as_pattern(path):
            if tmp is None:
                tmp = Path(
                    stack.enter_context(tempfile.TemporaryDirectory(prefix="capeval-counts-"))
                )
            path = shutil.copyfile(path, tmp / f"rows-{i}.jsonl")
        out.append(str(path))
    return out


def group_counts(jsonl: Path) -> dict[str, dict[str, int]]:
    """{group: {cases, configurations, passed, failed}} for one row stream."""
    import duckdb

    with contextlib.ExitStack() as stack:
        (read,) = _readable(stack, [Path(jsonl)])
        with duckdb.connect() as con:
            rows = con.execute(GROUP_COUNTS_SQL, [read]).fetchall()
    return {
        g: {"cases": c, "configurations": n, "passed": p, "failed": f} for g, c, n, p, f in rows
    }


def cases_per_group(jsonl: Path) -> dict[str, int]:
    """{group: distinct case count}: the report's `groups` contract."""
    return {g: v["cases"] for g, v in group_counts(jsonl).items()}


def as_frame(jsonl: Path) -> Any:
    """The per-group counts as a polars DataFrame, for notebooks."""
    import polars as pl

    counts = group_counts(jsonl)
    schema = {"group": pl.String, **dict.fromkeys(_COUNTS, pl.Int64)}
    return pl.DataFrame([{"group": g, **v} for g, v in counts.items()], schema=schema)


# The live rows' columns the report reads (`capeval.paperclip.live` writes them).
_LIVE_COLUMNS = (
    "{'caseId': 'VARCHAR', 'group': 'VARCHAR', 'grants': 'VARCHAR', 'agent': 'VARCHAR', "
    "'outcome': 'VARCHAR', 'passed': 'BOOLEAN', 'model': 'VARCHAR', 'agentVersion': 'VARCHAR', "
    "'scripted': 'BOOLEAN', 'repeat': 'BIGINT', 'startedAt': 'VARCHAR', 'finishedAt': 'VARCHAR', "
    "'failures': 'JSON'}"
)
LIVE_TURNS_SQL = f"""
SELECT "group", agent, grants, caseId, coalesce(repeat, 0) AS repeat, outcome,
       model, agentVersion, coalesce(scripted, false) AS scripted, startedAt, finishedAt, failures
FROM read_json(?, format = 'newline_delimited', columns = {_LIVE_COLUMNS})
"""
# Pass rate: passed / (passed + failed). An `error` turn measured nothing: it is
# counted apart and left out of the rate (NULL when no turn was judged).
_COUNT_OUTCOMES = """
           count(*) AS turns,
           count(*) FILTER (WHERE outcome = 'passed') AS passed,
           count(*) FILTER (WHERE outcome = 'failed') AS failed,
           count(*) FILTER (WHERE outcome NOT IN ('passed', 'failed')) AS error"""
_PASS_RATE = "CASE WHEN passed + failed > 0 THEN round(passed / (passed + failed), 4) END"
LIVE_RATES_SQL = f"""
SELECT "group", agent, grants, cases, turns, passed, failed, error, {_PASS_RATE} AS passRate
FROM (
    SELECT "group", agent, grants, count(DISTINCT caseId) AS cases, {_COUNT_OUTCOMES}
    FROM turns
    GROUP BY ALL
)
ORDER BY "group", agent, grants
"""
LIVE_MATRIX_SQL = f"""
SELECT "group", agent, turns, passed, failed, error, {_PASS_RATE} AS passRate
FROM (SELECT "group", agent, {_COUNT_OUTCOMES} FROM turns GROUP BY ALL)
ORDER BY "group", agent
"""
LIVE_AGENTS_SQL = f"""
SELECT agent, {_COUNT_OUTCOMES},
       list_sort(list_distinct(list(model))) AS models,
       list_sort(list_distinct(list(agentVersion))) AS agentVersions,
       bool_or(scripted) AS scripted,
       min(startedAt) AS startedAt, max(finishedAt) AS finishedAt
FROM turns
GROUP BY agent
ORDER BY agent
"""
# Ordered by everything it reads: two matrices' rows share agent, case, grants and
# repeat, and the report must not follow the order their files were named in.
LIVE_FAILURES_SQL = """
SELECT agent, caseId, grants, repeat, outcome, failures
FROM turns
WHERE outcome <> 'passed'
ORDER BY agent, caseId, grants, repeat, outcome, CAST(failures AS VARCHAR)
"""
_RATE_KEYS = ("group", "agent", "grants", "cases", "turns", "passed", "failed", "error", "passRate")
_AGENT_KEYS = (
    "turns", "passed", "failed", "error", "models", "agentVersions", "scripted", "startedAt",
    "finishedAt",
)  # fmt: skip


def live_summary(files: Sequence[Path]) -> dict[str, Any]:
    """The live rows of `files`, summed up with DuckDB: per group, agent and grant
    configuration the turns, passed, failed and error counts and the pass rate
    (`groups`); the same per group and agent over both configurations (`matrix`); per
    agent its totals, models, versions and first and last turn (`agents`); and every
    turn that did not pass, with its failures (`failures`)."""
    import duckdb

    with contextlib.ExitStack() as stack, duckdb.connect() as con:
        read = [_readable(stack, files)]

        def query(sql: str) -> list[tuple[Any, ...]]:
            return con.execute(f"WITH turns AS ({LIVE_TURNS_SQL}) {sql}", read).fetchall()

        rates = [dict(zip(_RATE_KEYS, r, strict=True)) for r in query(LIVE_RATES_SQL)]
        agents = {r[0]: dict(zip(_AGENT_KEYS, r[1:], strict=True)) for r in query(LIVE_AGENTS_SQL)}
        matrix: dict[str, dict[str, dict[str, Any]]] = {}
        for group, agent, *counts in query(LIVE_MATRIX_SQL):
            matrix.setdefault(group, {})[agent] = dict(zip(_RATE_KEYS[4:], counts, strict=True))
        failing = query(LIVE_FAILURES_SQL)
    failures = [
        {
            "agent": agent,
            "caseId": case_id,
            "grants": grants,
            "repeat": repeat,
            "outcome": outcome,
            "failures": [
                {
                    k: f.get(k)
                    for k in ("assertionClass", "operation", "decision", "reason", "message")
                }
                for f in json.loads(raw or "[]")
                if isinstance(f, dict)
            ],
        }
        for agent, case_id, grants, repeat, outcome, raw in failing
    ]
    for entry in agents.values():
        entry["models"] = [m for m in entry["models"] if m is not None]
        entry["agentVersions"] = [v for v in entry["agentVersions"] if v is not None]
    return {"groups": rates, "matrix": matrix, "agents": agents, "failures": failures}
