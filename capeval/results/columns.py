"""The columns of a result frame and their types: one table that every reader agrees on.

`load_frame` builds its polars frame with these types, the history views
check the same fields' JSON types before DuckDB would cast them, and tests
compare the readers against them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from capeval.core.metrics import METRIC_NAMES, TOOL_CALLS_BY_NAME

# dtype names rather than polars objects: polars is imported only when a frame
# is actually built.
STR, INT, FLOAT, BOOL = "str", "int", "float", "bool"

ROW_COLUMNS: dict[str, str] = {
    "resultKey": STR,
    "id": STR,
    "tier": STR,
    "title": STR,
    "variantId": STR,
    "provider": STR,
    "model": STR,
    "passed": BOOL,
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
    "repeat": INT,
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
BAIT_COLUMNS: dict[str, str] = {"baitMetric": STR, "baitThreshold": FLOAT}
METRIC_COLUMNS: dict[str, str] = {
    m: (FLOAT if m == "maxTurnDurationMs" else INT) for m in METRIC_NAMES
}
TOKEN_COLUMNS: dict[str, str] = {
    "tokenInput": INT,
    "tokenOutput": INT,
    "tokenCacheRead": INT,
    "tokenCacheWrite": INT,
    "tokenThinking": INT,
}
TOKEN_KEYS: dict[str, str] = {
    "tokenInput": "input",
    "tokenOutput": "output",
    "tokenCacheRead": "cacheRead",
    "tokenCacheWrite": "cacheWrite",
    "tokenThinking": "thinking",
}
# Fields replaced by flattened columns above.
FLATTENED = frozenset({"behaviors", "tokenUsage", "bait"})

FIXED_COLUMNS: dict[str, str] = {
    **ROW_COLUMNS,
    **BAIT_COLUMNS,
    "behaviorsCaptured": BOOL,
    **METRIC_COLUMNS,
    TOOL_CALLS_BY_NAME: STR,
    **TOKEN_COLUMNS,
    "source": STR,
}


class ColumnTypeError(ValueError):
    """A row field whose value cannot take its column's type."""


# Int64 bounds: polars turns a Python int past them into a silent null.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def fits_int64(value: int) -> bool:
    return INT64_MIN <= value <= INT64_MAX


# What a value of each column kind must be, in a misfit's message.
_RIGHT = {INT: "an integer", FLOAT: "a number", BOOL: "true or false"}


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
    raise ColumnTypeError(f"{where()} must be {_RIGHT[kind]}, found {json.dumps(value)[:60]}")
