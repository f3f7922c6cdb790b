"""Result rows as a polars DataFrame: one row per repeat, ready for a notebook.

The schema is fixed (every known field, every behavior metric, flattened
token usage, `source`), so frames built from files written by different tool
versions concatenate and query alike: a field a file lacks is null, never a
missing column. Unknown extra fields are kept as extra columns. Large files
are read by DuckDB (`capeval.analysis.framefast`), the others, and any file
DuckDB cannot read exactly, by the reference reader; both build the same
parts (`capeval.analysis.frameparts`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capeval.analysis.frameparts import (
    FAST_TYPES,
    _assemble,
    _build,
    _flatten,
    _Part,
    _repeat_key,
    row_place,
)
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
)
from capeval.results.discovery import expand_paths
from capeval.results.identity import header_started, run_identity, run_stem
from capeval.results.load import read_rows
from capeval.results.overlap import distinct_files, shared_repeats_warning

if TYPE_CHECKING:
    import polars as pl

__all__ = ["FAST_TYPES", "expand_paths", "load_frame", "row_place", "rows_to_frame"]


def rows_to_frame(rows: Iterable[Mapping[str, Any]], *, source: str | None = None) -> pl.DataFrame:
    """One frame row per result row; `source` fills the column of that name."""
    return _build([_flatten(r, source) for r in rows])


def load_frame(
    paths: str | Path | Iterable[str | Path],
    *,
    on_warning: Callable[[str], None] | None = None,
    fast: bool = True,
    counted_once: bool = False,
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
    as `read_many` keeps them, with its warning. `counted_once` words that warning for
    a caller that keeps each such repeat once (as the history views do).
    """
    from capeval.analysis.framefast import read_fast

    paths = distinct_files(expand_paths(paths, on_warning=on_warning), on_warning=on_warning)
    fast_parts: dict[int, _Part] = {}
    if fast:
        # Below a few MiB the reference reader is faster than DuckDB, whose
        # start-up and per-file cost made 1,500 small runs load 4x slower.
        big = [i for i, path in enumerate(paths) if _worth_fast(path)]
        found = read_fast([paths[i] for i in big]) if big else {}
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
    for message in _shared_repeats(paths, frame, started, counted_once=counted_once):
        (on_warning or _default_warn)(message)
    return _with_run_identity(frame, {str(p): run_stem(p) for p in paths}, started)


# Files smaller than this are read by the reference reader (see `load_frame`).
FAST_MIN_BYTES = 4 << 20


def _worth_fast(path: str | Path) -> bool:
    try:
        return os.stat(path).st_size >= FAST_MIN_BYTES
    except (OSError, ValueError):
        return False  # the reference reader names the problem


def run_identity_exprs(stem: pl.Expr, header_started: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """`run_identity` over a frame's `runId` and `runStartedAt` columns (aliased so): the
    views render the same rule in SQL (`capeval.analysis.views`)."""
    import polars as pl

    run, started = run_identity(
        pl.col("runId"),
        pl.col("runStartedAt"),
        stem,
        header_started,
        coalesce=lambda *args: pl.coalesce(*args),
        concat=lambda *args: pl.concat_str(*args),
        text=lambda value: pl.lit(value, dtype=pl.String),
    )
    return run.alias("runId"), started.alias("runStartedAt")


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


def _shared_repeats(
    paths: Sequence[str | Path],
    frame: pl.DataFrame,
    header_started: Mapping[str, str | None],
    *,
    counted_once: bool = False,
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
        shared_repeats_warning(paths[file], count, paths[first], counted_once=counted_once)
        for file, first, count in keys.iter_rows()
    ]
