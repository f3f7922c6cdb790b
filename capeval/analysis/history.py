"""Many runs in DuckDB: scan result folders, ingest incrementally, query views.

A folder of past runs is a pile of JSON Lines streams and v3 JSON files,
sometimes the same run twice (the runner writes both, with the same `runId`
in every row). `connect()` reads them into a DuckDB table and puts views on
top (`capeval.analysis.views`), so any question about history is one SQL query:

- `repeats`: one row per repeat, each run counted once (a repeat that several
  files hold, keyed `runId, variantId, id, repeat`, is taken from one of them,
  the JSON Lines copy first; a repeat recorded twice in one file counts twice,
  as the reference reader counts it); behavior metrics and token usage are
  flat columns, as in `capeval.analysis.frame`.
- `cells`: per run and cell, repeats, passCount, passRate, median turns and
  the median of every behavior metric.
- `runs`: one row per run: start time, variants, cases, repeats, pass rate,
  turns, tokens, wall time, capeval version, git commit.
- `cell_metrics`: `cells` unpivoted to one row per (run, cell, metric), the
  shape drift and bait queries want; `metric_directions` says which metrics
  are better lower (docs/behavior-metrics.md#the-metrics).

Rows are read as the reference reader reads them: what it refuses is
refused, naming file, line and field, and a repeat a stream holds twice is
warned about in its words. How files are read, and kept up to date in a
database file, is `capeval.analysis.ingest`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capeval.analysis.ingest import IngestReport, ingest, scan
from capeval.analysis.views import (
    TYPED_FIELDS,
    UTC_OFFSET_PATTERN,
    VIEWS,
    _utc,
    ensure_schema,
)
from capeval.results.errors import ResultFileError

if TYPE_CHECKING:
    import duckdb
    import polars as pl

__all__ = [
    "TYPED_FIELDS",
    "UTC_OFFSET_PATTERN",
    "VIEWS",
    "IngestReport",
    "_utc",
    "connect",
    "default_paths",
    "frame",
    "ingest",
    "open_db",
    "records",
    "runs",
    "scan",
]


# -- the public entry point -----------------------------------------------------------


def default_paths(root: Path | None = None) -> list[Path]:
    """The workspace's results folder (from its configuration), for `capeval history`."""
    from capeval.config import load_config
    from capeval.workspace import find_root

    root = find_root(explicit=root)
    return [load_config(root).results_dir]


def open_db(
    db: str | Path | None = None, *, read_only: bool = False, schema: bool = True
) -> duckdb.DuckDBPyConnection:
    """A connection to a history database (in memory when `db` is None), views in place."""
    import duckdb

    if db is not None and read_only and not Path(db).is_file():
        raise ResultFileError(db, "no such history database; create it with `capeval history --db`")
    con = duckdb.connect(str(db) if db is not None else ":memory:", read_only=read_only)
    con.execute("SET TimeZone = 'UTC'")
    # stdout belongs to the command's answer. Inside Jupyter without ipywidgets
    # DuckDB refuses the change, and draws no bar there anyway.
    with contextlib.suppress(duckdb.Error):
        con.execute("SET enable_progress_bar = false")
    if schema and not read_only:
        ensure_schema(con)
    declare_workspace_baits(con, {})
    return con


def declare_workspace_baits(
    con: duckdb.DuckDBPyConnection, baits: Mapping[str, tuple[str, float]]
) -> None:
    """The temporary table `workspace_baits(caseId, baitMetric, baitThreshold)`: the bait
    declarations of the workspace's cases, for queries that resolve a case's bait as the
    gate does (its rows first, else its workspace case; docs/gating.md#bait-cases)."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE workspace_baits "
        "(caseId VARCHAR, baitMetric VARCHAR, baitThreshold DOUBLE)"
    )
    if baits:
        con.executemany(
            "INSERT INTO workspace_baits VALUES (?, ?, ?)",
            [[case, metric, threshold] for case, (metric, threshold) in sorted(baits.items())],
        )


def read_only_queries(con: duckdb.DuckDBPyConnection) -> None:
    """Let `con` run queries that only read what it holds, from here on.

    A query (the user's SQL, or a named query a workspace ships) reaches no
    file and no network: `COPY ... TO`, `read_csv('/etc/...')`, `ATTACH`,
    `INSTALL httpfs` are refused, and the settings are locked so a query
    cannot lift that. Call it once the history is ingested.
    """
    for setting in (
        "SET enable_external_access = false",
        "SET autoinstall_known_extensions = false",
        "SET autoload_known_extensions = false",
        "SET lock_configuration = true",
    ):
        con.execute(setting)


def connect(
    paths: str | Path | Iterable[str | Path] | None = None, db: str | Path | None = None
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the views `repeats`, `cells`, `cell_metrics` and `runs`.

    - `paths` only: views straight over the files (`scan`), nothing copied.
    - `db` only: the stored history is opened as it is (nothing is scanned).
    - both: `paths` are ingested into `db` first (incremental, idempotent).
    - neither: the current workspace's results folder, in memory.

    What reading passed over (a torn last line, a file that is no result, a
    repeat a stream holds twice) is issued as `ResultFileWarning`s, as
    `load_frame` issues it: a notebook would otherwise count without a word.
    Use `open_db` and `ingest` directly to have it as a report instead.
    """
    if paths is None and db is None:
        paths = default_paths()
    if db is None:
        con = open_db(schema=False)
        _warn_about(scan(con, paths))  # type: ignore[arg-type]
        return con
    con = open_db(db)
    if paths is not None:
        _warn_about(ingest(con, paths))
    return con


def _warn_about(report: IngestReport) -> None:
    from capeval.results.errors import warn_passed_over

    messages = [f"skipped {path}: {why}" for path, why in report.skipped] + report.warnings
    for message in messages:
        warn_passed_over(message, stacklevel=3)


def runs(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The `runs` view as records, oldest first (what `capeval history` lists)."""
    return records(con, "SELECT * FROM runs ORDER BY startedAt NULLS FIRST, runId")


def records(
    con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None
) -> list[dict[str, Any]]:
    """Rows of a query as JSON-ready dicts (timestamps as ISO strings)."""
    cursor = con.execute(sql, params or [])
    names = _unique_names([d[0] for d in cursor.description or []])
    return [
        {name: _json_value(value) for name, value in zip(names, row, strict=True)}
        for row in cursor.fetchall()
    ]


def frame(
    con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None
) -> pl.DataFrame:
    """A query's result as a polars DataFrame, for notebooks and plots.

    Built from plain rows rather than DuckDB's `.pl()`, which needs pyarrow
    (not a capeval dependency); fine for the sizes a notebook plots.
    """
    import polars as pl

    cursor = con.execute(sql, params or [])
    names = _unique_names([d[0] for d in cursor.description or []])
    rows = cursor.fetchall()
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    return pl.DataFrame(
        {name: list(values) for name, values in zip(names, columns, strict=True)}, strict=False
    )


def _unique_names(names: Sequence[str]) -> list[str]:
    """Column names made unique: `a, a` becomes `a, a_1`.

    A join such as `cells JOIN runs` returns `runId`, `repeats` and
    `passRate` twice; keyed by name, the second copy silently replaced the
    first (the cell's pass rate became the run's) and the rest were lost.
    """
    taken = set(names)  # a suffix must not take the name of another column
    out: list[str] = []
    seen: set[str] = set()
    for name in names:
        unique, n = name, 0
        while unique in seen or (unique != name and unique in taken):
            n += 1
            unique = f"{name}_{n}"
        seen.add(unique)
        out.append(unique)
    return out


def _json_value(value: Any) -> Any:
    import datetime
    import decimal
    import math

    if isinstance(value, datetime.datetime):
        text = value.isoformat(timespec="milliseconds")
        return text + "Z" if value.tzinfo is None else text
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()  # a BLOB: hex, as DuckDB prints it without escapes
    if value is None or isinstance(value, bool | int | str):
        return value
    return str(value)  # UUID, intervals and whatever else a query can return
