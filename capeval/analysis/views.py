"""The history's table and views, in SQL generated from the column registry.

`result_rows` holds one typed row per stored row; the views on it answer
questions about runs (`capeval.analysis.history` says which). Each field is
typed by the registry's one rule (`capeval.results.columns.typed_sql`), so a
value means here what it means in `load_frame` and the gate: 7.5 turns, "7"
turns or a duration of true is refused (naming file and field), never a
rounded or cast number. The checks of the row contract
(`capeval.results.rowcheck`) refuse what the reference reader refuses, in
its words. Ingesting, a value DuckDB would read otherwise than Python (a
number in a text field, whose JSON Python lays out otherwise) is an error
too, and `capeval.analysis.ingest` hands the file to the reference reader;
scanning lazily, the view takes DuckDB's reading of it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from capeval.analysis.cellsql import measures
from capeval.core.metrics import (
    METRIC_NAMES,
    NUMERIC_METRICS,
    TOOL_CALLS_BY_NAME,
)
from capeval.results.columns import (
    BY_NAME,
    COLUMNS,
    RIGHT,
    STR,
    TOKEN_KEYS,
    Column,
    ColumnTypeError,
    TypedSQL,
    convert,
    json_column_types,
    json_text,
    outcome_of_row_sql,
    path_sql,
    sql_str,
    task_calls_of_row_sql,
    typed_sql,
)
from capeval.results.identity import run_identity
from capeval.results.rowcheck import CONTRACT, no_cell_sql
from capeval.results.supersede import superseded_sql

if TYPE_CHECKING:
    import duckdb

# A time string that states its UTC offset (`Z`, `+09:00`, `-0800`, `+09`);
# one without is taken as UTC. Shared with the plots (a polars expression),
# so the views and the figures never date a run differently.
UTC_OFFSET_PATTERN = r"(?:[zZ]|[+-][0-9]{2}(?::?[0-9]{2})?)$"

# Fields with rules of their own: the row contract's, the cell key, JSON kept
# as JSON, metrics as the numbers the contract allows, timestamps.
_OWN_RULES = frozenset(
    {"id", "passed", "outcome", "repeat", "resultKey", "variantId", "runId", "runStartedAt"}
    | {TOOL_CALLS_BY_NAME, *METRIC_NAMES}
)
# Every other field of the registry, typed by its kind.
_TYPED: tuple[Column, ...] = tuple(
    c for c in COLUMNS if c.path is not None and c.name not in _OWN_RULES
)
# The typed fields that are not text, by their place in a row (what the tests
# hold to be `load_frame`'s typed columns).
TYPED_FIELDS: dict[str, str] = {".".join(c.path or ()): c.kind for c in _TYPED if c.kind != STR}
# A repeat's own start and end, beside the registry's fields.
_TIMES = (("startedAt",), ("finishedAt",))
_READ_PATHS: list[tuple[str, ...]] = [
    *(c.path for c in COLUMNS if c.path is not None),
    *_TIMES,
]
RAW_TYPES: dict[str, str] = json_column_types(_READ_PATHS)

# Per-file facts, from the staged `_inputs` table (alias i)...
STAGED_FACTS = {
    "source": "i.source",
    "format": "i.format",
    "stem": "i.stem",
    "headerStartedAt": "i.headerStartedAt",
    "headerFinishedAt": "i.headerFinishedAt",
    # The row's place among its file's rows: an input's rows are read in file order,
    # and a grown stream's new rows come after the `rowStart` ingested before.
    "rowIndex": "(i.rowStart + r.ordinality - min(r.ordinality) OVER (PARTITION BY i.idx))",
}
# ...or, for a JSON Lines file read in place, from its name alone (no join).
INPLACE_FACTS = {
    "source": "r.filename",
    "format": "'jsonl'",
    "stem": "parse_filename(r.filename, true)",
    "headerStartedAt": "CAST(NULL AS VARCHAR)",
    "headerFinishedAt": "CAST(NULL AS VARCHAR)",
    "rowIndex": "(r.ordinality - min(r.ordinality) OVER (PARTITION BY r.filename))",
}
# Raised by an ingest for a value the reference reader must read (`ingest`'s fallback).
INEXACT = "capeval: a value DuckDB reads otherwise than the reference reader"


def _raw(path: tuple[str, ...]) -> str:
    return path_sql(path, "r")


def run_identity_sql(facts: Mapping[str, str], run_id: str, run_started: str) -> tuple[str, str]:
    """`run_identity` over typed row fields and per-file facts, as SQL text."""
    return run_identity(
        run_id,
        run_started,
        facts["stem"],
        facts["headerStartedAt"],
        coalesce=lambda *args: f"coalesce({', '.join(args)})",
        concat=lambda *args: "(" + " || ".join(args) + ")",
        text=lambda value: sql_str(value),
    )


def _refuse(source: str, name: str, right: str, text: str) -> str:
    """SQL raising the reference reader's complaint about field `name` of a row.

    `ingest` turns it into the reader's own error naming file and line; a
    scan, which reads lazily, raises it when queried.
    """
    return (
        f"error(concat({source}, ': field ''{name}'' must be {right}, found ', "
        f"coalesce({text}, 'nothing'), ' (case ', coalesce({json_text(_raw(('id',)))}, '?'), ')'))"
    )


class _Select:
    """The typed columns of the table, over raw rows (alias r) and per-file facts."""

    def __init__(self, facts: Mapping[str, str], *, lazy: bool) -> None:
        self.facts = facts
        self.lazy = lazy

    def checked(self, name: str, typed: TypedSQL, text: str, right: str) -> str:
        inexact = "" if self.lazy else f"WHEN {typed.inexact} THEN error({sql_str(INEXACT)}) "
        return (
            f"CASE WHEN {typed.misfit} THEN {_refuse(self.facts['source'], name, right, text)} "
            f"{inexact}ELSE {typed.value} END"
        )

    def typed(self, column: Column) -> str:
        path = column.path or ()
        typed = typed_sql(column.kind, _raw(path))
        right = RIGHT.get(column.kind, "a string")
        return self.checked(".".join(path), typed, json_text(_raw(path)), right)

    def contract(self, path: tuple[str, ...], typed: TypedSQL) -> str:
        """A field of the row contract, refused in `row_problem`'s words."""
        check = CONTRACT[path]
        text = json_text(_raw(path))
        number = f"TRY_CAST({text} AS DOUBLE)"
        rule = TypedSQL(typed.value, check.misfit(text, number), check.inexact(text, number))
        return self.checked(".".join(path), rule, text, check.right)

    def metric(self, metric: str) -> str:
        path = ("behaviors", metric)
        text = json_text(_raw(path))
        value = self.contract(path, TypedSQL(f"TRY_CAST({text} AS DOUBLE)", "false", "false"))
        if metric != "taskToolCallCount":
            return value
        filled = task_calls_of_row_sql(TypedSQL(value, "false", "false"), "r")
        twice = (
            f"error(concat({self.facts['source']}, ': a count of ''behaviors.toolCallsByName'' "
            "is written twice; keep one (case ', "
            f"coalesce({json_text(_raw(('id',)))}, '?'), ')'))"
        )
        inexact = "" if self.lazy else f"WHEN {filled.inexact} THEN error({sql_str(INEXACT)}) "
        return (
            f"CASE WHEN {filled.misfit} THEN {twice} {inexact}"
            f"ELSE CAST({filled.value} AS DOUBLE) END"
        )

    def sql(self) -> str:
        source = self.facts["source"]

        def text(path: tuple[str, ...]) -> TypedSQL:
            return typed_sql(STR, _raw(path))

        run_id, run_started = run_identity_sql(
            self.facts, self.typed(BY_NAME["runId"]), self.typed(BY_NAME["runStartedAt"])
        )
        # A cell key that is no string is none, as to the reference reader.
        key, variant = (
            f"CASE WHEN starts_with({json_text(_raw((name,)))}, '\"') "
            f"THEN {text((name,)).value} END"
            for name in ("resultKey", "variantId")
        )
        case = self.contract(("id",), text(("id",)))
        columns: dict[str, str] = {"source": source, "format": self.facts["format"]}
        for column in COLUMNS:
            name = column.name
            if column.path is None or len(column.path) > 1:
                continue
            if name == "runStartedAt":
                continue
            if name == "runId":
                columns[name] = run_id
            elif name == "id":
                columns[name] = case
            elif name == "passed":
                columns[name] = self.contract(
                    ("passed",), TypedSQL(f"({json_text(_raw(('passed',)))} = 'true')", "", "")
                )
            elif name == "outcome":
                # The row's own, else derived (rows that predate it); refused as the
                # reference refuses it when it is none of the three or disagrees with `passed`.
                columns[name] = self.checked(
                    "outcome",
                    outcome_of_row_sql("r"),
                    json_text(_raw(("outcome",))),
                    "passed, failed or error, agreeing with passed",
                )
            elif name == "repeat":
                columns[name] = self.contract(
                    ("repeat",), typed_sql(BY_NAME["repeat"].kind, _raw(("repeat",)))
                )
            elif name == "resultKey":
                columns[name] = f"coalesce(nullif({key}, ''), {variant} || '::' || {case})"
            elif name == "variantId":
                no_cell = no_cell_sql(
                    json_text(_raw(("resultKey",))), json_text(_raw(("variantId",)))
                )
                columns[name] = (
                    f"CASE WHEN {no_cell} THEN error(concat({source}, ': row for case ', "
                    f"coalesce({json_text(_raw(('id',)))}, '?'), "
                    "' needs ''resultKey'' or ''variantId'' (a string)')) "
                    f"ELSE coalesce({variant}, regexp_extract({key}, '^(.*)::', 1)) END"
                )
            else:
                columns[name] = self.typed(column)
        columns |= {
            "rowIndex": self.facts["rowIndex"],
            "runStartedAt": _utc(run_started),
            "runFinishedAt": _utc(self.facts["headerFinishedAt"]),
            **{p[0]: _utc(text(p).value) for p in _TIMES},
            **{c: self.typed(BY_NAME[c]) for c in TOKEN_KEYS},
            "behaviorsCaptured": f"{_raw(('behaviors',))} IS NOT NULL",
            **{m: self.metric(m) for m in METRIC_NAMES},
            # Kept as JSON: its own text, informational (never compared).
            TOOL_CALLS_BY_NAME: _raw(("behaviors", TOOL_CALLS_BY_NAME)),
            "baitMetric": self.typed(BY_NAME["baitMetric"]),
            "baitThreshold": self.typed(BY_NAME["baitThreshold"]),
        }
        return ",\n  ".join(f'{sql} AS "{name}"' for name, sql in columns.items())


def select_sql(facts: Mapping[str, str] = STAGED_FACTS, *, lazy: bool = False) -> str:
    """Raw JSON rows (alias r) plus per-file facts -> table columns.

    `lazy`: for views read at query time, which take DuckDB's reading of a
    value the reference reader would read otherwise (there is no file to hand
    it then).
    """
    return _Select(facts, lazy=lazy).sql()


def type_problem(row: Mapping[str, Any]) -> str | None:
    """Why a typed field of `row` has a value of the wrong JSON type, in `convert`'s words:
    the Python side of the typed columns, for the error that names the line."""
    for column in _TYPED:
        *parents, key = column.path or ()
        holder: Any = row
        for parent in parents:
            holder = holder.get(parent) if isinstance(holder, Mapping) else None
        if not isinstance(holder, Mapping):
            continue
        name = ".".join(column.path or ())
        try:
            convert(holder.get(key), column.kind, functools.partial(str, f"field {name!r}"))
        except ColumnTypeError as exc:
            return f"{exc} (case {row.get('id')!r})"
    return None


def typed_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """`row` with each typed field as `convert` makes it: what the views read exactly.

    A cell key that is no string is none to the reference reader, which then
    files the row under `variantId::id` (`capeval.core.aggregate.row_result_key`).
    """
    out: dict[str, Any] = dict(row)
    for name in ("resultKey", "variantId"):
        if not isinstance(out.get(name), str):
            out[name] = None
    if not isinstance(out.get("bait"), Mapping):
        out["bait"] = None  # no declaration, as `load_frame` reads it (no bait columns)
    for column in (*_TYPED, BY_NAME["runId"], BY_NAME["runStartedAt"]):
        *parents, key = column.path or ()
        holder: Any = out
        for parent in parents:
            child = holder.get(parent) if isinstance(holder, Mapping) else None
            if not isinstance(child, Mapping):
                holder = None
                break
            holder[parent] = dict(child)
            holder = holder[parent]
        if isinstance(holder, dict) and holder.get(key) is not None:
            holder[key] = convert(holder[key], column.kind, lambda: "")
    return out


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


def read_sql(files: str, columns_key: str | None = None) -> str:
    """read_json of JSON Lines `files` (a list parameter or literal), every field as the
    registry reads it; `columns_key`: one more BIGINT field (a batch's input index)."""
    types = {**RAW_TYPES, **({columns_key: "BIGINT"} if columns_key else {})}
    columns = "{" + ", ".join(f"{sql_str(k)}: {sql_str(v)}" for k, v in types.items()) + "}"
    return (
        f"read_json({files}, format = 'newline_delimited', records = true, filename = true, "
        f"columns = {columns}, maximum_object_size = 67108864) WITH ORDINALITY r"
    )


SCHEMA_SQL = """
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


def cells_sql(where: str = "") -> str:
    """Per run and cell aggregates over `repeats` (optionally only some runs)."""
    summed = ["durationMs", "turnsUsed", "tokenInput", "tokenOutput"]
    return f"""SELECT
  runId,
  min(runStartedAt) AS runStartedAt,
  resultKey,
  variantId,
  id AS caseId,
  any_value(tier) AS tier,
  {", ".join(measures(["repeats", "passCount", "passRate", "errors", "medianTurns", "medianDurationMs"], casts={"passCount": "BIGINT", "repeats": "BIGINT", "errors": "BIGINT"}))},
  CAST(sum(coalesce(attempts, 1)) AS BIGINT) AS attempts,
  {", ".join(measures(summed, casts=dict.fromkeys(summed[1:], "BIGINT")))},
  count(DISTINCT coalesce(provider, '?') || ':' || coalesce(model, '?')) > 1 AS mixed,
  any_value(baitMetric) AS baitMetric,
  any_value(baitThreshold) AS baitThreshold,
  {", ".join(measures(METRIC_NAMES))}
FROM repeats
{where}
GROUP BY runId, resultKey, variantId, id"""


# What `connect` gives SQL to read, as docs/history.md#views lists it.
VIEWS = ("repeats", "cells", "cell_metrics", "runs", "metric_directions")

# First, within each file, a row a later row of its repeat supersedes (an
# `error` row a `--retry-errors` resume ran again) is left out, as every
# reader leaves it out (`capeval.results.supersede`). Then a repeat that
# several files hold (a run's stream and its v3 export) is taken from one
# file only, its JSON Lines copy first; within that file every row is kept. A
# repeat recorded twice in one stream otherwise (a duplicate, not a
# supersession) is counted twice, as the reference reader, `capeval
# aggregate` and the gate count it, and `ingest` warns as they do; keeping
# one copy made the views' pass rates differ from theirs, by a copy picked at
# random. A row without a `repeat` number (the field is optional) cannot be
# matched with another copy of itself, so it is always kept.
_SUPERSEDED = superseded_sql(
    outcome="outcome",
    order="rowIndex",
    file="source",
    run="runId",
    cell="resultKey",
    repeat='"repeat"',
)
REPEATS_VIEW_SQL = f"""
CREATE OR REPLACE VIEW repeats AS
SELECT *, id AS caseId FROM (SELECT * FROM result_rows QUALIFY NOT {_SUPERSEDED})
QUALIFY "repeat" IS NULL OR source = first_value(source) OVER (
  PARTITION BY runId, variantId, id, "repeat"
  ORDER BY CASE format WHEN 'jsonl' THEN 0 ELSE 1 END, source
)
"""


def views_sql(cells_source: str) -> str:
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
  CAST(count_if(outcome = 'error') AS BIGINT) AS errors,
  count_if(passed) / nullif(count_if(outcome <> 'error'), 0) AS passRate,
  CAST(sum(coalesce(attempts, 1)) AS BIGINT) AS attempts,
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


def table_sql(name: str = "result_rows") -> str:
    """The row table, typed by running the ingest projection over nothing."""
    raw = ", ".join(f'CAST(NULL AS {kind}) AS "{name}"' for name, kind in RAW_TYPES.items())
    raw += ", CAST(NULL AS BIGINT) AS ordinality"
    facts = ", ".join(
        f"CAST(NULL AS VARCHAR) AS {name}" for name in STAGED_FACTS if name != "rowIndex"
    )
    facts += ", CAST(NULL AS BIGINT) AS idx, CAST(NULL AS BIGINT) AS rowStart"
    return (
        f"CREATE TABLE IF NOT EXISTS {name} AS SELECT {select_sql()} "
        f"FROM (SELECT {raw}) r, (SELECT {facts}) i WHERE false"
    )


def ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Tables and views of a stored history; `cells` is kept materialised in `cell_stats`."""
    con.execute(SCHEMA_SQL)
    con.execute(table_sql())
    con.execute(REPEATS_VIEW_SQL)
    con.execute(f"CREATE TABLE IF NOT EXISTS cell_stats AS {cells_sql()}")
    con.execute(views_sql("SELECT * FROM cell_stats"))


def refresh_cells(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> None:
    """Recompute the materialised cells of the runs whose rows changed."""
    if not run_ids:
        return
    con.execute("DELETE FROM cell_stats WHERE runId IN (SELECT unnest(?))", [run_ids])
    con.execute(
        f"INSERT INTO cell_stats BY NAME {cells_sql('WHERE runId IN (SELECT unnest(?))')}",
        [run_ids],
    )
