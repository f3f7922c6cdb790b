"""Reading result files into a history database: incremental, idempotent, exact.

With a database file the ingest is incremental and idempotent: every file's
size, mtime, ingested byte offset and row count are recorded in
`result_files`, so an unchanged file is skipped (unless rows recorded for it
are missing from the table: then it is read again), a grown JSON Lines
stream contributes only the rows after its recorded offset (after checking
the bytes before it are unchanged, by a hash of them all) and a rewritten or
edited file replaces its rows. A torn last line (a run still writing, or one
that crashed) is left for the next ingest, never half-read.

JSON Lines files are read by DuckDB itself (a million rows in a couple of
seconds). A file DuckDB refuses, or holds a value it would read otherwise
than Python, is read by the reference reader (`capeval.results.load`): it
names the file, line and field of what it refuses, and the rows it takes
are the ones ingested. v3 files are read by the reference reader (they are
one JSON object, usually small).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capeval.analysis.staging import Input, insert, stage, table_select, temp_jsonl, temp_slice
from capeval.analysis.views import (
    REPEATS_VIEW_SQL,
    cells_sql,
    ensure_schema,
    refresh_cells,
    table_sql,
    type_problem,
    views_sql,
)
from capeval.results.discovery import discover
from capeval.results.duckdb_paths import reads_as_pattern
from capeval.results.errors import ResultFileError
from capeval.results.formats import result_format, rows_end
from capeval.results.identity import run_stem, run_times

if TYPE_CHECKING:
    import duckdb

_HASH_CHUNK = 1 << 20


@dataclass
class IngestReport:
    """What one ingest did; `capeval history` prints the warnings."""

    files_seen: int = 0
    files_unchanged: int = 0
    files_new: int = 0
    files_grown: int = 0
    files_replaced: int = 0
    rows_added: int = 0
    # Files ingested before, under the paths scanned now, that are gone from
    # disk: their rows stay (the database is the history), and this says so.
    files_gone: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "filesSeen": self.files_seen,
            "filesUnchanged": self.files_unchanged,
            "filesNew": self.files_new,
            "filesGrown": self.files_grown,
            "filesReplaced": self.files_replaced,
            "rowsAdded": self.rows_added,
            "filesGone": list(self.files_gone),
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class _Known:
    format: str
    size: int
    mtime_ns: int
    offset: int
    tail_hash: str | None
    row_count: int | None = None  # rows recorded at the last ingest
    rows: int | None = None  # rows the table holds now

    @property
    def intact(self) -> bool:
        """Whether the table still holds every row recorded for the file."""
        return self.row_count is None or self.row_count == self.rows


def _prefix_hashes(handle: Any, *offsets: int) -> list[str]:
    """SHA-1 of the file's first `offset` bytes, for each offset (ascending), in one pass.

    The whole ingested prefix, not just its tail: an edit in place keeps the
    size and may keep the last bytes, and its rows must not stay stale.
    Only files whose size or mtime changed are hashed.
    """
    hasher = hashlib.sha1()
    handle.seek(0)
    done, out = 0, []
    for offset in offsets:
        while done < offset:
            chunk = handle.read(min(_HASH_CHUNK, offset - done))
            if not chunk:
                break
            hasher.update(chunk)
            done += len(chunk)
        out.append(hasher.copy().hexdigest())
    return out


# -- ingest -----------------------------------------------------------------------


def _gone(
    known: Mapping[str, _Known], files: Sequence[Path], paths: Sequence[str | Path]
) -> list[str]:
    """Known result files under the scanned folders that no longer exist."""
    roots = [Path(p).resolve() for p in paths]
    present = {str(f) for f in files}
    return sorted(
        path
        for path, fact in known.items()
        if fact.format != "other"
        and path not in present
        and any(Path(path).is_relative_to(root) for root in roots)
        and not Path(path).exists()
    )


def _runs_of(con: duckdb.DuckDBPyConnection, sources: Sequence[str]) -> set[str]:
    if not sources:
        return set()
    rows = con.execute(
        "SELECT DISTINCT runId FROM result_rows WHERE source IN (SELECT unnest(?))",
        [list(sources)],
    ).fetchall()
    return {r[0] for r in rows}


# Each recorded file with the rows it was recorded with and the rows it has:
# rows deleted behind the ingest's back (a notebook's DELETE on a writable
# connection) must not leave an unchanged file skipped, and its run gone, forever.
_KNOWN_SQL = """
SELECT f.path, f.format, f.size, f.mtimeNs, f.ingestedOffset, f.tailHash,
  f.rowCount, coalesce(n.rows, 0)
FROM result_files f
LEFT JOIN (SELECT source, count(*) AS rows FROM result_rows GROUP BY source) n
  ON n.source = f.path
"""


def ingest(
    con: duckdb.DuckDBPyConnection, paths: str | Path | Iterable[str | Path]
) -> IngestReport:
    """Bring the database up to date with the result files under `paths`.

    Idempotent: running it twice adds nothing the second time. All changes
    land in one transaction, so an interrupted ingest leaves the database as
    it was. A file named in `paths` that cannot be read is an error; one
    found inside a folder is skipped, with the reader's reason in
    `report.skipped`, so one bad file does not hide every other run (it is
    read again by the next ingest).
    """
    ensure_schema(con)
    report = IngestReport()
    known = {
        row[0]: _Known(row[1], row[2], row[3], row[4], row[5], row[6], row[7])
        for row in con.execute(_KNOWN_SQL).fetchall()
    }
    paths = [paths] if isinstance(paths, str | Path) else list(paths)
    files = discover(paths)
    report.files_seen = len(files)
    report.files_gone = _gone(known, files, paths)
    inputs: list[Input] = []
    replaced: list[str] = []
    file_rows: list[tuple[str, str, int, int, int, str | None]] = []
    temps: list[str] = []
    named = {Path(p).resolve() for p in paths}

    def skipped(source: str, exc: ResultFileError) -> bool:
        """Whether a file the reader refused is passed over (found in a folder) rather than fatal."""
        if Path(source) in named:
            return False
        report.skipped.append((source, f"unreadable: {exc}"))
        file_rows[:] = [r for r in file_rows if r[0] != source]
        return True

    try:
        for path in files:
            try:
                _plan_file(path, known.get(str(path)), inputs, replaced, file_rows, temps, report)
            except ResultFileError as exc:
                if not skipped(str(path), exc):
                    raise

        repeated: list[str] = []

        def write(inputs: list[Input]) -> None:
            touched = _runs_of(con, replaced)
            if replaced:
                con.execute("DELETE FROM result_rows WHERE source IN ?", [replaced])
            report.rows_added = insert(con, inputs)
            jsonl = [i.source for i in inputs if i.format == "jsonl"]
            repeated[:] = _repeated_in_stream(con, jsonl)
            touched |= _runs_of(con, [i.source for i in inputs])
            refresh_cells(con, sorted(touched))
            _record_files(con, file_rows)

        _in_one_transaction(con, inputs, temps, write, skipped)
        report.warnings += repeated
    finally:
        for name in temps:
            Path(name).unlink(missing_ok=True)
    return report


def _repeated_in_stream(con: duckdb.DuckDBPyConnection, sources: Sequence[str]) -> list[str]:
    """The reference reader's warnings about repeats recorded twice in one stream.

    The views count both copies, as the reader does, so they warn as it does,
    in its words. A cheap query finds the streams that may hold one (none,
    usually); only those are read again, by the reader, for its exact rows.
    """
    if not sources:
        return []
    from capeval.results.jsonl import read_jsonl
    from capeval.results.load import duplicate_repeats
    from capeval.results.supersede import supersede

    flagged = con.execute(
        """
        SELECT DISTINCT source FROM (
          SELECT source FROM result_rows
          WHERE source IN (SELECT unnest(?)) AND "repeat" IS NOT NULL
          GROUP BY source, resultKey, "repeat" HAVING count(*) > 1
        ) ORDER BY source
        """,
        [list(dict.fromkeys(sources))],
    ).fetchall()
    found: list[str] = []
    for (source,) in flagged:
        found += duplicate_repeats(supersede(read_jsonl(source)[0]), Path(source))
    return found


def _record_files(
    con: duckdb.DuckDBPyConnection, file_rows: Sequence[tuple[str, str, int, int, int, str | None]]
) -> None:
    """Record what was ingested of each file, in one statement.

    One INSERT per file, each counting its rows over the whole table, made an
    ingest of a folder of a thousand small runs quadratic: 30 s of its 42 s.
    """
    if not file_rows:
        return
    columns = list(zip(*file_rows, strict=True))
    con.execute(
        """
        INSERT OR REPLACE INTO result_files
        WITH f AS (
          SELECT unnest(?) AS path, unnest(?) AS format, unnest(?) AS size,
            unnest(?) AS mtimeNs, unnest(?) AS ingestedOffset, CAST(unnest(?) AS VARCHAR) AS tailHash
        ),
        n AS (
          SELECT source, count(*) AS rowCount FROM result_rows
          WHERE source IN (SELECT path FROM f) GROUP BY source
        )
        SELECT f.path, f.format, f.size, f.mtimeNs, f.ingestedOffset, f.tailHash,
          coalesce(n.rowCount, 0), now()::TIMESTAMP
        FROM f LEFT JOIN n ON n.source = f.path
        """,
        [list(c) for c in columns],
    )


def scan(con: duckdb.DuckDBPyConnection, paths: str | Path | Iterable[str | Path]) -> IngestReport:
    """Put the views straight over the files, without copying their rows: the cold path.

    Complete JSON Lines streams are read by DuckDB at query time, only the
    columns a query needs; v3 files and streams with a torn last line are
    read now (they need the reference reader or a slice) into a small table.
    A malformed stream therefore fails when queried, with DuckDB's message
    naming the file and line; `ingest` checks everything up front instead.
    """
    report = IngestReport()
    files = discover(paths)
    report.files_seen = report.files_new = len(files)
    inputs: list[Input] = []
    temps: list[str] = []
    con.execute(table_sql("result_rows_static"))
    try:
        for path in files:
            _plan_file(path, None, inputs, [], [], temps, report)
        copied = [i for i in inputs if i.read_path != i.source]

        def write(copied: list[Input]) -> None:
            report.rows_added = insert(con, copied, table="result_rows_static")

        _in_one_transaction(con, copied, temps, write)
    finally:
        for name in temps:
            Path(name).unlink(missing_ok=True)
    direct = [i for i in inputs if i.read_path == i.source]
    view = "SELECT * FROM result_rows_static"
    if direct:
        listed = "[" + ", ".join("'" + i.source.replace("'", "''") + "'" for i in direct) + "]"
        view += " UNION ALL BY NAME " + table_select(listed, in_place=True)
    con.execute(f"CREATE OR REPLACE VIEW result_rows AS {view}")
    con.execute(REPEATS_VIEW_SQL)
    con.execute(views_sql(cells_sql()))
    return report


def _plan_file(
    path: Path,
    known: _Known | None,
    inputs: list[Input],
    replaced: list[str],
    file_rows: list[tuple[str, str, int, int, int, str | None]],
    temps: list[str],
    report: IngestReport,
) -> None:
    stat = path.stat()
    key = str(path)
    if known is not None and not known.intact:
        report.warnings.append(
            f"{key}: the database held {known.rows} of the {known.row_count} rows recorded "
            "for it (rows deleted by hand?); its rows are read again"
        )
    elif known is not None and known.size == stat.st_size and known.mtime_ns == stat.st_mtime_ns:
        report.files_unchanged += 1
        if known.format == "other":
            report.skipped.append((key, "not a result file"))
        return
    fmt = result_format(path)
    if fmt is None:
        report.skipped.append((key, "not a result file (no v3 header, no result rows)"))
        if known is not None and known.format != "other":
            replaced.append(key)
        file_rows.append((key, "other", stat.st_size, stat.st_mtime_ns, 0, None))
        return
    if fmt == "v3":
        rows, (started, finished) = _read_v3(path, report.warnings.append)
        for index, row in enumerate(rows):
            problem = type_problem(row)
            if problem is not None:
                raise ResultFileError(key, f"cases[{index}]: {problem}")
        if known is not None:
            replaced.append(key)
            report.files_replaced += 1
        else:
            report.files_new += 1
        inputs.append(
            Input(
                source=key,
                format="v3",
                read_path=temp_jsonl(rows, temps),
                stem=run_stem(path),
                header_started=started,
                header_finished=finished,
            )
        )
        file_rows.append((key, "v3", stat.st_size, stat.st_mtime_ns, stat.st_size, None))
        return
    with open(path, "rb") as handle:
        end, torn = rows_end(handle, stat.st_size)
        start = 0
        grown = False
        if known is not None and known.format == "jsonl" and known.intact and end > known.offset:
            before, tail = _prefix_hashes(handle, known.offset, end)
            grown = before == known.tail_hash
        else:
            (tail,) = _prefix_hashes(handle, end)
        row_start = 0
        if known is not None and grown:
            start = known.offset
            row_start = known.rows or 0
            report.files_grown += 1
        elif known is not None:
            replaced.append(key)
            report.files_replaced += 1
        else:
            report.files_new += 1
        if torn:
            report.warnings.append(
                f"{key}: the last line is incomplete (a run still writing, or one that "
                "crashed); it is left for the next ingest"
            )
        if end > start:
            if start == 0 and end == stat.st_size and not reads_as_pattern(key):
                read_path = key
            else:
                read_path = temp_slice(handle, start, end, temps)
            inputs.append(
                Input(
                    source=key,
                    format="jsonl",
                    read_path=read_path,
                    stem=run_stem(path),
                    start=start,
                    row_start=row_start,
                )
            )
    file_rows.append((key, "jsonl", stat.st_size, stat.st_mtime_ns, end, tail))


def _read_v3(
    path: Path, on_warning: Callable[[str], None]
) -> tuple[list[dict[str, Any]], tuple[str | None, str | None]]:
    from capeval.results.load import read_rows

    # Its warnings (a repeat held twice) are the ingest's, printed with the rest.
    return read_rows(path, on_warning=on_warning), run_times(path)


def _is_duckdb_error(exc: BaseException) -> bool:
    import duckdb

    return isinstance(exc, duckdb.Error)


def _in_one_transaction(
    con: duckdb.DuckDBPyConnection,
    inputs: list[Input],
    temps: list[str],
    write: Callable[[list[Input]], None],
    skipped: Callable[[str, ResultFileError], bool] | None = None,
) -> None:
    """`write(inputs)` in one transaction; if DuckDB refuses a file, or a value it would
    read otherwise than Python, the reference reader reads that file and it runs once more.

    A file the reference reader refuses too is left out when `skipped` says so.
    """
    for attempt in range(2):
        con.execute("BEGIN TRANSACTION")
        try:
            write(inputs)
            con.execute("COMMIT")
            return
        except BaseException as exc:
            con.execute("ROLLBACK")
            if not _is_duckdb_error(exc) or attempt:
                raise
            inputs = _by_the_reference(con, inputs, temps, skipped)


def _by_the_reference(
    con: duckdb.DuckDBPyConnection,
    inputs: Sequence[Input],
    temps: list[str],
    skipped: Callable[[str, ResultFileError], bool] | None = None,
) -> list[Input]:
    """`inputs`, each one DuckDB cannot read exactly replaced by the reference reader's rows.

    Raises the reference reader's `ResultFileError` (naming file, line and
    field) for a file it refuses.
    """
    out = []
    for item in inputs:
        stage(con, [item])
        try:
            # Materialise every column: a count alone would let DuckDB skip the bad field.
            con.execute(
                f"CREATE OR REPLACE TEMP TABLE _probe AS {table_select()}", [[item.read_path]]
            )
        except Exception as single:
            if not _is_duckdb_error(single):
                raise
            try:
                rows = _reference_rows(item)
            except ResultFileError as exc:
                if skipped is None or not skipped(item.source, exc):
                    raise
                continue
            out.append(replace(item, read_path=temp_jsonl(rows, temps)))
        else:
            out.append(item)
    return out


def _reference_rows(item: Input) -> list[dict[str, Any]]:
    """The rows of an input as the reference reader reads them, or its error."""
    from capeval.results.jsonl import parse_jsonl

    data = Path(item.read_path).read_bytes()
    before = _lines_before(item.source, item.start) if item.format == "jsonl" else 0
    if item.format == "jsonl":
        try:
            rows = parse_jsonl(data, item.source)[0]  # names the line of a malformed row
        except ResultFileError as bad:
            if bad.line is None or not before:
                raise
            raise ResultFileError(item.source, bad.message, line=bad.line + before) from None
    else:
        rows = [json.loads(line) for line in data.split(b"\n") if line.strip()]
    lines = [n for n, raw in enumerate(data.split(b"\n"), start=before + 1) if raw.strip()]
    for index, row in enumerate(rows):
        problem = type_problem(row)
        if problem is None:
            continue
        if item.format == "jsonl":
            raise ResultFileError(item.source, problem, line=lines[index])
        # A v3 file's rows were staged one a line, in the order of its cases.
        raise ResultFileError(item.source, f"cases[{index}]: {problem}")
    return rows


def _lines_before(path: str, offset: int) -> int:
    """How many lines of `path` precede byte `offset` (where a grown stream's new rows start)."""
    if offset <= 0:
        return 0
    count, done = 0, 0
    with open(path, "rb") as handle:
        while done < offset:
            chunk = handle.read(min(_HASH_CHUNK, offset - done))
            if not chunk:
                break
            count += chunk.count(b"\n")
            done += len(chunk)
    return count
