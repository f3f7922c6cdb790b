"""What a stored row must hold before aggregates and frames can trust it.

Only the fields the aggregates and the gate depend on are checked, and only
their types: every other field, known or unknown, is kept exactly as stored.
The checks are deliberately cheap (no schema engine per row) because the gate
reads files with hundreds of thousands of rows.
"""

from __future__ import annotations

from math import isfinite
from typing import Any

from capeval.core.metrics import NUMERIC_METRICS

_NUMBER_TYPES = (int, float)
_FLOAT_LIMIT = 2**1023  # an integer past this has no float: it cannot be a median


def _is_number(value: object) -> bool:
    # Exact types, not isinstance: excludes bool, and is several times faster
    # on the hot path of 200,000-row files. JSON parsing yields only these.
    return type(value) in _NUMBER_TYPES


def row_problem(row: Any) -> str | None:
    """Why `row` cannot be used as a result row, or None when it can.

    The message names the field and says what would be right, so the caller
    only has to prefix the file and line.
    """
    if not isinstance(row, dict):
        return f"a row must be a JSON object, found {type(row).__name__}"
    case_id = row.get("id")
    if not isinstance(case_id, str) or not case_id:
        return "field 'id' must be the case id (a non-empty string)"
    if not isinstance(row.get("passed"), bool):
        return f"field 'passed' must be true or false (case {case_id!r})"
    key, variant = row.get("resultKey"), row.get("variantId")
    if not isinstance(key, str) and not isinstance(variant, str):
        return f"row for case {case_id!r} needs 'resultKey' or 'variantId' (a string)"
    repeat = row.get("repeat")
    if repeat is not None and (not isinstance(repeat, int) or isinstance(repeat, bool)):
        return f"field 'repeat' must be a 0-based integer (case {case_id!r})"
    behaviors = row.get("behaviors")
    if behaviors is not None:
        if not isinstance(behaviors, dict):
            return f"field 'behaviors' must be an object or null (case {case_id!r})"
        for metric in NUMERIC_METRICS:
            value = behaviors.get(metric)
            if value is not None and (
                not _is_number(value)
                or (type(value) is float and not isfinite(value))
                or (type(value) is int and not -_FLOAT_LIMIT < value < _FLOAT_LIMIT)
            ):
                return (
                    f"field 'behaviors.{metric}' must be a finite number or null (case {case_id!r})"
                )
    usage = row.get("tokenUsage")
    if usage is not None and not isinstance(usage, dict):
        return f"field 'tokenUsage' must be an object or null (case {case_id!r})"
    return None
