"""What a stored row must hold before aggregates and frames can trust it.

Only the fields the aggregates and the gate depend on are checked, and only
their types: every other field, known or unknown, is kept exactly as stored.
The rules are stated once in docs/result-formats.md#row-checks and rendered
twice here: in Python (`row_problem`, for the reference reader) and in SQL
(`CONTRACT`, for the DuckDB readers; the outcome rule's SQL is
`capeval.results.columns.outcome_sql`). The Python checks are deliberately cheap
(no schema engine per row) because the gate reads files with hundreds of
thousands of rows.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from math import isfinite
from typing import Any

from capeval.core.metrics import NUMERIC_METRICS
from capeval.core.outcome import outcome_problem
from capeval.results.columns import LEGACY_TWICE, TWICE_REFUSED

_NUMBER_TYPES = (int, float)
_FLOAT_LIMIT = 2**1023  # an integer past this has no float: it cannot be a median


def _is_number(value: object) -> bool:
    # Exact types, not isinstance: excludes bool, and is several times faster
    # on the hot path of 200,000-row files. JSON parsing yields only these.
    return type(value) in _NUMBER_TYPES


# -- reading JSON as every reader must: a field written twice is seen -----------------


class _Twice(dict[str, Any]):
    """A JSON object that held a key more than once (the last value is kept)."""

    keys_twice: frozenset[str] = frozenset()


class _Counter(threading.local):
    made = 0  # objects with a key twice made by this thread's parses


_TWICE = _Counter()


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    twice = _Twice(obj)
    seen: set[str] = set()
    again: set[str] = set()
    for key, _ in pairs:
        (again if key in seen else seen).add(key)
    twice.keys_twice = frozenset(again)
    _TWICE.made += 1
    return twice


def load_json(text: str | bytes) -> Any:
    """`json.loads`, keeping track of objects that hold a key twice (`twice_problem`)."""
    return json.loads(text, object_pairs_hook=_object)


def parses_made_twice() -> int:
    """A mark to compare after a parse: it moved if the parse met a key written twice."""
    return _TWICE.made


def twice_problem(row: Any, case: Any = None) -> str | None:
    """Why a parsed row holds a field a verdict reads twice, or None."""
    scopes = [TWICE_REFUSED]
    behaviors = row.get("behaviors") if isinstance(row, dict) else None
    if isinstance(behaviors, dict) and behaviors.get("taskToolCallCount") is None:
        scopes.append(LEGACY_TWICE)
    for refused in scopes:
        for scope, keys in refused.items():
            holder = row
            for part in scope:
                holder = holder.get(part) if isinstance(holder, dict) else None
            if isinstance(holder, _Twice) and holder.keys_twice & keys:
                name = ".".join((*scope, min(holder.keys_twice & keys)))
                return f"field {name!r} is written twice; keep one (case {case!r})"
    return None


def document_twice(doc: Any) -> str | None:
    """The first top-level member a document holds twice (a v3 file's `cases`), or None."""
    return min(doc.keys_twice) if isinstance(doc, _Twice) else None


def plain(value: Any) -> Any:
    """`value` with every object a plain dict again, once its repeated keys were judged."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


# -- the rules, in Python -------------------------------------------------------------


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
    problem = outcome_problem(row.get("outcome"), row["passed"])
    if problem is not None:
        # Which of the two decides whether the repeat counts is not for a reader to guess.
        return f"{problem} (case {case_id!r})"
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


# -- the rules, in SQL ----------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One rule of `row_problem` as SQL conditions over a field's JSON text and its number.

    Both take the text (`CAST(<json> AS VARCHAR)`, NULL when absent or null)
    and the text cast to DOUBLE (`TRY_CAST`: NULL for no number), so a reader
    that has computed them once can reuse them.
    """

    path: tuple[str, ...]
    right: str  # what the value must be, in `row_problem`'s words
    misfit: Callable[[str, str], str]
    # The value may be one `row_problem` takes but DuckDB reads otherwise.
    inexact: Callable[[str, str], str] = lambda text, number: "false"
    # For a number: the condition under which a present value is neither a
    # misfit nor inexact, which a reader that only asks "exact or not" can
    # test in one go.
    exact: Callable[[str], str] | None = None

    def odd(self, text: str, number: str, *, also: str = "true") -> str:
        """SQL: the value is a misfit or inexact, or fails the reader's own `also`."""
        if self.exact is None:
            return f"({self.misfit(text, number)} OR {self.inexact(text, number)} OR NOT {also})"
        return f"({text} IS NOT NULL AND NOT coalesce({self.exact(number)} AND {also}, false))"


def _not_a_case_id(text: str, number: str) -> str:
    return f"({text} IS NULL OR NOT starts_with({text}, '\"') OR {text} = '\"\"')"


def _not_a_boolean(text: str, number: str) -> str:
    return f"({text} IS NULL OR {text} NOT IN ('true', 'false'))"


def _not_an_integer(text: str, number: str) -> str:
    # A JSON integer's text is a sign and digits; 1.0, "1" and true are not one.
    return f"({text} IS NOT NULL AND ltrim({text}, '-0123456789') <> '')"


def _not_a_finite_number(text: str, number: str) -> str:
    return f"({text} IS NOT NULL AND NOT coalesce(isfinite({number}), false))"


def _past_a_float_of_an_integer(text: str, number: str) -> str:
    # Python refuses an integer past 2**1023 and takes a float that large.
    return f"coalesce(abs({number}) >= {float(_FLOAT_LIMIT)!r}, false)"


def _a_number_of_either(number: str) -> str:
    # Finite, and below the integer limit (NaN and infinity compare false).
    return f"abs({number}) < {float(_FLOAT_LIMIT)!r}"


CONTRACT: dict[tuple[str, ...], Check] = {
    check.path: check
    for check in (
        Check(("id",), "the case id (a non-empty string)", _not_a_case_id),
        Check(("passed",), "true or false", _not_a_boolean),
        Check(("repeat",), "a 0-based integer", _not_an_integer),
        *(
            Check(
                ("behaviors", m),
                "a finite number or null",
                _not_a_finite_number,
                _past_a_float_of_an_integer,
                _a_number_of_either,
            )
            for m in NUMERIC_METRICS
        ),
    )
}


def no_cell_sql(result_key: str, variant: str) -> str:
    """SQL: a row with neither a string `resultKey` nor a string `variantId` (JSON texts)."""
    return (
        f"(coalesce(NOT starts_with({result_key}, '\"'), true) "
        f"AND coalesce(NOT starts_with({variant}, '\"'), true))"
    )
