"""Per-group counts of a Paperclip conformance run, computed from its JSON Lines rows.

The report's `groups` table comes from here rather than from the suite's own
objects, so the counts are what the row stream says (the same DuckDB path
the capability evals use) and a row stream that lost or duplicated
configurations shows in the report.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
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


def group_counts(jsonl: Path) -> dict[str, dict[str, int]]:
    """{group: {cases, configurations, passed, failed}} for one row stream."""
    import duckdb

    with contextlib.ExitStack() as stack:
        read = str(jsonl)
        if reads_as_pattern(read):
            # By its name DuckDB would read whatever the pattern matches (an
            # out dir `report[2]` reads `report2/`): read a copy instead.
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="capeval-counts-"))
            read = str(shutil.copyfile(jsonl, Path(tmp) / "rows.jsonl"))
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
