"""The columns of a result frame and their types: one table that every reader agrees on.

`load_frame` builds its polars frame with these types, the history views
check the same fields' JSON types before DuckDB would cast them, and tests
compare the readers against them.
"""

from __future__ import annotations

from capeval.metrics import METRIC_NAMES, TOOL_CALLS_BY_NAME

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
