"""Result rows as a polars DataFrame: one row per repeat, ready for a notebook.

The schema is fixed (every known field, every behavior metric, flattened
token usage, `source`), so frames built from files written by different tool
versions concatenate and query alike: a field a file lacks is null, never a
missing column. Unknown extra fields are kept as extra columns.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capeval.metrics import METRIC_NAMES, TOOL_CALLS_BY_NAME
from capeval.results.load import read_rows

if TYPE_CHECKING:
    import polars as pl

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


_NONE = type(None)
FAST_TYPES: dict[str, set[type]] = {
    STR: {str, _NONE},
    INT: {int, _NONE},
    FLOAT: {int, float, _NONE},
    BOOL: {bool, _NONE},
}


class FrameError(ValueError):
    """A row field whose value cannot take its column's type."""


def _convert(value: Any, kind: str, where: Callable[[], str]) -> Any:
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
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif kind == FLOAT and isinstance(value, int | float):
        return float(value)
    raise FrameError(f"{where()}: expected {kind}, found {json.dumps(value)[:60]}")


def _extra_kind(values: Sequence[Any]) -> str:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return BOOL
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return INT
    if present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return FLOAT
    return STR


def _flatten(row: Mapping[str, Any], source: str | None) -> dict[str, Any]:
    flat = {k: v for k, v in row.items() if k not in FLATTENED}
    bait = row.get("bait")
    if isinstance(bait, Mapping):
        flat["baitMetric"] = bait.get("metric")
        flat["baitThreshold"] = bait.get("threshold")
    behaviors = row.get("behaviors")
    flat["behaviorsCaptured"] = isinstance(behaviors, Mapping)
    if isinstance(behaviors, Mapping):
        for metric in METRIC_NAMES:
            flat[metric] = behaviors.get(metric)
        if behaviors.get(TOOL_CALLS_BY_NAME) is not None:
            flat[TOOL_CALLS_BY_NAME] = behaviors[TOOL_CALLS_BY_NAME]
    usage = row.get("tokenUsage")
    if isinstance(usage, Mapping):
        for column, key in TOKEN_KEYS.items():
            flat[column] = usage.get(key)
    flat["source"] = source
    return flat


def _build(flat_rows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    import polars as pl

    dtypes = {STR: pl.String, INT: pl.Int64, FLOAT: pl.Float64, BOOL: pl.Boolean}
    extras = sorted({k for r in flat_rows for k in r} - set(FIXED_COLUMNS))
    columns: dict[str, pl.Series] = {}
    for name in [*FIXED_COLUMNS, *extras]:
        raw = [r.get(name) for r in flat_rows]
        kind = FIXED_COLUMNS.get(name) or _extra_kind(raw)
        if {type(v) for v in raw} <= FAST_TYPES[kind]:
            # Common case: every value already has the column's type (ints in
            # a float column are exact below 2**53), so skip per-cell checks.
            columns[name] = pl.Series(name, raw, dtype=dtypes[kind], strict=False)
            continue
        values = [
            _convert(
                v,
                kind,
                lambda i=i, name=name: (
                    f"{flat_rows[i].get('source') or 'row'} "
                    f"(row {i}, case {flat_rows[i].get('id')!r}): field {name!r}"
                ),
            )
            for i, v in enumerate(raw)
        ]
        columns[name] = pl.Series(name, values, dtype=dtypes[kind])
    return pl.DataFrame(columns)


def rows_to_frame(rows: Iterable[Mapping[str, Any]], *, source: str | None = None) -> pl.DataFrame:
    """One frame row per result row; `source` fills the column of that name."""
    return _build([_flatten(r, source) for r in rows])


def load_frame(
    paths: str | Path | Iterable[str | Path],
    *,
    on_warning: Callable[[str], None] | None = None,
) -> pl.DataFrame:
    """Load result files (JSON Lines and v3 alike) into one frame, `source` = file path."""
    if isinstance(paths, str | Path):
        paths = [paths]
    flat: list[dict[str, Any]] = []
    for path in paths:
        for row in read_rows(path, on_warning=on_warning):
            flat.append(_flatten(row, str(path)))
    return _build(flat)
