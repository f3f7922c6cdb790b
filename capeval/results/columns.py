"""The columns of a result row: one registry every reader is generated from.

Each column says where a row holds it (its JSON path), what type it has,
whether a verdict reads it, and, for `taskToolCallCount`, the legacy rule
that fills it for rows that predate it. From this one table come the
polars schema of `load_frame`, the typed SQL of the history views and of
the DuckDB readers (`capeval.analysis`), and the checks of the Python
reference reader (`convert` here, `capeval.results.rowcheck`), so a value
means the same whoever reads it.

The type rule has two renderings, Python (`convert`) and SQL (`typed_sql`),
and tests hold them to the same answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from capeval.core.metrics import LEGACY_TASK_TOOLS, METRIC_NAMES, TOOL_CALLS_BY_NAME
from capeval.core.outcome import ERROR, FAILED, LEGACY_ERROR_STATUS, OUTCOMES, PASSED

# dtype names rather than polars objects: polars is imported only when a frame
# is actually built.
STR, INT, FLOAT, BOOL = "str", "int", "float", "bool"


@dataclass(frozen=True)
class Column:
    name: str
    # Where a row holds it; None for what is derived (`behaviorsCaptured`, `source`).
    path: tuple[str, ...] | None
    kind: str
    # The gate reads it for its verdicts: a row holding it twice is refused by
    # every reader (which of two `passed` counts is not for a reader to guess;
    # DuckDB refuses a field it reads written twice, so the gate's fast path
    # sees each such row, and the reference reader agrees).
    verdict: bool = False


_ROW: dict[str, str] = {
    "resultKey": STR,
    "id": STR,
    "tier": STR,
    "title": STR,
    "variantId": STR,
    "provider": STR,
    "model": STR,
    "passed": BOOL,
    "outcome": STR,
    "agentExitCode": INT,
    "verifyExitCode": INT,
    "durationMs": FLOAT,
    "agentDurationMs": FLOAT,
    "verifyDurationMs": FLOAT,
    "status": STR,
    "sessionId": STR,
    "turnsUsed": INT,
    "toolCallCount": INT,
    "costUsd": FLOAT,
    "maxTurns": INT,
    "overBudget": BOOL,
    "skipPermissions": BOOL,
    "error": STR,
    "errorKind": STR,
    "providerStatus": INT,
    "repeat": INT,
    "attempts": INT,
    "textPreview": STR,
    "runId": STR,
    "runStartedAt": STR,
    "requestedProvider": STR,
    "requestedModel": STR,
    "agent": STR,
    "agentType": STR,
    "agentVersion": STR,
    "capevalVersion": STR,
    "gitCommit": STR,
    "gitDirty": BOOL,
}
# `outcome` and, for rows that predate it, `status` decide whether a repeat counts.
_VERDICT_FIELDS = frozenset(
    {"resultKey", "id", "provider", "model", "passed", "outcome", "status", "repeat"}
)
TOKEN_KEYS: dict[str, str] = {
    "tokenInput": "input",
    "tokenOutput": "output",
    "tokenCacheRead": "cacheRead",
    "tokenCacheWrite": "cacheWrite",
    "tokenThinking": "thinking",
}

COLUMNS: tuple[Column, ...] = (
    *(Column(name, (name,), kind, name in _VERDICT_FIELDS) for name, kind in _ROW.items()),
    Column("baitMetric", ("bait", "metric"), STR, True),
    Column("baitThreshold", ("bait", "threshold"), FLOAT, True),
    Column("behaviorsCaptured", None, BOOL),
    *(
        Column(m, ("behaviors", m), FLOAT if m == "maxTurnDurationMs" else INT, True)
        for m in METRIC_NAMES
    ),
    Column(TOOL_CALLS_BY_NAME, ("behaviors", TOOL_CALLS_BY_NAME), STR),
    *(Column(c, ("tokenUsage", key), INT, key == "input") for c, key in TOKEN_KEYS.items()),
    Column("source", None, STR),
)
BY_NAME: dict[str, Column] = {c.name: c for c in COLUMNS}

# The frame's schema, by name, in order.
FIXED_COLUMNS: dict[str, str] = {c.name: c.kind for c in COLUMNS}
ROW_COLUMNS: dict[str, str] = dict(_ROW)
BAIT_COLUMNS: dict[str, str] = {"baitMetric": STR, "baitThreshold": FLOAT}
METRIC_COLUMNS: dict[str, str] = {m: FIXED_COLUMNS[m] for m in METRIC_NAMES}
TOKEN_COLUMNS: dict[str, str] = {c: FIXED_COLUMNS[c] for c in TOKEN_KEYS}
# Row fields that frames and views hold flattened into the columns above.
FLATTENED = frozenset({"behaviors", "tokenUsage", "bait"})

# Members a row may not hold twice, by the object holding them (() is the row):
# what verdicts read, and the objects that lead to them.
TWICE_REFUSED: dict[tuple[str, ...], frozenset[str]] = {}
for _column in COLUMNS:
    if _column.verdict and _column.path is not None:
        for _depth, _key in enumerate(_column.path):
            _scope = _column.path[:_depth]
            TWICE_REFUSED[_scope] = TWICE_REFUSED.get(_scope, frozenset()) | {_key}
# And in a row that predates `taskToolCallCount`, what the legacy rule reads.
LEGACY_PATHS = tuple(("behaviors", TOOL_CALLS_BY_NAME, tool) for tool in LEGACY_TASK_TOOLS)
LEGACY_TWICE: dict[tuple[str, ...], frozenset[str]] = {
    ("behaviors",): frozenset({TOOL_CALLS_BY_NAME}),
    ("behaviors", TOOL_CALLS_BY_NAME): frozenset(LEGACY_TASK_TOOLS),
}


# -- the type rule, in Python ---------------------------------------------------------


class ColumnTypeError(ValueError):
    """A row field whose value cannot take its column's type."""


# Int64 bounds: polars turns a Python int past them into a silent null.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def fits_int64(value: int) -> bool:
    return INT64_MIN <= value <= INT64_MAX


# What a value of each column kind must be, in a misfit's message.
RIGHT = {INT: "an integer", FLOAT: "a number", BOOL: "true or false"}


def convert(value: Any, kind: str, where: Callable[[], str]) -> Any:
    """`value` as a `kind` column holds it; a misfit is a ColumnTypeError whose message
    starts with `where()` (the file, line and field) and says what would be right."""
    if value is None:
        return None
    if kind == STR:
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if kind == BOOL:
        if isinstance(value, bool):
            return value
    elif isinstance(value, bool):
        pass
    elif kind == INT:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int):
            if not fits_int64(value):
                # The gate reads such a value as a number; a null here would
                # silently move the medians a notebook computes.
                raise ColumnTypeError(
                    f"{where()} must be an integer from -2**63 to 2**63 - 1, found "
                    f"{json.dumps(value)[:60]}, which does not fit a 64-bit integer column"
                )
            return value
    elif kind == FLOAT and isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:  # as the gate reads it (`cells._number`): no usable number
            return None
    raise ColumnTypeError(f"{where()} must be {RIGHT[kind]}, found {json.dumps(value)[:60]}")


# -- the type rule, in SQL ----------------------------------------------------------------

# Below 2**53 a double holds every integer exactly, so a cast agrees with Python.
_EXACT = 2**53
_PAST_INT64 = 1e19


@dataclass(frozen=True)
class TypedSQL:
    """A JSON value (given as the text DuckDB keeps of it) in a column's type."""

    value: str
    # `convert` refuses the value.
    misfit: str
    # The value may not be what `convert` makes of it: a reader that can hand
    # the file to the reference reader does; a lazy view takes `value`.
    inexact: str


def json_text(json_sql: str) -> str:
    """A JSON value's text (NULL for JSON null or an absent field)."""
    return f"CAST({json_sql} AS VARCHAR)"


def typed_sql(kind: str, json_sql: str) -> TypedSQL:
    """`json_sql`, a JSON-typed value, as a `kind` column: `convert`'s rule in SQL.

    It works on the JSON text DuckDB keeps: a second parse (`json_type`)
    made the history ingest of a million rows a fifth slower.
    """
    text = json_text(json_sql)
    number = f"TRY_CAST({text} AS DOUBLE)"
    if kind == STR:
        # A string's text is quoted; JSON escapes need a real decode.
        value = (
            f"CASE WHEN NOT starts_with({text}, '\"') THEN {text} "
            f"WHEN contains({text}, '\\') THEN json_extract_string({json_sql}, '$') "
            f"ELSE {text}[2:-2] END"
        )
        # Another value is its JSON text, which Python lays out otherwise ({"a": 1}).
        return TypedSQL(value, "false", f"({text} IS NOT NULL AND NOT starts_with({text}, '\"'))")
    if kind == INT:
        whole = f"TRY_CAST({text} AS BIGINT)"
        misfit = (
            f"({text} IS NOT NULL AND ({number} IS NULL OR NOT isfinite({number}) "
            f"OR abs({number}) >= {_PAST_INT64} "
            f"OR (abs({number}) < {_EXACT} AND {number} <> trunc({number})) "
            f"OR ({whole} IS NULL AND abs({number}) >= {_EXACT})))"
        )
        # 9007199254740993.0 is a float to Python (...992), an exact decimal to DuckDB.
        inexact = f"(abs({number}) >= {_EXACT} AND NOT {_integer_literal(text)})"
        return TypedSQL(f"coalesce({whole}, CAST({number} AS BIGINT))", misfit, inexact)
    if kind == FLOAT:
        # An integer past the float range is infinity to DuckDB, no number to Python.
        return TypedSQL(number, f"({text} IS NOT NULL AND {number} IS NULL)", f"isinf({number})")
    return TypedSQL(
        f"({text} = 'true')",
        f"({text} IS NOT NULL AND {text} NOT IN ('true', 'false'))",
        "false",
    )


def _integer_literal(text: str) -> str:
    """Whether a JSON text is an integer as JSON writes one: digits and a sign only."""
    return f"(ltrim({text}, '-0123456789') = '')"


# -- the legacy rule, in SQL (in Python: `capeval.core.behaviors.backfill_legacy`) ------


def legacy_task_calls_sql(task_text: str, spawn_text: str, *, calls: str | None = None) -> TypedSQL:
    """`taskToolCallCount` of a row that predates it, from the JSON texts of its
    `toolCallsByName.task` and `.spawn_agent`: only an integer counts, else 0.

    `calls`: `toolCallsByName` as JSON, when a reader reads it whole (DuckDB
    then does not see either count written twice, which the reference refuses).
    """
    parts = [
        f"(CASE WHEN {_integer_literal(t)} THEN TRY_CAST({t} AS BIGINT) ELSE 0 END)"
        for t in (task_text, spawn_text)
    ]
    misfit = "false"
    if calls is not None:
        keys = f"json_keys({calls})"
        # Written twice: its first place from the start and from the end differ.
        misfit = " OR ".join(
            f"coalesce(list_position({keys}, {sql_str(t)}) <> "
            f"len({keys}) + 1 - list_position(list_reverse({keys}), {sql_str(t)}), false)"
            for t in LEGACY_TASK_TOOLS
        )
    # An integer longer than a BIGINT is a count to Python.
    inexact = " OR ".join(f"length({t}) > 18" for t in (task_text, spawn_text))
    return TypedSQL(f"(coalesce({parts[0]}, 0) + coalesce({parts[1]}, 0))", f"({misfit})", inexact)


def task_calls_sql(captured: str, task: TypedSQL, legacy: TypedSQL) -> TypedSQL:
    """`taskToolCallCount` as every reader fills it: the row's own, else the legacy count.

    `captured`: SQL true when the row has behaviors (a row without has no count).
    """
    predates = f"({captured} AND ({task.value}) IS NULL)"
    return TypedSQL(
        f"(CASE WHEN NOT {captured} THEN NULL WHEN ({task.value}) IS NOT NULL "
        f"THEN {task.value} ELSE {legacy.value} END)",
        f"({task.misfit} OR ({predates} AND {legacy.misfit}))",
        f"({task.inexact} OR ({predates} AND ({legacy.inexact})))",
    )


def task_calls_of_row_sql(own: TypedSQL, alias: str = "") -> TypedSQL:
    """`task_calls_sql` for a reader that holds a row's `toolCallsByName` whole, as JSON."""
    calls = path_sql(("behaviors", TOOL_CALLS_BY_NAME), alias)
    legacy = legacy_task_calls_sql(
        *(f"json_extract({calls}, '$.{tool}')::VARCHAR" for tool in LEGACY_TASK_TOOLS),
        calls=calls,
    )
    return task_calls_sql(f"({path_sql(('behaviors',), alias)} IS NOT NULL)", own, legacy)


# -- the outcome rule, in SQL (in Python: `capeval.core.outcome.row_outcome`) ----------


def outcome_sql(outcome_json: str, passed_text: str, status_json: str) -> TypedSQL:
    """A row's outcome: its `outcome` (JSON), else derived from `passed` (its JSON text)
    and `status` (JSON), as `row_outcome` derives it. `misfit`: a stated outcome that is
    none of the three, or disagrees with `passed` (`capeval.core.outcome.outcome_problem`).
    """
    stated = typed_sql(STR, outcome_json)
    text = json_text(outcome_json)
    status = typed_sql(STR, status_json).value
    derived = (
        f"CASE WHEN {passed_text} = 'true' THEN '{PASSED}' "
        f"WHEN {status} = {sql_str(LEGACY_ERROR_STATUS)} THEN '{ERROR}' ELSE '{FAILED}' END"
    )
    value = f"(CASE WHEN {text} IS NULL THEN {derived} ELSE {stated.value} END)"
    known = ", ".join(sql_str(o) for o in OUTCOMES)
    misfit = (
        f"({text} IS NOT NULL AND (NOT starts_with({text}, '\"') OR {stated.value} NOT IN ({known}) "
        f"OR (({stated.value} = '{PASSED}') <> coalesce({passed_text} = 'true', false))))"
    )
    return TypedSQL(value, misfit, "false")


def outcome_of_row_sql(alias: str = "") -> TypedSQL:
    """`outcome_sql` for a reader that reads a row's `outcome`, `passed` and `status` as JSON."""
    return outcome_sql(
        path_sql(("outcome",), alias),
        json_text(path_sql(("passed",), alias)),
        path_sql(("status",), alias),
    )


# -- reading the registry's fields with DuckDB ----------------------------------------


def sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def json_column_types(paths: Iterable[tuple[str, ...]]) -> dict[str, str]:
    """read_json's column types for these JSON paths, each read as JSON text (nested ones
    as STRUCT members), so every reader sees the type a value was written with."""
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"{'.'.join(path)}: its parent is read as a value")
        node.setdefault(path[-1], None)

    def render(node: dict[str, Any]) -> str:
        return ", ".join(
            f"{ident(k)} {'JSON' if v is None else 'STRUCT(' + render(v) + ')'}"
            for k, v in node.items()
        )

    return {k: "JSON" if v is None else f"STRUCT({render(v)})" for k, v in tree.items()}


def json_columns(paths: Iterable[tuple[str, ...]]) -> str:
    """read_json's `columns` argument for these JSON paths (`json_column_types`)."""
    types = json_column_types(paths)
    return "{" + ", ".join(f"{sql_str(k)}: {sql_str(v)}" for k, v in types.items()) + "}"


def path_sql(path: tuple[str, ...], alias: str = "") -> str:
    """A field of a read row, by its JSON path: `r."tokenUsage"."input"`."""
    return (f"{alias}." if alias else "") + ".".join(ident(p) for p in path)
