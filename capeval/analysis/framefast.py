"""Frames of large files: DuckDB reads, polars assembles.

Every field is read as JSON text and typed by the registry's rule
(`capeval.results.columns.typed_sql`) and the row contract
(`capeval.results.rowcheck`), so a value the reference reader would refuse
or read otherwise marks its row, and the whole file is left to the reference
reader (`capeval.analysis.frame.load_frame` reads it so), whose errors name
file, line and field. DuckDB's parser takes a trailing comma inside a row
with no option to refuse it; the bytes are searched for one while DuckDB
reads.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capeval.analysis.frameparts import (
    _BOOL_VALUES,
    _FLOAT_VALUES,
    _INT_VALUES,
    _OTHER_VALUES,
    _Extra,
    _Part,
    _repeat_key,
)
from capeval.core.metrics import TOOL_CALLS_BY_NAME
from capeval.core.outcome import ERROR
from capeval.results import columns
from capeval.results.columns import (
    BOOL,
    COLUMNS,
    FIXED_COLUMNS,
    FLATTENED,
    FLOAT,
    INT,
    ROW_COLUMNS,
    STR,
)
from capeval.results.duckdb_paths import reads_as_pattern
from capeval.results.rowcheck import CONTRACT, no_cell_sql
from capeval.results.supersede import superseded_sql

if TYPE_CHECKING:
    import polars as pl

# Top-level fields the fast path reads by name; any other field is an extra.
_READ_FIELDS = frozenset(ROW_COLUMNS) | FLATTENED
_LOWER_READ = frozenset(k.lower() for k in _READ_FIELDS)
_PATHS = [c.path for c in COLUMNS if c.path is not None]
# A trailing comma is valid to DuckDB but not to `json.loads`.
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


def read_fast(paths: Sequence[str | Path]) -> dict[int, _Part]:
    """Parts for every file the fast path reads exactly; the others are left out."""
    from concurrent.futures import ThreadPoolExecutor

    from capeval.analysis.duckfiles import FastPathUnavailable, probe, slice_cases

    scans: list[_Scan] = []
    temps: list[str] = []
    try:
        for index, path in enumerate(paths):
            if reads_as_pattern(path):
                continue  # DuckDB would expand it as a pattern
            try:
                source = probe(Path(path))
            except (FastPathUnavailable, OSError, ValueError):
                continue
            if source.fmt == "jsonl":
                scans.append(_Scan(index, str(path), str(path), "newline_delimited"))
            else:
                scans.append(_Scan(index, str(path), slice_cases(source, temps), "array"))
        if not scans:
            return {}
        # DuckDB releases the GIL: scan the raw bytes meanwhile.
        with ThreadPoolExecutor(max_workers=1) as pool:
            reading = pool.submit(_read_scans, scans)
            clean = {s.index: _no_trailing_comma(paths[s.index]) for s in scans}
            parts = reading.result()
    finally:
        for temp in temps:
            os.unlink(temp)
    return {index: part for index, part in parts.items() if clean[index]}


def _no_trailing_comma(path: str | Path) -> bool:
    try:
        with (
            open(path, "rb") as handle,
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data,
        ):
            return not _TRAILING_COMMA.search(data)
    except (OSError, ValueError):
        return False


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
                f"[{', '.join(columns.sql_str(f) for f in files)}], format='{fmt}', filename=true, "
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


def _json_columns(extras: Sequence[str]) -> str:
    """read_json's `columns`: every field as JSON text, so its type can be checked."""
    types = {**columns.json_column_types(_PATHS), **dict.fromkeys(extras, "JSON")}
    return (
        "{"
        + ", ".join(f"{columns.sql_str(k)}: {columns.sql_str(v)}" for k, v in types.items())
        + "}"
    )


def _select(extras: Sequence[str]) -> tuple[str, list[str]]:
    """The typed fixed columns, `bad` (a row the reference reader must read) and the extras."""
    names: list[str] = []
    selects: list[str] = []
    bads: list[str] = []
    for column in COLUMNS:
        if column.path is None or column.name == TOOL_CALLS_BY_NAME:
            continue
        typed = columns.typed_sql(column.kind, columns.path_sql(column.path))
        if column.name == "taskToolCallCount":
            typed = columns.task_calls_of_row_sql(typed)
        elif column.name == "outcome":
            typed = columns.outcome_of_row_sql()
        check = CONTRACT.get(column.path)
        if check is not None:
            text = columns.json_text(columns.path_sql(column.path))
            bads.append(check.odd(text, f"TRY_CAST({text} AS DOUBLE)"))
        selects.append(f"{typed.value} AS c{len(names)}")
        bads += [typed.misfit, typed.inexact]
        names.append(column.name)
    # The row contract's cross-field rule: a row must name its cell.
    bads.append(
        no_cell_sql(
            columns.json_text(columns.ident("resultKey")),
            columns.json_text(columns.ident("variantId")),
        )
    )
    selects += [
        "filename AS file",
        "behaviors IS NOT NULL AS captured",
        f"{columns.json_text(columns.path_sql(('behaviors', TOOL_CALLS_BY_NAME)))} AS calls",
        f"({' OR '.join(bads)}) AS bad",
        *(f"{columns.ident(name)}::VARCHAR AS x{j}" for j, name in enumerate(extras)),
    ]
    return ", ".join(selects), names


def _read_batch(
    con: Any, batch: Sequence[_Scan], keys: Mapping[str, set[str]], *, supersede: bool = False
) -> dict[int, _Part]:
    """The parts of a batch of files. `supersede`: mark the rows a later row of their repeat
    supersedes (a window, and a sort back into file order: only when some row is an error)."""
    import polars as pl

    extras = sorted(set().union(*(keys[s.read] for s in batch)) - _READ_FIELDS)
    select, names = _select(extras)
    by_file = {s.read: s for s in batch}  # a file listed twice is read once
    files = ", ".join(columns.sql_str(read) for read in by_file)
    flag, order = "false", ""
    if supersede:
        flag = superseded_sql(
            outcome=columns.outcome_of_row_sql().value,
            order="ordinality",
            file="filename",
            run=columns.typed_sql(STR, columns.path_sql(("runId",))).value,
            cell=columns.json_text(columns.ident("resultKey")),
            repeat=columns.json_text(columns.ident("repeat")),
        )
        order = " ORDER BY ordinality"
    query = (
        f"SELECT {select}, {flag} AS superseded FROM read_json([{files}], "
        f"columns={_json_columns(extras)}, format='{batch[0].fmt}', records='true', "
        f"filename=true, maximum_object_size=16777216) WITH ORDINALITY{order}"
    )
    with tempfile.TemporaryDirectory(prefix="capeval-frame-") as tmp:
        out = os.path.join(tmp, "rows.parquet")
        con.execute(
            f"COPY ({query}) TO {columns.sql_str(out)} (FORMAT parquet, COMPRESSION uncompressed)"
        )
        frame = pl.read_parquet(out)
    frame = frame.rename({f"c{i}": name for i, name in enumerate(names)})
    frame = frame.rename({f"x{j}": name for j, name in enumerate(extras)})
    if not supersede and (frame["outcome"] == ERROR).any():
        return _read_batch(con, batch, keys, supersede=True)
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
        raise _NotExact  # a superseded row too: the reference reader judges every line
    rows = rows.filter(~pl.col("superseded"))
    # `toolCallsByName` as the reference's text column holds it: Python's JSON.
    calls_as_str = {t: _as_str(_loads(t)) for t in rows["calls"].drop_nulls().unique().to_list()}
    rows = rows.with_columns(
        pl.col("captured").alias("behaviorsCaptured"),
        pl.col("calls")
        .replace_strict(calls_as_str, default=None, return_dtype=pl.String)
        .alias(TOOL_CALLS_BY_NAME),
        pl.lit(scan.source, dtype=pl.String).alias("source"),
    )
    if _has_duplicates(rows):
        raise _NotExact  # the reference reader warns about them
    dtypes = {STR: pl.String, INT: pl.Int64, FLOAT: pl.Float64, BOOL: pl.Boolean}
    fixed = rows.select(pl.col(n).cast(dtypes[k], strict=True) for n, k in FIXED_COLUMNS.items())
    extra = {name: _text_extra(rows[name]) for name in extras}
    return _Part(fixed, extra)


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
    """An extra field's JSON texts, classified as the reference classifies the values."""
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
