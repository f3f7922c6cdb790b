"""Many runs in DuckDB: scan result folders, ingest incrementally, query views.

A folder of past runs is a pile of JSON Lines streams and v3 JSON files,
sometimes the same run twice (the runner writes both, with the same `runId`
in every row). `connect()` reads them into a DuckDB table and puts three views
on top, so any question about history is one SQL query:

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

JSON Lines files are read by DuckDB itself (fast: a million rows in a couple
of seconds), which checks the fields the reference reader checks, so a row
it refuses is refused here, with its error, and the typed fields (turns,
durations, flags, tokens) as `load_frame` types them: 7.5 turns, "7" turns
or a duration of true is an error naming file, line and field, never a
rounded or cast number. `ingest` also warns, in the reader's words, of a
repeat a stream holds twice. v3 files are read by the reference
reader (they are one JSON object, usually small), which also names the file
and line of anything broken.

With a database file the ingest is incremental and idempotent: every file's
size, mtime, ingested byte offset and row count are recorded in
`result_files`, so an unchanged file is skipped (unless rows recorded for it
are missing from the table: then it is read again), a grown JSON Lines
stream contributes only the rows after its recorded offset (after checking
the bytes before it are unchanged, by a hash of them all) and a rewritten or
edited file replaces its rows. A torn last line (a run still writing, or one
that crashed) is left for the next ingest, never half-read.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capeval.core.metrics import METRIC_NAMES, NUMERIC_METRICS
from capeval.results.columns import (
    BAIT_COLUMNS,
    BOOL,
    FLOAT,
    INT,
    ROW_COLUMNS,
    STR,
    TOKEN_KEYS,
    ColumnTypeError,
    convert,
)
from capeval.results.discovery import discover
from capeval.results.duckdb_paths import reads_as_pattern
from capeval.results.errors import ResultFileError
from capeval.results.formats import result_format, rows_end
from capeval.results.identity import run_identity, run_stem, run_times

if TYPE_CHECKING:
    import duckdb
    import polars as pl


_HASH_CHUNK = 1 << 20
# A time string that states its UTC offset (`Z`, `+09:00`, `-0800`, `+09`);
# one without is taken as UTC. Shared with the plots (a polars expression),
# so the views and the figures never date a run differently.
UTC_OFFSET_PATTERN = r"(?:[zZ]|[+-][0-9]{2}(?::?[0-9]{2})?)$"


# The typed fields of a row and their kinds, as `load_frame` types its
# columns (`capeval.results.columns`); `passed` and `repeat` have checks of
# their own below, whose errors say what the value means.
TYPED_FIELDS: dict[str, str] = {
    **{n: k for n, k in ROW_COLUMNS.items() if k != STR and n not in ("passed", "repeat")},
    **{f"tokenUsage.{key}": INT for key in TOKEN_KEYS.values()},
    "bait.threshold": BAIT_COLUMNS["baitThreshold"],
}
# What a value of each kind must be, in load_frame's words.
_RIGHT = {INT: "an integer", FLOAT: "a number", BOOL: "true or false"}

# How DuckDB reads a result row (JSON Lines); fields not named here are ignored.
# Typed fields are read as JSON and checked in `_select_sql`: a typed column
# would read "1" and 1.5 as repeats 1 and 2, 7 as the case id "7", "3" or
# true as a metric's 3 and 1, 7.5 turns as 8 and "false" as false, where the
# reference reader (`capeval.results.rowcheck`) and `load_frame` refuse them.
_RAW_COLUMNS: dict[str, str] = {
    "resultKey": "VARCHAR",
    "id": "JSON",
    "tier": "VARCHAR",
    "title": "VARCHAR",
    "variantId": "VARCHAR",
    "provider": "VARCHAR",
    "model": "VARCHAR",
    "passed": "JSON",  # as text: a BOOLEAN column would read "yes", "true" and 1 as true
    "agentExitCode": "JSON",
    "verifyExitCode": "JSON",
    "durationMs": "JSON",
    "agentDurationMs": "JSON",
    "verifyDurationMs": "JSON",
    "status": "VARCHAR",
    "sessionId": "VARCHAR",
    "turnsUsed": "JSON",
    "toolCallCount": "JSON",
    "costUsd": "JSON",
    "maxTurns": "JSON",
    "overBudget": "JSON",
    "skipPermissions": "JSON",
    "error": "VARCHAR",
    "repeat": "JSON",
    "textPreview": "VARCHAR",
    "runId": "VARCHAR",
    "runStartedAt": "VARCHAR",
    "requestedProvider": "VARCHAR",
    "requestedModel": "VARCHAR",
    "agent": "VARCHAR",
    "agentType": "VARCHAR",
    "agentVersion": "VARCHAR",
    "capevalVersion": "VARCHAR",
    "gitCommit": "VARCHAR",
    "gitDirty": "JSON",
    "startedAt": "VARCHAR",
    "finishedAt": "VARCHAR",
    "tokenUsage": "STRUCT(" + ", ".join(f'"{key}" JSON' for key in TOKEN_KEYS.values()) + ")",
    "behaviors": "STRUCT("
    + ", ".join(f'"{m}" JSON' for m in METRIC_NAMES)
    + ', "toolCallsByName" JSON)',
    "bait": "STRUCT(metric VARCHAR, threshold JSON)",
}

_PLAIN = [c for c in _RAW_COLUMNS if c not in ("tokenUsage", "behaviors", "bait")]
_TIMESTAMPS = ("runStartedAt", "startedAt", "finishedAt")


def _metric_sql(metric: str, source: str) -> str:
    value = f'r.behaviors."{metric}"'
    text = f"CAST({value} AS VARCHAR)"
    # A JSON number is the one value whose text starts with `-` or a digit
    # (DuckDB also reads -Infinity, which `isfinite` refuses, as the reader
    # refuses it and 1e400). Cheaper than `json_type`, which parses it again:
    # that cost the ingest of a million rows a fifth more time.
    checked = (
        f"CASE WHEN {value} IS NULL THEN NULL "
        f"WHEN ascii({text}) IN ({', '.join(str(ord(c)) for c in '-0123456789')}) "
        f"AND isfinite(CAST({text} AS DOUBLE)) THEN CAST({text} AS DOUBLE) "
        f"ELSE {_refuse(source, f'behaviors.{metric}', 'a finite number or null', value)} END"
    )
    if metric == "taskToolCallCount":
        # Older rows predate the metric: count `task`/`spawn_agent` calls (docs/behavior-metrics.md#the-metrics).
        return (
            f"CASE WHEN r.behaviors IS NULL THEN NULL ELSE coalesce({checked}, "
            f"{_legacy_calls('task')} + {_legacy_calls('spawn_agent')}) END"
        )
    return checked


def _typed_sql(value: str, kind: str, name: str, source: str) -> str:
    """A JSON field (`value`) as its column's type, refusing a value of another JSON type.

    The checks work on the JSON text DuckDB keeps, as `capeval.analysis.frame`
    does: a second parse (`json_type`) made the ingest of a million rows a
    fifth slower. An integer may be written 7.0 (`load_frame` takes it), never
    7.5, which a cast rounds to 8.
    """
    text = f"CAST({value} AS VARCHAR)"
    refuse = _refuse(source, name, _RIGHT[kind], value)
    if kind == INT:
        whole = f"TRY_CAST({text} AS BIGINT)"
        ok = f"TRY_CAST({text} AS DOUBLE) = {whole}"
    elif kind == FLOAT:
        # Strings, booleans, arrays and objects cast to no DOUBLE at all.
        whole = f"TRY_CAST({text} AS DOUBLE)"
        ok = f"{whole} IS NOT NULL"
    else:
        whole = f"({text} = 'true')"
        ok = f"{text} IN ('true', 'false')"
    return f"CASE WHEN {value} IS NULL THEN NULL WHEN {ok} THEN {whole} ELSE {refuse} END"


def _field_sql(name: str) -> str:
    """A typed field of a raw row (alias r): `tokenUsage.input` is a struct member."""
    return "r." + ".".join(f'"{part}"' for part in name.split("."))


def _typed_problem(row: Mapping[str, Any]) -> str | None:
    """Why a typed field of `row` has a value of the wrong JSON type, in load_frame's words.

    The Python side of `_typed_sql`, for the error that names the line.
    """
    for name, kind in TYPED_FIELDS.items():
        parent, _, key = name.rpartition(".")
        holder = row.get(parent) if parent else row
        if not isinstance(holder, Mapping):
            continue
        try:
            convert(holder.get(key), kind, functools.partial(str, f"field {name!r}"))
        except ColumnTypeError as exc:
            return f"{exc} (case {row.get('id')!r})"
    return None


def _refuse(source: str, name: str, right: str, value: str) -> str:
    """SQL raising the reference reader's complaint about field `name` of a row.

    `ingest` turns it into the reader's own error naming file and line
    (`_diagnose`); a scan, which reads lazily, raises it when queried.
    """
    return (
        f"error(concat({source}, ': field ''{name}'' must be {right}, found ', "
        f"coalesce(CAST({value} AS VARCHAR), 'nothing'), ' (case ', "
        "coalesce(CAST(r.id AS VARCHAR), '?'), ')'))"
    )


def _legacy_calls(tool: str) -> str:
    """A legacy row's count of `tool` calls, as `capeval.core.behaviors.backfill_legacy` reads it.

    Only a JSON integer counts: a cast also read "2", 2.5 and true as calls,
    so the views disagreed with the gate, the frames and `capeval aggregate`.
    """
    calls = f"r.behaviors.toolCallsByName -> '$.{tool}'"
    return (
        f"(CASE WHEN regexp_full_match(({calls})::VARCHAR, '-?[0-9]+') "
        f"THEN CAST({calls} AS DOUBLE) ELSE 0 END)"
    )


# Per-file facts, from the staged `_inputs` table (alias i)...
_STAGED_FACTS = {
    "source": "i.source",
    "format": "i.format",
    "stem": "i.stem",
    "headerStartedAt": "i.headerStartedAt",
    "headerFinishedAt": "i.headerFinishedAt",
}
# ...or, for a JSON Lines file read in place, from its name alone (no join).
_INPLACE_FACTS = {
    "source": "r.filename",
    "format": "'jsonl'",
    "stem": "parse_filename(r.filename, true)",
    "headerStartedAt": "CAST(NULL AS VARCHAR)",
    "headerFinishedAt": "CAST(NULL AS VARCHAR)",
}


# -- run identity: one rule for the views (SQL) and the frames (polars) -----------------


def run_identity_sql(facts: Mapping[str, str]) -> tuple[str, str]:
    """`run_identity` over raw rows (alias r) and per-file facts, as SQL text."""
    return run_identity(
        "r.runId",
        "r.runStartedAt",
        facts["stem"],
        facts["headerStartedAt"],
        coalesce=lambda *args: f"coalesce({', '.join(args)})",
        concat=lambda *args: "(" + " || ".join(args) + ")",
        text=lambda value: "'" + value.replace("'", "''") + "'",
    )


def run_identity_exprs(stem: pl.Expr, header_started: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """`run_identity` over a frame's `runId` and `runStartedAt` columns (aliased so)."""
    import polars as pl

    run, started = run_identity(
        pl.col("runId"),
        pl.col("runStartedAt"),
        stem,
        header_started,
        coalesce=lambda *args: pl.coalesce(*args),
        concat=lambda *args: pl.concat_str(*args),
        text=lambda value: pl.lit(value, dtype=pl.String),
    )
    return run.alias("runId"), started.alias("runStartedAt")


def _select_sql(facts: dict[str, str] = _STAGED_FACTS) -> str:
    """Raw JSON rows (alias r) plus per-file facts -> table columns."""
    run_id, run_started = run_identity_sql(facts)
    plain = []
    for column in _PLAIN:
        if column in _TIMESTAMPS:
            continue
        if column == "runId":
            plain.append(f"{run_id} AS runId")
        elif column == "id":
            plain.append(
                "CASE WHEN json_type(r.id) = 'VARCHAR' AND CAST(r.id AS VARCHAR) <> '\"\"' "
                "THEN r.id ->> '$' ELSE "
                f"{_refuse(facts['source'], 'id', 'the case id (a non-empty string)', 'r.id')} "
                "END AS id"
            )
        elif column == "repeat":
            plain.append(
                "CASE WHEN r.repeat IS NULL THEN NULL "
                "WHEN json_type(r.repeat) IN ('BIGINT', 'UBIGINT') THEN CAST(r.repeat AS BIGINT) "
                f"ELSE {_refuse(facts['source'], 'repeat', 'a 0-based integer', 'r.repeat')} "
                'END AS "repeat"'
            )
        elif column == "passed":
            # What every other reader refuses must not become a pass rate here.
            plain.append(
                "CASE r.passed::VARCHAR WHEN 'true' THEN true WHEN 'false' THEN false ELSE "
                f"{_refuse(facts['source'], 'passed', 'true or false', 'r.passed')} END AS passed"
            )
        elif column == "resultKey":
            plain.append(
                "coalesce(nullif(r.resultKey, ''), r.variantId || '::' || (r.id ->> '$')) AS resultKey"
            )
        elif column == "variantId":
            plain.append(
                "CASE WHEN r.variantId IS NULL AND r.resultKey IS NULL THEN error(concat("
                f"{facts['source']}, ': row for case ', coalesce(CAST(r.id AS VARCHAR), '?'), "
                "' needs ''resultKey'' or ''variantId'' (a string)')) "
                "ELSE coalesce(r.variantId, regexp_extract(r.resultKey, '^(.*)::', 1)) END "
                "AS variantId"
            )
        elif column in TYPED_FIELDS:
            plain.append(
                f"{_typed_sql(_field_sql(column), TYPED_FIELDS[column], column, facts['source'])} "
                f'AS "{column}"'
            )
        else:
            plain.append(f'r."{column}"')
    parts = [
        f"{facts['source']} AS source",
        f"{facts['format']} AS format",
        *plain,
        f"{_utc(run_started)} AS runStartedAt",
        f"{_utc(facts['headerFinishedAt'])} AS runFinishedAt",
        f"{_utc('r.startedAt')} AS startedAt",
        f"{_utc('r.finishedAt')} AS finishedAt",
        *(
            f"{_typed_sql(_field_sql(f'tokenUsage.{key}'), INT, f'tokenUsage.{key}', facts['source'])}"
            f" AS {col}"
            for col, key in TOKEN_KEYS.items()
        ),
        "r.behaviors IS NOT NULL AS behaviorsCaptured",
        *(f'{_metric_sql(m, facts["source"])} AS "{m}"' for m in METRIC_NAMES),
        "r.behaviors.toolCallsByName AS toolCallsByName",
        "r.bait.metric AS baitMetric",
        f"{_typed_sql('r.bait.threshold', FLOAT, 'bait.threshold', facts['source'])} "
        "AS baitThreshold",
    ]
    return ",\n  ".join(parts)


def _utc(text_sql: str) -> str:
    """An ISO time string as a UTC TIMESTAMP.

    A cast to TIMESTAMP drops a UTC offset instead of applying it, which puts
    a run written at 20:00-08:00 before one written at 00:00+09:00 the next
    day. Strings with an offset are converted; those without are taken as
    UTC, as the frames take them, whatever the session's time zone.
    """
    return (
        f"CASE WHEN regexp_matches({text_sql}, '{UTC_OFFSET_PATTERN}') "
        f"THEN timezone('UTC', try_cast({text_sql} AS TIMESTAMPTZ)) "
        f"ELSE try_cast({text_sql} AS TIMESTAMP) END"
    )


_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS result_files (
  path VARCHAR PRIMARY KEY,
  format VARCHAR,        -- 'jsonl', 'v3' or 'other' (not a result file; skipped)
  size BIGINT,
  mtimeNs BIGINT,
  ingestedOffset BIGINT, -- bytes of a JSON Lines stream already ingested
  tailHash VARCHAR,      -- hash of the bytes just before ingestedOffset
  rowCount BIGINT,
  ingestedAt TIMESTAMP
);
"""


def _cells_sql(where: str = "") -> str:
    """Per run and cell aggregates over `repeats` (optionally only some runs)."""
    metric_medians = ",\n  ".join(f'median("{m}") AS "{m}"' for m in METRIC_NAMES)
    return f"""SELECT
  runId,
  min(runStartedAt) AS runStartedAt,
  resultKey,
  variantId,
  id AS caseId,
  any_value(tier) AS tier,
  count(*) AS repeats,
  CAST(count_if(passed) AS BIGINT) AS passCount,
  count_if(passed) / count(*) AS passRate,
  median(turnsUsed) AS medianTurns,
  median(durationMs) AS medianDurationMs,
  sum(durationMs) AS durationMs,
  CAST(sum(turnsUsed) AS BIGINT) AS turnsUsed,
  CAST(sum(tokenInput) AS BIGINT) AS tokenInput,
  CAST(sum(tokenOutput) AS BIGINT) AS tokenOutput,
  count(DISTINCT coalesce(provider, '?') || ':' || coalesce(model, '?')) > 1 AS mixed,
  any_value(baitMetric) AS baitMetric,
  any_value(baitThreshold) AS baitThreshold,
  {metric_medians}
FROM repeats
{where}
GROUP BY runId, resultKey, variantId, id"""


# What `connect` gives SQL to read, as docs/history.md#views lists it.
VIEWS = ("repeats", "cells", "cell_metrics", "runs", "metric_directions")

# A repeat that several files hold (a run's stream and its v3 export) is
# taken from one file only, its JSON Lines copy first; within that file every
# row is kept. A repeat recorded twice in one stream (a resume that re-ran a
# finished repeat) is counted twice, as the reference reader, `capeval
# aggregate` and the gate count it, and `ingest` warns as they do; keeping one
# copy made the views' pass rates differ from theirs, by a copy picked at
# random. A row without a `repeat` number (the field is optional) cannot be
# matched with another copy of itself, so it is always kept.
REPEATS_VIEW_SQL = """
CREATE OR REPLACE VIEW repeats AS
SELECT * FROM result_rows
QUALIFY "repeat" IS NULL OR source = first_value(source) OVER (
  PARTITION BY runId, variantId, id, "repeat"
  ORDER BY CASE format WHEN 'jsonl' THEN 0 ELSE 1 END, source
)
"""


def _views_sql(cells_source: str) -> str:
    directions = ", ".join(
        f"('{m}', '{d}', {i})" for i, (m, d) in enumerate(NUMERIC_METRICS.items())
    )
    unpivot = ", ".join(f'"{m}"' for m in METRIC_NAMES)
    return f"""
CREATE OR REPLACE VIEW metric_directions AS
SELECT * FROM (VALUES {directions}) t(metric, direction, ordinal);

CREATE OR REPLACE VIEW cells AS {cells_source};

CREATE OR REPLACE VIEW cell_metrics AS
SELECT runId, runStartedAt, resultKey, variantId, caseId, metric, median
FROM (UNPIVOT cells ON {unpivot} INTO NAME metric VALUE median);

CREATE OR REPLACE VIEW runs AS
SELECT
  runId,
  min(runStartedAt) AS startedAt,
  coalesce(max(runFinishedAt), max(finishedAt)) AS finishedAt,
  array_agg(DISTINCT variantId ORDER BY variantId) AS variants,
  count(DISTINCT id) AS cases,
  count(DISTINCT resultKey) AS cells,
  -- Rows without repeat numbers: the mean repeats per cell, rounded up.
  coalesce(max("repeat") + 1, CAST(ceil(count(*) / count(DISTINCT resultKey)) AS BIGINT))
    AS repeats,
  count(*) AS rows,
  CAST(count_if(passed) AS BIGINT) AS passed,
  count_if(passed) / count(*) AS passRate,
  CAST(sum(turnsUsed) AS BIGINT) AS turnsUsed,
  CAST(sum(tokenInput) AS BIGINT) AS tokenInput,
  CAST(sum(tokenOutput) AS BIGINT) AS tokenOutput,
  date_diff('millisecond', min(runStartedAt), coalesce(max(runFinishedAt), max(finishedAt))) AS wallMs,
  sum(durationMs) AS durationMs,
  array_agg(DISTINCT agent ORDER BY agent) FILTER (WHERE agent IS NOT NULL) AS agents,
  any_value(capevalVersion) AS capevalVersion,
  any_value(gitCommit) AS gitCommit,
  bool_or(gitDirty) AS gitDirty,
  array_agg(DISTINCT source ORDER BY source) AS sources
FROM repeats
GROUP BY runId;
"""


def _table_sql(name: str = "result_rows") -> str:
    """The row table, typed by running the ingest projection over nothing."""
    raw = ", ".join(f'CAST(NULL AS {kind}) AS "{name}"' for name, kind in _RAW_COLUMNS.items())
    facts = ", ".join(
        f"CAST(NULL AS VARCHAR) AS {name}"
        for name in ("source", "format", "stem", "headerStartedAt", "headerFinishedAt")
    )
    return (
        f"CREATE TABLE IF NOT EXISTS {name} AS SELECT {_select_sql()} "
        f"FROM (SELECT {raw}) r, (SELECT {facts}) i WHERE false"
    )


@dataclass
class IngestReport:
    """What one ingest did; `capeval history` prints the warnings."""

    files_seen: int = 0
    files_unchanged: int = 0
    files_new: int = 0
    files_grown: int = 0
    files_replaced: int = 0
    rows_added: int = 0
    # Files ingested before, under the paths scanned now, that are gone from
    # disk: their rows stay (the database is the history), and this says so.
    files_gone: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "filesSeen": self.files_seen,
            "filesUnchanged": self.files_unchanged,
            "filesNew": self.files_new,
            "filesGrown": self.files_grown,
            "filesReplaced": self.files_replaced,
            "rowsAdded": self.rows_added,
            "filesGone": list(self.files_gone),
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class _Known:
    format: str
    size: int
    mtime_ns: int
    offset: int
    tail_hash: str | None
    row_count: int | None = None  # rows recorded at the last ingest
    rows: int | None = None  # rows the table holds now

    @property
    def intact(self) -> bool:
        """Whether the table still holds every row recorded for the file."""
        return self.row_count is None or self.row_count == self.rows


@dataclass
class _Input:
    """One byte range of one file to read, with the facts its rows inherit."""

    source: str
    format: str
    read_path: str
    stem: str
    header_started: str | None = None
    header_finished: str | None = None
    start: int = 0  # byte offset of the range in `source` (a grown stream's new rows)


def _prefix_hashes(handle: Any, *offsets: int) -> list[str]:
    """SHA-1 of the file's first `offset` bytes, for each offset (ascending), in one pass.

    The whole ingested prefix, not just its tail: an edit in place keeps the
    size and may keep the last bytes, and its rows must not stay stale.
    Only files whose size or mtime changed are hashed.
    """
    hasher = hashlib.sha1()
    handle.seek(0)
    done, out = 0, []
    for offset in offsets:
        while done < offset:
            chunk = handle.read(min(_HASH_CHUNK, offset - done))
            if not chunk:
                break
            hasher.update(chunk)
            done += len(chunk)
        out.append(hasher.copy().hexdigest())
    return out


# -- ingest -----------------------------------------------------------------------


def _ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Tables and views of a stored history; `cells` is kept materialised in `cell_stats`."""
    con.execute(_SCHEMA_SQL)
    con.execute(_table_sql())
    con.execute(REPEATS_VIEW_SQL)
    con.execute(f"CREATE TABLE IF NOT EXISTS cell_stats AS {_cells_sql()}")
    con.execute(_views_sql("SELECT * FROM cell_stats"))


def _refresh_cells(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> None:
    """Recompute the materialised cells of the runs whose rows changed."""
    if not run_ids:
        return
    con.execute("DELETE FROM cell_stats WHERE runId IN (SELECT unnest(?))", [list(run_ids)])
    con.execute(
        f"INSERT INTO cell_stats BY NAME {_cells_sql('WHERE runId IN (SELECT unnest(?))')}",
        [list(run_ids)],
    )


def _gone(
    known: Mapping[str, _Known], files: Sequence[Path], paths: Sequence[str | Path]
) -> list[str]:
    """Known result files under the scanned folders that no longer exist."""
    roots = [Path(p).resolve() for p in paths]
    present = {str(f) for f in files}
    return sorted(
        path
        for path, fact in known.items()
        if fact.format != "other"
        and path not in present
        and any(Path(path).is_relative_to(root) for root in roots)
        and not Path(path).exists()
    )


def _runs_of(con: duckdb.DuckDBPyConnection, sources: Sequence[str]) -> set[str]:
    if not sources:
        return set()
    rows = con.execute(
        "SELECT DISTINCT runId FROM result_rows WHERE source IN (SELECT unnest(?))",
        [list(sources)],
    ).fetchall()
    return {r[0] for r in rows}


# Each recorded file with the rows it was recorded with and the rows it has:
# rows deleted behind the ingest's back (a notebook's DELETE on a writable
# connection) must not leave an unchanged file skipped, and its run gone, forever.
_KNOWN_SQL = """
SELECT f.path, f.format, f.size, f.mtimeNs, f.ingestedOffset, f.tailHash,
  f.rowCount, coalesce(n.rows, 0)
FROM result_files f
LEFT JOIN (SELECT source, count(*) AS rows FROM result_rows GROUP BY source) n
  ON n.source = f.path
"""


def ingest(
    con: duckdb.DuckDBPyConnection, paths: str | Path | Iterable[str | Path]
) -> IngestReport:
    """Bring the database up to date with the result files under `paths`.

    Idempotent: running it twice adds nothing the second time. All changes
    land in one transaction, so an interrupted ingest leaves the database as
    it was.
    """
    _ensure_schema(con)
    report = IngestReport()
    known = {
        row[0]: _Known(row[1], row[2], row[3], row[4], row[5], row[6], row[7])
        for row in con.execute(_KNOWN_SQL).fetchall()
    }
    paths = [paths] if isinstance(paths, str | Path) else list(paths)
    files = discover(paths)
    report.files_seen = len(files)
    report.files_gone = _gone(known, files, paths)
    inputs: list[_Input] = []
    replaced: list[str] = []
    file_rows: list[tuple[str, str, int, int, int, str | None]] = []
    temps: list[str] = []
    try:
        for path in files:
            _plan_file(path, known.get(str(path)), inputs, replaced, file_rows, temps, report)
        con.execute("BEGIN TRANSACTION")
        try:
            touched = _runs_of(con, replaced)
            if replaced:
                con.execute("DELETE FROM result_rows WHERE source IN ?", [replaced])
            report.rows_added = _insert(con, inputs)
            report.warnings += _repeated_in_stream(
                con, [i.source for i in inputs if i.format == "jsonl"]
            )
            touched |= _runs_of(con, [i.source for i in inputs])
            _refresh_cells(con, sorted(touched))
            _record_files(con, file_rows)
            con.execute("COMMIT")
        except BaseException as exc:
            con.execute("ROLLBACK")
            if _is_duckdb_error(exc):
                _diagnose(con, inputs, exc)
            raise
    finally:
        for name in temps:
            Path(name).unlink(missing_ok=True)
    return report


def _repeated_in_stream(con: duckdb.DuckDBPyConnection, sources: Sequence[str]) -> list[str]:
    """The reference reader's warnings about repeats recorded twice in one stream.

    The views count both copies, as the reader does, so they warn as it does,
    in its words. A cheap query finds the streams that may hold one (none,
    usually); only those are read again, by the reader, for its exact rows.
    """
    if not sources:
        return []
    from capeval.results.jsonl import read_jsonl
    from capeval.results.load import duplicate_repeats

    flagged = con.execute(
        """
        SELECT DISTINCT source FROM (
          SELECT source FROM result_rows
          WHERE source IN (SELECT unnest(?)) AND "repeat" IS NOT NULL
          GROUP BY source, resultKey, "repeat" HAVING count(*) > 1
        ) ORDER BY source
        """,
        [list(dict.fromkeys(sources))],
    ).fetchall()
    found: list[str] = []
    for (source,) in flagged:
        found += duplicate_repeats(read_jsonl(source)[0], Path(source))
    return found


def _record_files(
    con: duckdb.DuckDBPyConnection, file_rows: Sequence[tuple[str, str, int, int, int, str | None]]
) -> None:
    """Record what was ingested of each file, in one statement.

    One INSERT per file, each counting its rows over the whole table, made an
    ingest of a folder of a thousand small runs quadratic: 30 s of its 42 s.
    """
    if not file_rows:
        return
    columns = list(zip(*file_rows, strict=True))
    con.execute(
        """
        INSERT OR REPLACE INTO result_files
        WITH f AS (
          SELECT unnest(?) AS path, unnest(?) AS format, unnest(?) AS size,
            unnest(?) AS mtimeNs, unnest(?) AS ingestedOffset, CAST(unnest(?) AS VARCHAR) AS tailHash
        ),
        n AS (
          SELECT source, count(*) AS rowCount FROM result_rows
          WHERE source IN (SELECT path FROM f) GROUP BY source
        )
        SELECT f.path, f.format, f.size, f.mtimeNs, f.ingestedOffset, f.tailHash,
          coalesce(n.rowCount, 0), now()::TIMESTAMP
        FROM f LEFT JOIN n ON n.source = f.path
        """,
        [list(c) for c in columns],
    )


def scan(con: duckdb.DuckDBPyConnection, paths: str | Path | Iterable[str | Path]) -> IngestReport:
    """Put the views straight over the files, without copying their rows: the cold path.

    Complete JSON Lines streams are read by DuckDB at query time, only the
    columns a query needs; v3 files and streams with a torn last line are
    read now (they need the reference reader or a slice) into a small table.
    A malformed stream therefore fails when queried, with DuckDB's message
    naming the file and line; `ingest` checks everything up front instead.
    """
    report = IngestReport()
    files = discover(paths)
    report.files_seen = report.files_new = len(files)
    inputs: list[_Input] = []
    temps: list[str] = []
    con.execute(_table_sql("result_rows_static"))
    try:
        for path in files:
            _plan_file(path, None, inputs, [], [], temps, report)
        copied = [i for i in inputs if i.read_path != i.source]
        try:
            report.rows_added = _insert(con, copied, table="result_rows_static")
        except Exception as exc:
            if _is_duckdb_error(exc):
                _diagnose(con, copied, exc)
            raise
    finally:
        for name in temps:
            Path(name).unlink(missing_ok=True)
    direct = [i for i in inputs if i.read_path == i.source]
    view = "SELECT * FROM result_rows_static"
    if direct:
        listed = "[" + ", ".join("'" + i.source.replace("'", "''") + "'" for i in direct) + "]"
        view += " UNION ALL BY NAME " + _read_sql(listed, in_place=True)
    con.execute(f"CREATE OR REPLACE VIEW result_rows AS {view}")
    con.execute(REPEATS_VIEW_SQL)
    con.execute(_views_sql(_cells_sql()))
    return report


def _plan_file(
    path: Path,
    known: _Known | None,
    inputs: list[_Input],
    replaced: list[str],
    file_rows: list[tuple[str, str, int, int, int, str | None]],
    temps: list[str],
    report: IngestReport,
) -> None:
    stat = path.stat()
    key = str(path)
    if known is not None and not known.intact:
        report.warnings.append(
            f"{key}: the database held {known.rows} of the {known.row_count} rows recorded "
            "for it (rows deleted by hand?); its rows are read again"
        )
    elif known is not None and known.size == stat.st_size and known.mtime_ns == stat.st_mtime_ns:
        report.files_unchanged += 1
        if known.format == "other":
            report.skipped.append((key, "not a result file"))
        return
    fmt = result_format(path)
    if fmt is None:
        report.skipped.append((key, "not a result file (no v3 header, no result rows)"))
        if known is not None and known.format != "other":
            replaced.append(key)
        file_rows.append((key, "other", stat.st_size, stat.st_mtime_ns, 0, None))
        return
    if fmt == "v3":
        rows, (started, finished) = _read_v3(path, report.warnings.append)
        if known is not None:
            replaced.append(key)
            report.files_replaced += 1
        else:
            report.files_new += 1
        inputs.append(
            _Input(
                source=key,
                format="v3",
                read_path=_temp_jsonl(rows, temps),
                stem=run_stem(path),
                header_started=started,
                header_finished=finished,
            )
        )
        file_rows.append((key, "v3", stat.st_size, stat.st_mtime_ns, stat.st_size, None))
        return
    with open(path, "rb") as handle:
        end, torn = rows_end(handle, stat.st_size)
        start = 0
        grown = False
        if known is not None and known.format == "jsonl" and known.intact and end > known.offset:
            before, tail = _prefix_hashes(handle, known.offset, end)
            grown = before == known.tail_hash
        else:
            (tail,) = _prefix_hashes(handle, end)
        if known is not None and grown:
            start = known.offset
            report.files_grown += 1
        elif known is not None:
            replaced.append(key)
            report.files_replaced += 1
        else:
            report.files_new += 1
        if torn:
            report.warnings.append(
                f"{key}: the last line is incomplete (a run still writing, or one that "
                "crashed); it is left for the next ingest"
            )
        if end > start:
            if start == 0 and end == stat.st_size and not reads_as_pattern(key):
                read_path = key
            else:
                read_path = _temp_slice(handle, start, end, temps)
            inputs.append(
                _Input(
                    source=key,
                    format="jsonl",
                    read_path=read_path,
                    stem=run_stem(path),
                    start=start,
                )
            )
    file_rows.append((key, "jsonl", stat.st_size, stat.st_mtime_ns, end, tail))


def _read_v3(
    path: Path, on_warning: Callable[[str], None]
) -> tuple[list[dict[str, Any]], tuple[str | None, str | None]]:
    from capeval.results.load import read_rows

    # Its warnings (a repeat held twice) are the ingest's, printed with the rest.
    return read_rows(path, on_warning=on_warning), run_times(path)


def _temp_jsonl(rows: Sequence[dict[str, Any]], temps: list[str]) -> str:
    fd, name = tempfile.mkstemp(prefix="capeval-history-", suffix=".jsonl")
    temps.append(name)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return name


def _temp_slice(handle: Any, start: int, end: int, temps: list[str]) -> str:
    fd, name = tempfile.mkstemp(prefix="capeval-history-", suffix=".jsonl")
    temps.append(name)
    handle.seek(start)
    with os.fdopen(fd, "wb") as out:
        remaining = end - start
        while remaining > 0:
            chunk = handle.read(min(remaining, 1 << 20))
            if not chunk:
                break
            out.write(chunk)
            remaining -= len(chunk)
    return name


def _read_sql(files: str = "?", *, in_place: bool = False, batched: bool = False) -> str:
    """SELECT of table columns from JSON Lines files (`files`: a list parameter or literal).

    Staged files take their facts from `_inputs` (a batch's rows by the input
    index each line was given, see `_batch`); files read in place need no join.
    """
    raw = {**_RAW_COLUMNS, _BATCH_KEY: "BIGINT"} if batched else _RAW_COLUMNS
    columns = "{" + ", ".join(f"'{k}': '{v}'" for k, v in raw.items()) + "}"
    source = f"""read_json({files}, format = 'newline_delimited', records = true, filename = true,
               columns = {columns}, maximum_object_size = 67108864) r"""
    if in_place:
        return f"SELECT {_select_sql(_INPLACE_FACTS)}\nFROM {source}"
    join = f'i.idx = r."{_BATCH_KEY}"' if batched else "i.readPath = r.filename"
    return f"SELECT {_select_sql()}\nFROM {source}\nJOIN _inputs i ON {join}"


# DuckDB sets up every column of a read once per file: over 1,500 small run
# files that was 4 s of a 4.4 s read, against 0.04 s for the same rows in one
# file. Files under this size are read as one batch file instead, each line
# tagged with its input's index under a key no row may hold.
BATCH_MAX_BYTES = 1 << 20
_BATCH_KEY = "__capevalInput"


def _batch(inputs: Sequence[_Input], temps: list[str]) -> tuple[str, list[_Input]] | None:
    """One temp JSON Lines file holding the small inputs' lines, and those inputs, in order.

    A line that is not an object is copied as it is: DuckDB then refuses the
    batch and `_diagnose` reads each file on its own, naming file and line.
    """
    chosen: list[tuple[_Input, bytes]] = []
    for item in inputs:
        try:
            if os.path.getsize(item.read_path) >= BATCH_MAX_BYTES:
                continue
            data = Path(item.read_path).read_bytes()
        except OSError:
            continue  # read on its own, where the error is named
        if _BATCH_KEY.lower().encode() in data.lower():
            continue
        chosen.append((item, data))
    if len(chosen) < 2:
        return None
    fd, name = tempfile.mkstemp(prefix="capeval-history-batch-", suffix=".jsonl")
    temps.append(name)
    with os.fdopen(fd, "wb") as out:
        for index, (_, data) in enumerate(chosen):
            tag = b'{"' + _BATCH_KEY.encode() + b'":' + str(index).encode()
            for line in data.split(b"\n"):
                body = line.lstrip(b" \t\r")
                if body.startswith(b"{"):
                    rest = body[1:]
                    empty = rest.lstrip(b" \t\r").startswith(b"}")
                    line = tag + (b"" if empty else b",") + rest
                out.write(line + b"\n")
    return name, [item for item, _ in chosen]


def _stage(con: duckdb.DuckDBPyConnection, inputs: Sequence[_Input]) -> None:
    """The per-file facts of `inputs` as the temp table `_inputs` (one statement)."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _inputs AS SELECT CAST(unnest(?) AS BIGINT) AS idx, "
        "unnest(?) AS readPath, "
        "unnest(?) AS source, unnest(?) AS format, unnest(?) AS stem, "
        "CAST(unnest(?) AS VARCHAR) AS headerStartedAt, "
        "CAST(unnest(?) AS VARCHAR) AS headerFinishedAt",
        [
            list(range(len(inputs))),
            [i.read_path for i in inputs],
            [i.source for i in inputs],
            [i.format for i in inputs],
            [i.stem for i in inputs],
            [i.header_started for i in inputs],
            [i.header_finished for i in inputs],
        ],
    )


def _insert(
    con: duckdb.DuckDBPyConnection, inputs: Sequence[_Input], table: str = "result_rows"
) -> int:
    if not inputs:
        return 0
    before = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]
    temps: list[str] = []
    try:
        batch = _batch(inputs, temps)
        rest = list(inputs)
        if batch is not None:
            name, batched = batch
            _stage(con, batched)
            con.execute(f"INSERT INTO {table} BY NAME " + _read_sql(batched=True), [[name]])
            taken = {id(i) for i in batched}
            rest = [i for i in inputs if id(i) not in taken]
        if rest:
            _stage(con, rest)
            con.execute(
                f"INSERT INTO {table} BY NAME " + _read_sql(), [[i.read_path for i in rest]]
            )
    finally:
        for name in temps:
            Path(name).unlink(missing_ok=True)
    after = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]
    return int(after - before)


def _is_duckdb_error(exc: BaseException) -> bool:
    import duckdb

    return isinstance(exc, duckdb.Error)


def _diagnose(con: duckdb.DuckDBPyConnection, inputs: Sequence[_Input], exc: BaseException) -> None:
    """Raise a `ResultFileError` naming the file DuckDB could not read (and the line, if known)."""
    from capeval.results.jsonl import parse_jsonl

    for item in inputs:
        _stage(con, [item])
        try:
            # Materialise every column: a count alone would let DuckDB skip the bad field.
            con.execute(f"CREATE OR REPLACE TEMP TABLE _probe AS {_read_sql()}", [[item.read_path]])
        except Exception as single:
            if not _is_duckdb_error(single):
                raise
            data = Path(item.read_path).read_bytes()
            if item.format == "jsonl":
                before = _lines_before(item.source, item.start)
                try:
                    parse_jsonl(data, item.source)  # names the line of a malformed row
                except ResultFileError as bad:
                    if bad.line is None or not before:
                        raise
                    raise ResultFileError(
                        item.source, bad.message, line=bad.line + before
                    ) from None
            else:
                before = 0
            lines = (
                line for line in enumerate(data.split(b"\n"), start=before + 1) if line[1].strip()
            )
            for index, (line, raw) in enumerate(lines):
                try:
                    problem = _typed_problem(json.loads(raw))
                except (ValueError, RecursionError, AttributeError):
                    continue  # a torn last line, which the slice leaves out anyway
                if problem is None:
                    continue
                if item.format == "jsonl":
                    raise ResultFileError(item.source, problem, line=line) from single
                # A v3 file's rows were staged one a line, in the order of its cases.
                raise ResultFileError(item.source, f"cases[{index}]: {problem}") from single
            raise ResultFileError(
                item.source,
                f"DuckDB cannot read its rows ({str(single).splitlines()[0]}); "
                "check the types of the fields named there",
            ) from single


def _lines_before(path: str, offset: int) -> int:
    """How many lines of `path` precede byte `offset` (where a grown stream's new rows start)."""
    if offset <= 0:
        return 0
    count, done = 0, 0
    with open(path, "rb") as handle:
        while done < offset:
            chunk = handle.read(min(_HASH_CHUNK, offset - done))
            if not chunk:
                break
            count += chunk.count(b"\n")
            done += len(chunk)
    return count


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
        _ensure_schema(con)
    return con


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
