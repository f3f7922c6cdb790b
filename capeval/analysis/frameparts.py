"""Frames built from rows: one part per file, fixed columns final, extras kept lossless.

The fixed columns take the registry's types (`capeval.results.columns`);
an unknown extra field takes the type all its values share, across every
file of a frame, so frames built from files of different writers
concatenate. A part read by DuckDB keeps its extras as JSON texts until
the frame's extra types are known, and gives the same column a part the
reference reader built would give.
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capeval.core.metrics import METRIC_NAMES, TOOL_CALLS_BY_NAME
from capeval.results.columns import (
    BOOL,
    FIXED_COLUMNS,
    FLATTENED,
    FLOAT,
    INT,
    STR,
    TOKEN_KEYS,
    convert,
    fits_int64,
)

if TYPE_CHECKING:
    import polars as pl


_NONE = type(None)
FAST_TYPES: dict[str, set[type]] = {
    STR: {str, _NONE},
    INT: {int, _NONE},
    FLOAT: {int, float, _NONE},
    BOOL: {bool, _NONE},
}


def _extra_kind(values: Sequence[Any]) -> str:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return BOOL
    if present and all(_value_class(v) == _INT_VALUES for v in present):
        return INT
    if present and all(_value_class(v) in (_INT_VALUES, _FLOAT_VALUES) for v in present):
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


def _column(name: str, raw: list[Any], kind: str, where: Callable[[int], str]) -> pl.Series:
    """One column of `kind` from raw row values (ColumnTypeError naming `where(i)` for a misfit)."""
    import polars as pl

    dtypes = {STR: pl.String, INT: pl.Int64, FLOAT: pl.Float64, BOOL: pl.Boolean}
    if {type(v) for v in raw} <= FAST_TYPES[kind] and _in_range(raw, kind):
        # Common case: every value already has the column's type (ints in
        # a float column are exact below 2**53), so skip per-cell checks.
        return pl.Series(name, raw, dtype=dtypes[kind], strict=False)
    values = [convert(v, kind, functools.partial(where, i)) for i, v in enumerate(raw)]
    return pl.Series(name, values, dtype=dtypes[kind])


def _in_range(raw: Sequence[Any], kind: str) -> bool:
    """Whether polars' lenient conversion keeps every int of an integer column.

    Past Int64 it gives a silent null, which would move a notebook's medians
    away from the gate's. (In a float column an int past the float range is
    null on purpose: the gate reads it as no number either.)
    """
    if kind != INT:
        return True
    ints = [v for v in raw if type(v) is int]
    return not ints or (fits_int64(min(ints)) and fits_int64(max(ints)))


def _build(flat_rows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    import polars as pl

    extras = sorted({k for r in flat_rows for k in r} - set(FIXED_COLUMNS))
    columns: dict[str, pl.Series] = {}
    for name in [*FIXED_COLUMNS, *extras]:
        raw = [r.get(name) for r in flat_rows]
        kind = FIXED_COLUMNS.get(name) or _extra_kind(raw)
        columns[name] = _column(
            name,
            raw,
            kind,
            functools.partial(_where_in_rows, flat_rows, name),
        )
    return pl.DataFrame(columns)


def _where_in_rows(flat_rows: Sequence[Mapping[str, Any]], name: str, i: int) -> str:
    return (
        f"{flat_rows[i].get('source') or 'row'} "
        f"(row {i}, case {flat_rows[i].get('id')!r}): field {name!r}"
    )


def _where_in_part(name: str, i: int) -> str:
    return f"row {i}: field {name!r}"


def _repeat_key() -> pl.Expr:
    """A row's cell as `capeval.core.aggregate.row_result_key` names it."""
    import polars as pl

    return (
        pl.when(pl.col("resultKey").is_not_null() & (pl.col("resultKey") != ""))
        .then(pl.col("resultKey"))
        .otherwise(pl.concat_str(pl.col("variantId").fill_null("None"), pl.lit("::"), pl.col("id")))
    )


# What an extra field's values are, as `_extra_kind` sees them.
_BOOL_VALUES, _INT_VALUES, _FLOAT_VALUES, _OTHER_VALUES = "bool", "int", "float", "other"


def _value_class(value: Any) -> str:
    if isinstance(value, bool):
        return _BOOL_VALUES
    if isinstance(value, int):
        # An extra field's int past Int64 is kept as its JSON text, not nulled.
        return _INT_VALUES if fits_int64(value) else _OTHER_VALUES
    if isinstance(value, float):
        return _FLOAT_VALUES
    return _OTHER_VALUES


def _kind_of(classes: set[str]) -> str:
    """The column kind `_extra_kind` would pick for values of these classes."""
    if classes == {_BOOL_VALUES}:
        return BOOL
    if classes == {_INT_VALUES}:
        return INT
    if classes and classes <= {_INT_VALUES, _FLOAT_VALUES}:
        return FLOAT
    return STR


@dataclass
class _Extra:
    """One extra field of one file: Python values, or JSON texts from DuckDB."""

    classes: set[str]
    values: list[Any] | None = None
    texts: pl.Series | None = None
    as_str: dict[str, str] | None = None  # JSON text -> the reference's string for it

    def column(self, name: str, kind: str, height: int) -> pl.Series:
        import polars as pl

        if self.values is not None:
            return _column(name, self.values, kind, lambda i: f"row {i}: field {name!r}")
        texts = (
            self.texts if self.texts is not None else pl.Series([None] * height, dtype=pl.String)
        )
        if kind == BOOL:
            return (texts == "true").alias(name)
        if kind == INT:
            return texts.cast(pl.Int64).alias(name)
        if kind == FLOAT:
            return texts.cast(pl.Float64).alias(name)
        return _texts_as_str(texts, self.as_str or {}).alias(name)


@dataclass
class _Part:
    fixed: pl.DataFrame
    extras: dict[str, _Extra] = field(default_factory=dict)

    @classmethod
    def from_flat(
        cls, flat: Sequence[Mapping[str, Any]], where: Callable[[str, int], str] = _where_in_part
    ) -> _Part:
        """A part read by the reference reader (ColumnTypeError if a fixed value does not fit)."""
        import polars as pl

        fixed = pl.DataFrame(
            [
                _column(name, [r.get(name) for r in flat], kind, functools.partial(where, name))
                for name, kind in FIXED_COLUMNS.items()
            ]
        )
        extras: dict[str, _Extra] = {}
        for name in sorted({k for r in flat for k in r} - set(FIXED_COLUMNS)):
            values = [r.get(name) for r in flat]
            classes = {_value_class(v) for v in values if v is not None}
            extras[name] = _Extra(classes, values=values)
        return cls(fixed, extras)

    @classmethod
    def from_files(cls, files: Sequence[tuple[str | Path, list[dict[str, Any]]]]) -> _Part:
        """One part of several files read by the reference reader; a misfit value is
        named by file and row, as if each file were built alone."""
        flat = [row for _, rows in files for row in rows]
        starts = list(itertools.accumulate((len(rows) for _, rows in files), initial=0))

        def where(name: str, i: int) -> str:
            file = bisect.bisect_right(starts, i) - 1
            return f"{row_place(files[file][0], i - starts[file])}: field {name!r}"

        return cls.from_flat(flat, where=where)


def row_place(path: str | Path, index: int) -> str:
    """Where the reference reader names row `index` (0-based) of a result file:
    `path:line` in a stream (counted from 1, blank lines counted), `path: cases[i]`
    in a v3 file. Only an error message needs it, so the file is read again."""
    from capeval.results.formats import format_of

    try:
        if format_of(path) == "v3":
            return f"{path}: cases[{index}]"
        with open(path, "rb") as handle:
            rows = (n for n, line in enumerate(handle, 1) if line.strip())
            line = next(itertools.islice(rows, index, None), None)
    except (OSError, ValueError):
        line = None
    return f"{path}:{line}" if line is not None else f"{path}: row {index + 1}"


def _assemble(parts: Sequence[_Part]) -> pl.DataFrame:
    import polars as pl

    names = sorted({name for part in parts for name in part.extras})
    frames = []
    for part in parts:
        height = part.fixed.height
        columns = []
        for name in names:
            classes = set().union(*(p.extras[name].classes for p in parts if name in p.extras))
            extra = part.extras.get(name) or _Extra(set(), values=[None] * height)
            columns.append(extra.column(name, _kind_of(classes), height))
        frames.append(part.fixed.with_columns(columns) if columns else part.fixed)
    if not frames:
        return _build([])
    return pl.concat(frames, how="vertical")


def _texts_as_str(texts: pl.Series, as_str: Mapping[str, str]) -> pl.Series:
    """JSON texts as the reference's strings: strings unquoted, other values dumped."""
    import polars as pl

    plain = texts.str.starts_with('"') & ~texts.str.contains("\\", literal=True)
    unquoted = texts.str.slice(1, texts.str.len_chars() - 2)
    if not as_str:
        return pl.select(pl.when(plain).then(unquoted)).to_series()
    mapped = texts.replace_strict(dict(as_str), default=None, return_dtype=pl.String)
    return pl.select(pl.when(plain).then(unquoted).otherwise(mapped)).to_series()
