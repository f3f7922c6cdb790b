"""Supersession: which rows of a stream stand, once a repeat was run again.

A row stream is append-only. `capeval run --resume PATH --retry-errors` runs
again the repeats whose last row is an `error` (the measurement did not
happen) and appends their new rows, so a stream can hold a repeat twice. The
rule every reader applies (docs/result-formats.md#supersession):

- a row whose outcome is `error` is superseded by a later row of the same
  repeat in the same file: it is left out, as if it had never been written;
- a repeat is (run, cell, repeat number): `runId`, the cell
  (`resultKey`, else `variantId::id`) and `repeat`; a row without a repeat
  number is never superseded, nor are rows of different files;
- any other pair of rows of one repeat (a passed row and a later one, two
  rows appended by hand) is a duplicate, counted twice and named in a
  warning, as before supersession existed.

So after supersession a stream holds one row per repeat, unless it holds a
duplicate. The rule has two renderings, Python (`supersede`, for the
reference reader and the runner) and SQL (`superseded_sql`, for the gate's
fast path, `load_frame` and the history views), and tests hold every reader
to the same rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from capeval.core.outcome import ERROR, row_outcome
from capeval.results.columns import STR, convert

RowT = TypeVar("RowT", bound=Mapping[str, Any])


def repeat_key(row: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """Which repeat a row is: (run, cell, repeat); None for a row without a repeat number.

    The run id is taken as its column holds it (text), so `1` and `"1"` are one
    run to every reader.
    """
    repeat = row.get("repeat")
    if repeat is None:
        return None
    from capeval.core.aggregate import row_result_key

    return (convert(row.get("runId"), STR, str), row_result_key(row), repeat)


def superseded(
    rows: Sequence[RowT], key: Callable[[RowT], tuple[Any, ...] | None] = repeat_key
) -> list[bool]:
    """For each row of one file, in file order: whether a later row supersedes it."""
    last: dict[tuple[Any, ...], int] = {}
    keys = [key(row) for row in rows]
    for index, k in enumerate(keys):
        if k is not None:
            last[k] = index
    return [
        k is not None and last[k] > index and row_outcome(row) == ERROR
        for index, (row, k) in enumerate(zip(rows, keys, strict=True))
    ]


def supersede(rows: Sequence[RowT]) -> list[RowT]:
    """The rows of one file that stand, in file order (`superseded` ones left out)."""
    gone = superseded(rows)
    if not any(gone):
        return list(rows)
    return [row for row, out in zip(rows, gone, strict=True) if not out]


def superseded_sql(*, outcome: str, order: str, file: str, run: str, cell: str, repeat: str) -> str:
    """SQL, in a query over rows: true for a row a later row of its repeat supersedes.

    Each argument is an SQL expression over one row: its outcome (text),
    its position in its file (`order`, ascending in file order: a read's
    ordinality), its file, its run id (text, as `repeat_key` takes it), its
    cell and its repeat number.
    """
    window = f"PARTITION BY {file}, {run}, {cell}, {repeat}"
    return (
        f"({outcome} = '{ERROR}' AND {repeat} IS NOT NULL "
        f"AND {order} < max({order}) OVER ({window}))"
    )
