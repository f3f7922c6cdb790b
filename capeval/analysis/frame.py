"""Result rows as a polars DataFrame: one row per repeat, ready for a notebook.

The schema is fixed (every known field, every behavior metric, flattened
token usage, `source`), so frames built from files written by different tool
versions concatenate and query alike: a field a file lacks is null, never a
missing column. Unknown extra fields are kept as extra columns.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import itertools
import json
import mmap
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capeval.analysis.history import run_identity_exprs
from capeval.core.behaviors import backfill_legacy
from capeval.core.metrics import METRIC_NAMES, TOOL_CALLS_BY_NAME
from capeval.results.columns import (  # noqa: F401 (re-exported: the frame's schema)
    BAIT_COLUMNS,
    BOOL,
    FIXED_COLUMNS,
    FLATTENED,
    FLOAT,
    INT,
    METRIC_COLUMNS,
    ROW_COLUMNS,
    STR,
    TOKEN_COLUMNS,
    TOKEN_KEYS,
    ColumnTypeError,
    convert,
    fits_int64,
)
from capeval.results.discovery import expand_paths
from capeval.results.duckdb_paths import reads_as_pattern
from capeval.results.identity import header_started, run_stem
from capeval.results.load import read_rows
from capeval.results.overlap import distinct_files, shared_repeats_warning

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


def rows_to_frame(rows: Iterable[Mapping[str, Any]], *, source: str | None = None) -> pl.DataFrame:
    """One frame row per result row; `source` fills the column of that name."""
    return _build([_flatten(r, source) for r in rows])


def load_frame(
    paths: str | Path | Iterable[str | Path],
    *,
    on_warning: Callable[[str], None] | None = None,
    fast: bool = True,
) -> pl.DataFrame:
    """Load result files (JSON Lines and v3 alike) into one frame, `source` = file path.

    Files DuckDB can read exactly take the fast path; any other file (a torn
    last line, a malformed or duplicated row, a value of an odd type) is read
    by the reference reader, so its errors and warnings name file and line as
    always. Both paths give the same frame; `fast=False` forces the reference.

    Every row gets the run identity the history views give it
    (`capeval.results.identity.run_identity`): a row without `runStartedAt`
    takes its v3 file's header `startedAt`, and a row without `runId` belongs
    to the run `<file stem>@<start>` (files of the TypeScript harness carry
    neither in their rows).

    Repeats that two files both hold (a run's stream and its v3 export, or a
    copy of a v3 file: the same run start, cell and repeat) are kept twice,
    as `read_many` keeps them, with its warning.
    """
    paths = distinct_files(expand_paths(paths, on_warning=on_warning), on_warning=on_warning)
    fast_parts: dict[int, _Part] = {}
    if fast:
        # Below a few MiB the reference reader is faster than DuckDB, whose
        # start-up and per-file cost made 1,500 small runs load 4x slower.
        big = [i for i, path in enumerate(paths) if _worth_fast(path)]
        found = _read_fast([paths[i] for i in big]) if big else {}
        fast_parts = {big[j]: part for j, part in found.items()}
    parts: list[_Part] = []
    pending: list[tuple[str | Path, list[dict[str, Any]]]] = []
    for index, path in enumerate(paths):
        part = fast_parts.get(index)
        if part is None:
            flat = [_flatten(row, str(path)) for row in read_rows(path, on_warning=on_warning)]
            pending.append((path, flat))
            continue
        if pending:
            parts.append(_Part.from_files(pending))
            pending = []
        parts.append(part)
    if pending:
        # Files read by the reference become one part: building polars
        # columns per file cost more than reading a small file.
        parts.append(_Part.from_files(pending))
    started = {str(path): header_started(path) for path in paths}
    try:
        frame = _assemble(parts)
    except ColumnTypeError:
        # The message must name the row's position among all rows, as the
        # reference does; errors are rare, so build that way only now.
        frame = _build(
            [_flatten(r, str(p)) for p in paths for r in read_rows(p, on_warning=_ignore)]
        )
    for message in _shared_repeats(paths, frame, started):
        (on_warning or _default_warn)(message)
    return _with_run_identity(frame, {str(p): run_stem(p) for p in paths}, started)


# Files smaller than this are read by the reference reader (see `load_frame`).
FAST_MIN_BYTES = 4 << 20


def _worth_fast(path: str | Path) -> bool:
    try:
        return os.stat(path).st_size >= FAST_MIN_BYTES
    except (OSError, ValueError):
        return False  # the reference reader names the problem


def _run_start(header: pl.Expr) -> pl.Expr:
    """A row's run start (`runStartedAt`) as `run_identity` gives it: unlike the run id, it
    names no file, so it tells a copy of a v3 file for the same run."""
    import polars as pl

    return run_identity_exprs(pl.lit("", dtype=pl.String), header)[1]


def _with_run_identity(
    frame: pl.DataFrame,
    stem: str | Mapping[str, str],
    header_started: str | Mapping[str, str | None] | None,
) -> pl.DataFrame:
    """`runId` and `runStartedAt` as the views derive them (per file, or per `source`)."""
    import polars as pl

    def per_file(value: str | Mapping[str, Any] | None) -> pl.Expr:
        if isinstance(value, Mapping):
            return pl.col("source").replace_strict(
                dict(value), default=None, return_dtype=pl.String
            )
        return pl.lit(value, dtype=pl.String)

    return frame.with_columns(*run_identity_exprs(per_file(stem), per_file(header_started)))


def _ignore(message: str) -> None:
    """Warnings were already delivered on the first read."""


def _default_warn(message: str) -> None:
    from capeval.results.errors import warn_passed_over

    warn_passed_over(message, stacklevel=3)


def _repeat_key() -> pl.Expr:
    """A row's cell as `capeval.core.aggregate.row_result_key` names it."""
    import polars as pl

    return (
        pl.when(pl.col("resultKey").is_not_null() & (pl.col("resultKey") != ""))
        .then(pl.col("resultKey"))
        .otherwise(pl.concat_str(pl.col("variantId").fill_null("None"), pl.lit("::"), pl.col("id")))
    )


def _shared_repeats(
    paths: Sequence[str | Path], frame: pl.DataFrame, header_started: Mapping[str, str | None]
) -> list[str]:
    """Repeats that two files both hold (a run's v3 export beside its stream), worded
    as `capeval.results.load.read_many` words them.

    Both copies stay in the frame, as `read_many` keeps them for the gate, but
    a frame that silently counts a run twice gives wrong pass rates; so say so.
    A repeat is (run id, cell, repeat); rows without a run id of their own (a
    v3 file of the TypeScript harness, and so its copy under another name)
    are told by their run's start instead, which names no file.
    """
    import polars as pl

    # A file passed twice holds nothing "too" of itself: rows are its first mention's.
    first_index: dict[str, int] = {}
    for index, path in enumerate(paths):
        first_index.setdefault(str(path), index)
    if len(first_index) < 2:
        return []
    header = pl.col("source").replace_strict(
        dict(header_started), default=None, return_dtype=pl.String
    )
    keys = (
        frame.lazy()
        .select(
            pl.col("source")
            .replace_strict(first_index, default=None, return_dtype=pl.Int64)
            .alias("file"),
            pl.col("runId"),
            pl.when(pl.col("runId").is_null()).then(_run_start(header)).alias("started"),
            _repeat_key().alias("key"),
            pl.col("repeat"),
        )
        .filter(
            (pl.col("runId").is_not_null() | pl.col("started").is_not_null())
            & pl.col("repeat").is_not_null()
        )
        .unique()
        .with_columns(pl.col("file").min().over("runId", "started", "key", "repeat").alias("first"))
        .filter(pl.col("file") != pl.col("first"))
        .group_by("file", "first")
        .len()
        .sort("file", "first")
        .collect()
    )
    return [
        shared_repeats_warning(paths[file], count, paths[first])
        for file, first, count in keys.iter_rows()
    ]


# -- parts: one file's rows, fixed columns final, extras kept lossless ----------------

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
    legacy: bool = False  # has rows whose taskToolCallCount was backfilled

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


# -- the fast path: DuckDB reads, polars assembles ----------------------------------

# Top-level fields the fast path reads by name; any other field is an extra.
_READ_FIELDS = frozenset(ROW_COLUMNS) | FLATTENED
# A trailing comma is valid to DuckDB but not to `json.loads`; so are bare
# inf/nan, which the typed checks below reject.
_TRAILING_COMMA = re.compile(rb",[ \t\r\n]*[\]}]")
_MAX_INT_DIGITS = 18  # below 2**63: fits Int64 exactly


class _NotExact(Exception):
    """This file needs the reference reader."""


@dataclass(frozen=True, slots=True)
class _Scan:
    index: int  # position in the caller's list of paths
    source: str  # the `source` column: the path as the caller gave it
    read: str  # what DuckDB reads: the file, or a v3 file's `cases` slice
    fmt: str  # "newline_delimited" | "array"


def _read_fast(paths: Sequence[str | Path]) -> dict[int, _Part]:
    """Parts for every file the fast path reads exactly; the others are left out."""
    from concurrent.futures import ThreadPoolExecutor

    from capeval.analysis.fastload import FastPathUnavailable, _probe, _slice_cases

    scans: list[_Scan] = []
    temps: list[str] = []
    try:
        for index, path in enumerate(paths):
            try:
                scans.append(_scan(index, path, temps, _probe, _slice_cases))
            except (FastPathUnavailable, _NotExact, OSError, ValueError):
                continue
        if not scans:
            return {}
        # DuckDB releases the GIL: scan the raw bytes meanwhile.
        with ThreadPoolExecutor(max_workers=1) as pool:
            reading = pool.submit(_read_scans, scans)
            checks = {s.index: _text_checks(paths[s.index]) for s in scans}
            parts = reading.result()
    finally:
        for temp in temps:
            os.unlink(temp)
    exact: dict[int, _Part] = {}
    for index, part in parts.items():
        clean, task_key = checks[index]
        # A legacy row has no `taskToolCallCount`, or has it as null: if the
        # key occurs in the file at all, only a parser can tell which.
        if clean and not (part.legacy and task_key):
            exact[index] = part
    return exact


def _text_checks(path: str | Path) -> tuple[bool, bool]:
    """(no trailing comma, the text `"taskToolCallCount"` occurs), from the raw bytes."""
    try:
        with (
            open(path, "rb") as handle,
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data,
        ):
            return not _TRAILING_COMMA.search(data), data.find(b'"taskToolCallCount"') >= 0
    except (OSError, ValueError):
        return False, True


def _scan(
    index: int,
    path: str | Path,
    temps: list[str],
    probe: Callable[[Path], Any],
    slice_cases: Callable[[Any, list[str]], str],
) -> _Scan:
    if reads_as_pattern(path):
        raise _NotExact  # DuckDB would expand it as a pattern
    source = probe(Path(path))
    if source.fmt == "jsonl":
        return _Scan(index, str(path), str(path), "newline_delimited")
    # v3: the reference parses the whole document, the fast path only its
    # `cases`; so check the rest here: a version 3 header, nothing after.
    with open(path, "rb") as handle:
        header = json.loads(handle.read(source.cases_offset) + b"null}")
        handle.seek(source.cases_end + 1)
        if handle.read().strip(b" \t\r\n"):
            raise _NotExact
    version = header.get("version") if isinstance(header, dict) else None
    if version != 3 or isinstance(version, bool):
        raise _NotExact
    return _Scan(index, str(path), slice_cases(source, temps), "array")


def _read_scans(scans: Sequence[_Scan]) -> dict[int, _Part]:
    import duckdb

    con = duckdb.connect()
    try:
        with contextlib.suppress(duckdb.Error):  # refused inside Jupyter without ipywidgets
            con.execute("SET enable_progress_bar = false")
        con.execute("SET preserve_insertion_order = true")
        return _read_with(con, scans)
    finally:
        con.close()


def _read_with(con: Any, scans: Sequence[_Scan]) -> dict[int, _Part]:
    """Read all files in as few queries as possible; a file that fails is left out."""
    import duckdb
    import polars as pl

    keys = _keys(con, scans)
    scans = [s for s in scans if s.read in keys and not _odd_keys(keys[s.read])]
    groups = [[s for s in scans if s.fmt == fmt] for fmt in ("newline_delimited", "array")]
    parts: dict[int, _Part] = {}
    for group in groups:
        batches = [group] if group else []
        while batches:
            batch = batches.pop()
            try:
                parts.update(_read_batch(con, batch, keys))
            except (duckdb.Error, pl.exceptions.PolarsError):
                if len(batch) > 1:  # find the file DuckDB cannot read; read the rest fast
                    batches += [[s] for s in batch]
    return parts


def _keys(con: Any, scans: Sequence[_Scan]) -> dict[str, set[str]]:
    """Every top-level field name of every file (a field with only nulls counts)."""
    import duckdb

    out: dict[str, set[str]] = {s.read: set() for s in scans}
    for fmt in ("newline_delimited", "array"):
        files = [s.read for s in scans if s.fmt == fmt]
        if not files:
            continue
        try:
            found = con.execute(
                "SELECT DISTINCT filename, unnest(json_keys(json)) FROM read_json_objects("
                f"[{', '.join(_sql_str(f) for f in files)}], format='{fmt}', filename=true, "
                "maximum_object_size=16777216)"
            ).fetchall()
        except duckdb.Error:
            for f in files:
                out.pop(f, None)  # the reference reader explains
            continue
        for name, key in found:
            out[name].add(key)
    return out


def _odd_keys(keys: set[str]) -> bool:
    """Fields the reference would let collide with a frame column, or DuckDB fold together."""
    extras = keys - _READ_FIELDS
    if extras & set(FIXED_COLUMNS):
        return True  # e.g. a top-level `source` or `shellCommandCount`
    folded = {k.lower() for k in keys}
    return len(folded) != len(keys) or any(k.lower() in _LOWER_READ for k in extras)


_LOWER_READ = frozenset(k.lower() for k in _READ_FIELDS)


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _json_columns(extras: Sequence[str]) -> str:
    """read_json's `columns`: every value as JSON text, so its type can be checked."""
    behaviors = ", ".join(f"{_ident(m)} JSON" for m in (*METRIC_NAMES, TOOL_CALLS_BY_NAME))
    tokens = ", ".join(f"{_ident(k)} JSON" for k in TOKEN_KEYS.values())
    columns = {name: "JSON" for name in ROW_COLUMNS}
    columns["behaviors"] = f"STRUCT({behaviors})"
    columns["tokenUsage"] = f"STRUCT({tokens})"
    columns["bait"] = 'STRUCT("metric" JSON, "threshold" JSON)'
    columns.update({name: "JSON" for name in extras})
    return "{" + ", ".join(f"{_sql_str(k)}: {_sql_str(v)}" for k, v in columns.items()) + "}"


def _typed(source: str, kind: str) -> tuple[str, str]:
    """(the value in its column's type, whether the JSON value has another type).

    DuckDB casts leniently (the string "3" or 3.5 to an integer, 1 to true);
    the reference does not, so any value not already of the column's type
    marks its row, and the file goes to the reference reader.
    """
    text = f"(({source})::VARCHAR)"
    if kind == STR:
        value = (
            f"CASE WHEN contains({text}, '\\') THEN json_extract_string({source}, '$') "
            f"ELSE {text}[2:-2] END"
        )
        return value, f"({text} IS NOT NULL AND NOT starts_with({text}, '\"'))"
    if kind == INT:
        value = f"TRY_CAST({text} AS BIGINT)"
        return value, f"({text} IS NOT NULL AND coalesce({value}::VARCHAR <> {text}, true))"
    if kind == FLOAT:
        value = f"TRY_CAST({text} AS DOUBLE)"
        # A number past the float range is infinity to DuckDB, no number to the reference.
        bad = (
            f"({value} IS NULL OR isinf({value}) OR contains({text}, 'n') OR contains({text}, 'N'))"
        )
        return value, f"({text} IS NOT NULL AND {bad})"
    return f"({text} = 'true')", f"({text} IS NOT NULL AND {text} NOT IN ('true', 'false'))"


def _select(extras: Sequence[str]) -> tuple[str, list[str]]:
    sources: dict[str, str] = {name: _ident(name) for name in ROW_COLUMNS}
    sources["baitMetric"] = 'bait."metric"'
    sources["baitThreshold"] = 'bait."threshold"'
    sources.update({m: f"behaviors.{_ident(m)}" for m in METRIC_NAMES})
    sources.update({c: f"tokenUsage.{_ident(k)}" for c, k in TOKEN_KEYS.items()})
    selects, bads = [], []
    for i, (name, source) in enumerate(sources.items()):
        value, bad = _typed(source, FIXED_COLUMNS[name])
        selects.append(f"{value} AS c{i}")
        bads.append(bad)
    # What `row_problem` requires of every row.
    bads += [
        "id IS NULL",
        "(id::VARCHAR) = '\"\"'",
        "passed IS NULL",
        "(resultKey IS NULL AND variantId IS NULL)",
    ]
    selects += [
        "filename AS file",
        "behaviors IS NOT NULL AS captured",
        f"behaviors.{_ident(TOOL_CALLS_BY_NAME)}::VARCHAR AS calls",
        "(behaviors IS NOT NULL AND behaviors.taskToolCallCount IS NULL) AS legacy",
        f"({' OR '.join(bads)}) AS bad",
        *(f"{_ident(name)}::VARCHAR AS x{j}" for j, name in enumerate(extras)),
    ]
    return ", ".join(selects), list(sources)


def _read_batch(con: Any, batch: Sequence[_Scan], keys: Mapping[str, set[str]]) -> dict[int, _Part]:
    import polars as pl

    extras = sorted(set().union(*(keys[s.read] for s in batch)) - _READ_FIELDS)
    select, names = _select(extras)
    by_file = {s.read: s for s in batch}  # a file listed twice is read once
    files = ", ".join(_sql_str(read) for read in by_file)
    query = (
        f"SELECT {select} FROM read_json([{files}], columns={_json_columns(extras)}, "
        f"format='{batch[0].fmt}', records='true', filename=true, "
        "maximum_object_size=16777216)"
    )
    with tempfile.TemporaryDirectory(prefix="capeval-frame-") as tmp:
        out = os.path.join(tmp, "rows.parquet")
        con.execute(f"COPY ({query}) TO {_sql_str(out)} (FORMAT parquet, COMPRESSION uncompressed)")
        frame = pl.read_parquet(out)
    frame = frame.rename({f"c{i}": name for i, name in enumerate(names)})
    frame = frame.rename({f"x{j}": name for j, name in enumerate(extras)})
    found: dict[str, _Part | None] = {read: None for read in by_file}
    for read, rows in _by_file(frame):
        try:
            found[read] = _fast_part(rows, by_file[read], sorted(keys[read] & set(extras)))
        except _NotExact:
            del found[read]
    parts: dict[int, _Part] = {}
    for scan in batch:
        if scan.read in found:  # None: no rows, as a v3 file whose `cases` is empty
            parts[scan.index] = found[scan.read] or _Part.from_flat([])
    return parts


def _by_file(frame: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    """The rows of each file: DuckDB keeps file order, so each file is one run (slices copy nothing)."""
    runs = frame["file"].rle()
    if runs.struct.field("value").n_unique() != runs.len():
        return [
            (k, rows)
            for (k,), rows in frame.partition_by("file", maintain_order=True, as_dict=True).items()
        ]
    out, start = [], 0
    for length, read in runs.struct.unnest().iter_rows():
        out.append((read, frame.slice(start, length)))
        start += length
    return out


def _fast_part(rows: pl.DataFrame, scan: _Scan, extras: Sequence[str]) -> _Part:
    """One file's rows from DuckDB, or `_NotExact` when the reference must read it."""
    import polars as pl

    if rows["bad"].any():
        raise _NotExact
    legacy = rows["legacy"]
    calls_as_str: dict[str, str] = {}
    task_calls: dict[str, int] = {}
    for text in rows["calls"].drop_nulls().unique().to_list():
        value = _loads(text)
        calls_as_str[text] = _as_str(value)
        backfilled = backfill_legacy({TOOL_CALLS_BY_NAME: value})
        assert backfilled is not None  # given behaviors, it returns behaviors
        task_calls[text] = backfilled["taskToolCallCount"]
        if not fits_int64(task_calls[text]):
            raise _NotExact  # replace_strict would null it; the reference names the row
    calls = pl.col("calls")
    task = pl.col("taskToolCallCount")
    if legacy.any():
        filled = calls.replace_strict(task_calls, default=0, return_dtype=pl.Int64)
        task = pl.when(pl.col("legacy")).then(filled).otherwise(task)
    rows = rows.with_columns(
        pl.col("captured").alias("behaviorsCaptured"),
        task.alias("taskToolCallCount"),
        calls.replace_strict(calls_as_str, default=None, return_dtype=pl.String).alias(
            TOOL_CALLS_BY_NAME
        ),
        pl.lit(scan.source, dtype=pl.String).alias("source"),
    )
    if _has_duplicates(rows):
        raise _NotExact  # the reference reader warns about them
    dtypes = {STR: pl.String, INT: pl.Int64, FLOAT: pl.Float64, BOOL: pl.Boolean}
    fixed = rows.select(pl.col(n).cast(dtypes[k], strict=True) for n, k in FIXED_COLUMNS.items())
    extra = {name: _text_extra(rows[name]) for name in extras}
    return _Part(fixed, extra, legacy=bool(legacy.any()))


def _has_duplicates(rows: pl.DataFrame) -> bool:
    """Repeats recorded twice, keyed as `capeval.results.load.duplicate_repeats` keys them."""
    import polars as pl

    key = _repeat_key()
    keyed = rows.filter(pl.col("repeat").is_not_null()).select(
        pl.struct(pl.col("runId"), key.alias("key"), pl.col("repeat")).is_duplicated().any()
    )
    return bool(keyed.item()) if keyed.height else False


def _loads(text: str) -> Any:
    """A JSON text from DuckDB as `json.loads` reads it; `_NotExact` if it cannot
    (DuckDB also accepts bare inf and nan)."""
    try:
        return json.loads(text)
    except ValueError:
        raise _NotExact from None


def _as_str(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


_INT_TEXT = r"^-?[0-9]+$"


def _text_extra(texts: pl.Series) -> _Extra:
    """An extra field's JSON texts, classified as `_extra_kind` would see the values."""
    import polars as pl

    present = texts.drop_nulls()
    first = present.str.slice(0, 1)
    is_str = first == '"'
    is_bool = present.is_in(["true", "false"])
    is_nested = first.is_in(["{", "["])
    number = present.filter(~(is_str | is_bool | is_nested))
    is_int = number.str.contains(_INT_TEXT)
    classes: set[str] = set()
    if is_str.any() or is_nested.any():
        classes.add(_OTHER_VALUES)
    if is_bool.any():
        classes.add(_BOOL_VALUES)
    if is_int.any():
        classes.add(_INT_VALUES)
        if number.filter(is_int).str.len_bytes().max() > _MAX_INT_DIGITS:  # type: ignore[operator]
            raise _NotExact
    if (~is_int).any():
        classes.add(_FLOAT_VALUES)
        floats = number.filter(~is_int)
        if floats.str.contains("[nN]").any() or floats.cast(pl.Float64, strict=False).null_count():
            raise _NotExact
    plain = is_str & ~present.str.contains("\\", literal=True)
    as_str = {t: _as_str(_loads(t)) for t in present.filter(~plain).unique().to_list()}
    return _Extra(classes, texts=texts, as_str=as_str)
