"""Cells straight from result files, aggregated without building rows.

The gate runs in CI on files of hundreds of thousands of rows; building a
Python dict per row costs seconds. DuckDB reads only the columns the
verdicts need and computes the medians in SQL.

It is a fast path only: a
file DuckDB cannot read exactly (a torn last line, a malformed row, a v3 file
whose `cases` is not its last key, a pipe, a name DuckDB would expand as a
glob) is read again by the reference reader
(`capeval.results.load.read_rows`), so its errors and warnings, naming file
and line, are the ones the user sees. Both paths produce the same `Cell`s
(tests pin it on odd rows). Some leniencies remain, because catching them
would take typed reads of columns that cost the gate 9-25% more CPU: a
behavior metric written as a numeric string ("5") or as true, a numeric or
boolean case id, a non-string provider or model, and a legacy
toolCallsByName count that is not an integer are read as values here, where
the reference reader refuses the row or reads them as unknown; fields the
gate does not read (repeat, tokenUsage, and the report-only tier, title and
durations) are not checked, and a cell's report-only tier and title are any
row's non-null value here, the first row's (null when not a string) there.
DuckDB's parser also accepts, with no option to refuse them, trailing commas
inside a row and values Python will not hold (integers past 4300 digits,
nesting past its recursion limit), which the reference reader refuses. No writer produces any of these. Duplicate repeats
in one file are counted by both paths but only the reference reader warns
about them; repeats two files of one side share are counted exactly by both.

A v3 file is one JSON object, which DuckDB would have to hold whole in
memory. Instead its top-level keys are walked up to `"cases": [`, and the byte
range of that array is copied (by the kernel, `copy_file_range`) to a
temporary file DuckDB streams as a JSON array.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capeval.analysis import engine
from capeval.analysis.cells import Cell, cells_from_rows, parse_bait, unread_bait, variant_of
from capeval.core.metrics import METRIC_NAMES
from capeval.results import formats
from capeval.results.duckdb_paths import reads_as_pattern
from capeval.results.errors import ResultFileError
from capeval.results.formats import HEAD_CHUNK

_SMALLEST_NORMAL = sys.float_info.min  # 2.2250738585072014e-308


class FastPathUnavailable(Exception):
    """DuckDB could not read these files exactly; use the reference reader."""


@dataclass(frozen=True, slots=True)
class _Source:
    path: Path
    fmt: str  # "jsonl" | "v3"
    cases_offset: int = 0  # v3: byte offset of the `[` of `cases`
    cases_end: int = 0  # v3: byte offset of the closing `}` of the document


def load_side(
    paths: Sequence[Path], *, with_values: bool = False, headline: bool = True
) -> tuple[dict[str, Cell], list[str]]:
    """Cells of one side (one or more files) and the warnings reading produced."""
    sides, warnings = load_sides([list(paths)], with_values=with_values, headline=headline)
    return sides[0], warnings


def load_sides(
    sides: Sequence[Sequence[Path]],
    *,
    with_values: bool = False,
    fast: bool = True,
    headline: bool = True,
) -> tuple[list[dict[str, Cell]], list[str]]:
    """Cells for each side (a list of files per side), fast path first.

    `headline=False` skips what only reports show (tier, title, durations,
    turns, tokens): the gate reads fewer columns that way.

    Raises `ResultFileError` for a file that is not a readable result file.
    """
    from capeval.results.overlap import distinct_files, same_run_warnings

    warnings: list[str] = []
    for paths in sides:
        if not paths:
            raise ResultFileError("-", "no result files given for one side of the comparison")
        for path in paths:
            _check_readable(path)
    sides = [
        [Path(p) for p in distinct_files(paths, on_warning=warnings.append)] for paths in sides
    ]
    if fast:
        shared: list[str] = []
        try:
            cells = _load_duckdb(sides, with_values=with_values, headline=headline, shared=shared)
        except FastPathUnavailable:
            pass
        else:
            # The reference's two checks: repeats two files hold (by run id,
            # counted exactly in DuckDB), then files told apart only by header.
            return cells, warnings + shared + [
                w for paths in sides for w in same_run_warnings(paths, run_ids=False)
            ]
    out = [cells_from_rows(_read_rows(paths, warnings), keep_values=with_values) for paths in sides]
    # `read_many` reports the repeats files share by run id; copies of a v3
    # file whose rows name no run it cannot tell apart, their headers can.
    return out, warnings + [w for paths in sides for w in same_run_warnings(paths, run_ids=False)]


def _check_readable(path: Path) -> None:
    if path.is_dir():
        raise ResultFileError(path, "is a directory; pass result files (.jsonl or v3 .json)")
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise ResultFileError(path, f"cannot read: {exc.strerror or exc}") from exc


def _read_rows(paths: Iterable[Path], warnings: list[str]) -> list[dict[str, Any]]:
    from capeval.results.load import read_many

    return read_many(paths, on_warning=warnings.append)


# -- probing files ------------------------------------------------------------


def _probe(path: Path) -> _Source:
    """Tell JSONL from v3 and find a v3's `cases` array, reading only the head."""
    with open(path, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            # A pipe (`--candidate <(...)`, /dev/stdin) can be read once only:
            # probing it here would leave the reference reader without its head.
            raise FastPathUnavailable
        size = info.st_size
        head = formats.read_head(handle)
        if not head:
            raise FastPathUnavailable  # empty: let the reference reader decide
        parsed, obj = formats.parse_first_line(head)
        if parsed and isinstance(obj, dict) and formats.ROWS.claims(obj):
            if formats.rows_end(handle, size)[1]:
                raise FastPathUnavailable  # a torn last line is the reference reader's to report
            return _Source(path, "jsonl")
        v3 = formats.read_v3_head(handle)
        # `version: 3` must come before `cases`, each member once, and Python
        # must read every member before it; otherwise the reference reader judges the file.
        if v3 is None or v3.fields.get("version") != 3 or v3.repeated:
            raise FastPathUnavailable
        handle.seek(max(0, size - HEAD_CHUNK))
        tail = handle.read()
        stripped = tail.rstrip()
        if not stripped.endswith(b"}"):
            raise FastPathUnavailable  # text after the document: the reference reader refuses it
        end = len(stripped) - 1
        return _Source(path, "v3", v3.cases_offset, max(0, size - HEAD_CHUNK) + end)


# -- the DuckDB query -----------------------------------------------------------

# Only what verdicts need; reports add the headline columns. `passed` is read
# as JSON text so a non-boolean value is caught: DuckDB would quietly cast 1
# or the string "true" to true, where the reference reader refuses the row.
# The cell key is the stored `resultKey`, as `capeval aggregate` keys it; a
# row without one goes to the reference reader.
_COLUMNS = {
    "resultKey": "VARCHAR",
    "id": "VARCHAR",
    "provider": "VARCHAR",
    "model": "VARCHAR",
    "passed": "JSON",
    # As JSON text, parsed by the reference's own rule (`parse_bait`): a cast
    # would turn a threshold "5" into 5 where the reference drops the bait.
    "bait": "JSON",
}
_HEADLINE_COLUMNS = {
    "tier": "VARCHAR",
    "title": "VARCHAR",
    "durationMs": "DOUBLE",
    "turnsUsed": "DOUBLE",
    "tokenUsage": "STRUCT(input DOUBLE)",
}


def _behavior_type(legacy: bool) -> str:
    fields = [f'"{m}" DOUBLE' for m in METRIC_NAMES]
    if legacy:  # only files that predate taskToolCallCount pay for this
        fields.append('"toolCallsByName" STRUCT("task" DOUBLE, "spawn_agent" DOUBLE)')
    return "STRUCT(" + ", ".join(fields) + ")"


def _metric_expr(metric: str, legacy: bool) -> str:
    if metric == "taskToolCallCount" and legacy:
        # Older rows predate the metric: count `task`/`spawn_agent` calls.
        return (
            "CASE WHEN behaviors IS NULL THEN NULL ELSE coalesce(behaviors.taskToolCallCount, "
            "coalesce(behaviors.toolCallsByName.task, 0) + "
            "coalesce(behaviors.toolCallsByName.spawn_agent, 0)) END"
        )
    return f'behaviors."{metric}"'


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _columns_sql(headline: bool, legacy: bool) -> str:
    columns = {**_COLUMNS, **(_HEADLINE_COLUMNS if headline else {})}
    columns["behaviors"] = _behavior_type(legacy)
    return "{" + ", ".join(f"{_sql_str(k)}: {_sql_str(v)}" for k, v in columns.items()) + "}"


def _query(
    scans: Sequence[tuple[int, Sequence[str], str]],
    *,
    with_values: bool,
    headline: bool,
    legacy: bool,
) -> str:
    columns = _columns_sql(headline, legacy)
    selects = [
        f"SELECT {side} AS side, * FROM read_json([{', '.join(_sql_str(f) for f in files)}], "
        f"columns={columns}, format='{fmt}', records=true, auto_detect=false, "
        "maximum_object_size=16777216)"
        for side, files, fmt in scans
    ]
    projected = ", ".join(f"{_metric_expr(m, legacy)} AS m{i}" for i, m in enumerate(METRIC_NAMES))
    # NaN, Infinity and 1e400 read as DOUBLE; the reference counts no such value.
    headline_sql = (
        "any_value(tier) AS tier, any_value(title) AS title, "
        + ", ".join(
            f"coalesce(sum({col}) FILTER (WHERE isfinite({col})), 0) AS {name}, "
            f"count({col}) FILTER (WHERE isfinite({col})) AS {count}"
            for col, name, count in (
                ("durationMs", "durationMs", "durationN"),
                ("turnsUsed", "turnsUsed", "turnsN"),
                ("tokenUsage.input", "tokenInput", "tokenN"),
            )
        )
        if headline
        else "NULL AS tier, NULL AS title, 0.0 AS durationMs, 0.0 AS turnsUsed, "
        "0.0 AS tokenInput, 0 AS durationN, 0 AS turnsN, 0 AS tokenN"
    )
    aggregates = [
        "count_if(id IS NULL OR id = '' OR resultKey IS NULL OR resultKey = '' OR passed IS NULL "
        "OR passed::VARCHAR NOT IN ('true', 'false')"
        # A subnormal value too: DuckDB's median halves the two middle values
        # before adding them and loses it, where the reference adds first.
        + "".join(
            f" OR NOT isfinite(m{i}) OR (m{i} <> 0 AND abs(m{i}) < {_SMALLEST_NORMAL!r})"
            for i, _ in enumerate(METRIC_NAMES)
        )
        + ") AS bad",
        "count_if(behaviors IS NOT NULL AND behaviors.taskToolCallCount IS NULL) AS legacy",
        "any_value(id) AS id",
        "count(*) AS n",
        "count_if(passed::VARCHAR = 'true') AS c",
        # Cheaper than collecting pairs; the rare mixed cell is listed by a second query.
        "min(provider) AS pmin, max(provider) AS pmax, count(provider) AS pn",
        "min(model) AS mmin, max(model) AS mmax, count(model) AS mn",
        # The reference takes the first usable bait in file order, which a
        # parallel scan has no notion of: a cell whose rows disagree gives way.
        "min(bait::VARCHAR) FILTER (WHERE bait::VARCHAR <> 'null') AS bait",
        "max(bait::VARCHAR) FILTER (WHERE bait::VARCHAR <> 'null') AS baitMax",
        headline_sql,
        *(f"median(m{i}) AS med{i}" for i, _ in enumerate(METRIC_NAMES)),
    ]
    if with_values:
        aggregates += [
            f"list(m{i}) FILTER (WHERE m{i} IS NOT NULL) AS val{i}"
            for i, _ in enumerate(METRIC_NAMES)
        ]
        aggregates.append("list(passed::VARCHAR = 'true') AS passes")
    return (
        f"SELECT side, resultKey AS key, {', '.join(aggregates)} "
        f"FROM (SELECT *, {projected} FROM ({' UNION ALL BY NAME '.join(selects)})) "
        "GROUP BY side, resultKey"
    )


def _pairs_query(scans: Sequence[tuple[int, Sequence[str], str]], keys: Sequence[str]) -> str:
    """Every (provider, model) pair of the given cells: only run when a cell is mixed."""
    columns = "{'resultKey': 'VARCHAR', 'provider': 'VARCHAR', 'model': 'VARCHAR'}"
    selects = [
        f"SELECT {side} AS side, * FROM read_json([{', '.join(_sql_str(f) for f in files)}], "
        f"columns={columns}, format='{fmt}', records=true, auto_detect=false, "
        "maximum_object_size=16777216)"
        for side, files, fmt in scans
    ]
    wanted = ", ".join(_sql_str(k) for k in keys)
    return (
        "SELECT side, resultKey, list(DISTINCT [provider, model]) "
        f"FROM ({' UNION ALL BY NAME '.join(selects)}) WHERE resultKey IN ({wanted}) "
        "GROUP BY side, resultKey"
    )


def _single_pair(r: dict[str, Any]) -> tuple[str | None, str | None] | None:
    """The cell's one (provider, model), or None when its repeats disagree (mixed)."""
    if r["pmin"] != r["pmax"] or r["mmin"] != r["mmax"]:
        return None
    if r["pn"] not in (0, r["n"]) or r["mn"] not in (0, r["n"]):
        return None  # some repeats reported a provider/model, others none
    return (r["pmin"], r["mmin"])


def _load_duckdb(
    sides: Sequence[Sequence[Path]],
    *,
    with_values: bool,
    headline: bool,
    shared: list[str] | None = None,
) -> list[dict[str, Cell]]:
    """Cells per side; `shared` gets what `read_many` says of repeats two files hold."""
    duckdb = engine.engine()
    sources = [[_probe(Path(p)) for p in paths] for paths in sides]
    temps: list[str] = []
    try:
        scans: list[tuple[int, Sequence[str], str]] = []
        sliced = _slice_all([s for side in sources for s in side if s.fmt == "v3"], temps)
        for side, side_sources in enumerate(sources):
            jsonl = [_literal_path(s.path) for s in side_sources if s.fmt == "jsonl"]
            arrays = [_literal_path(Path(sliced[s])) for s in side_sources if s.fmt == "v3"]
            scans += [
                (side, f, fmt) for f, fmt in ((jsonl, "newline_delimited"), (arrays, "array")) if f
            ]
        con = engine.connect()
        try:
            with contextlib.suppress(duckdb.Error):  # refused inside Jupyter without ipywidgets
                con.execute("SET enable_progress_bar = false")
            con.execute("SET preserve_insertion_order = false")
            for legacy in (False, True):
                query = _query(scans, with_values=with_values, headline=headline, legacy=legacy)
                cursor = con.execute(query)
                names = [d[0] for d in cursor.description or ()]
                records = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
                # Rows that predate taskToolCallCount need toolCallsByName: read again with it.
                if legacy or not any(r["legacy"] for r in records):
                    break
            if any(r["bad"] for r in records):
                # Before anything else reads the cells: a row without a key
                # groups under None, which the mixed-pair query cannot take.
                raise FastPathUnavailable("a row the reference reader must explain")
            if any(r["bait"] != r["baitMax"] for r in records):  # see `baitMax` above
                raise FastPathUnavailable("the cell's rows declare different baits")
            resolved: dict[tuple[int, str], tuple[tuple[str | None, str | None], ...]] = {}
            for r in records:
                pair = _single_pair(r)
                if pair is not None:
                    resolved[(r["side"], r["key"])] = (pair,)
            mixed = sorted({r["key"] for r in records if (r["side"], r["key"]) not in resolved})
            if mixed:
                for side, key, pairs in con.execute(_pairs_query(scans, mixed)).fetchall():
                    resolved[(side, key)] = tuple(
                        sorted(((p, m) for p, m in pairs), key=lambda x: (x[0] or "", x[1] or ""))
                    )
            if shared is not None:
                shared += _shared_repeats(con, sources, sliced)
        except duckdb.Error as exc:
            raise FastPathUnavailable(str(exc)) from exc
        finally:
            con.close()
    finally:
        for temp in temps:
            os.unlink(temp)
    return _cells_of(records, resolved, len(sides), with_values=with_values)


def _cells_of(
    records: Sequence[dict[str, Any]],
    resolved: dict[tuple[int, str], tuple[tuple[str | None, str | None], ...]],
    n_sides: int,
    *,
    with_values: bool,
) -> list[dict[str, Cell]]:
    """`Cell`s from per-cell records, as either fast reader computes them."""
    out: list[dict[str, Cell]] = [{} for _ in range(n_sides)]
    for r in records:  # bad rows were sent to the reference reader above
        key = r["key"]
        variant = variant_of(key, r["id"])
        if variant is None:
            # A key that disagrees with its id needs the rows' own variantId.
            raise FastPathUnavailable("a resultKey that does not end in its case id")
        declared = json.loads(r["bait"]) if r["bait"] else None
        bait = parse_bait(declared)
        cell_values = None
        if with_values:
            cell_values = {m: tuple(sorted(r[f"val{i}"] or ())) for i, m in enumerate(METRIC_NAMES)}
        out[r["side"]][key] = Cell(
            resultKey=key,
            caseId=r["id"],
            variantId=variant,
            repeats=r["n"],
            passCount=r["c"],
            medians={m: _plain(r[f"med{i}"]) for i, m in enumerate(METRIC_NAMES)},
            resolved=resolved[(r["side"], key)],
            bait=bait,
            baitUnread=None if bait is not None else unread_bait([declared]),
            tier=r["tier"],
            title=r["title"],
            durationMs=r["durationMs"],
            turnsUsed=r["turnsUsed"],
            tokenInput=r["tokenInput"],
            durationReported=r["durationN"],
            turnsReported=r["turnsN"],
            tokenReported=r["tokenN"],
            passes=tuple(sorted(r["passes"])) if with_values else None,
            values=cell_values,
        )
    return [dict(sorted(side.items())) for side in out]


def _shared_repeats(
    con: Any, sources: Sequence[Sequence[_Source]], sliced: dict[_Source, str]
) -> list[str]:
    """Repeats (run, cell, repeat) a side's file holds that an earlier file of it holds too.

    `read_many`'s rule, counted by DuckDB: a run's stream pooled with a file
    that holds it after another run was counted twice without a word when
    only the files' first rows were compared. One file per side costs nothing.
    """
    from capeval.results.overlap import shared_repeats_warning

    out: list[str] = []
    columns = "{'runId': 'JSON', 'resultKey': 'VARCHAR', 'repeat': 'JSON'}"
    for side in sources:
        if len(side) < 2:
            continue
        reads = [_literal_path(s.path if s.fmt == "jsonl" else Path(sliced[s])) for s in side]
        selects = [
            f'SELECT filename, runId::VARCHAR AS run, resultKey AS cell, "repeat"::VARCHAR AS rep '
            f"FROM read_json([{', '.join(_sql_str(r) for r, s in zip(reads, side, strict=True) if s.fmt == fmt)}], "
            f"columns={columns}, format='{json_fmt}', records=true, auto_detect=false, "
            "filename=true, maximum_object_size=16777216)"
            for fmt, json_fmt in (("jsonl", "newline_delimited"), ("v3", "array"))
            if any(s.fmt == fmt for s in side)
        ]
        order = ", ".join(f"({_sql_str(r)}, {i})" for i, r in enumerate(reads))
        query = (
            "WITH k AS (SELECT DISTINCT o.idx, run, cell, rep "
            f"FROM ({' UNION ALL '.join(selects)}) r "
            f"JOIN (VALUES {order}) o(name, idx) ON o.name = r.filename "
            "WHERE run IS NOT NULL AND run <> 'null' AND rep IS NOT NULL AND rep <> 'null'), "
            "m AS (SELECT run, cell, rep, min(idx) AS first FROM k GROUP BY ALL) "
            "SELECT k.idx, m.first, count(*) FROM k JOIN m USING (run, cell, rep) "
            "WHERE k.idx <> m.first GROUP BY ALL ORDER BY 1, 2"
        )
        for idx, first, count in con.execute(query).fetchall():
            out.append(shared_repeats_warning(side[idx].path, count, side[first].path))
    return out


def _literal_path(path: Path) -> str:
    """The path as DuckDB must be given it to read that one file and no other."""
    text = os.path.abspath(path)
    if reads_as_pattern(text):
        raise FastPathUnavailable(f"{path}: a file name DuckDB would read as a glob pattern")
    return text


def _plain(value: float | None) -> float | int | None:
    """Medians as the reference path returns them: ints when integral."""
    if value is None:
        return None
    return int(value) if float(value).is_integer() else float(value)


def _slice_all(sources: Sequence[_Source], temps: list[str]) -> dict[_Source, str]:
    """Each v3 source's `cases` copied out, the copies side by side.

    The kernel copies with the GIL released, so one file per core halves the
    v3 gate's copying: two 242 MiB files took 0.37 s one after the other and
    0.19 s side by side on the 2-core development VM.
    """
    if len(sources) < 2:
        return {s: _slice_cases(s, temps) for s in sources}
    from concurrent.futures import ThreadPoolExecutor  # v3 files only

    with ThreadPoolExecutor(max_workers=min(len(sources), os.cpu_count() or 1)) as pool:
        names = list(pool.map(lambda s: _slice_cases(s, temps), sources))
    return dict(zip(sources, names, strict=True))


def _slice_cases(source: _Source, temps: list[str]) -> str:
    """Copy a v3 file's `cases` array (and whatever trails it) to a temp file DuckDB can stream."""
    import tempfile  # v3 files only: not on the JSONL gate's start-up

    fd, name = tempfile.mkstemp(prefix="capeval-cases-", suffix=".json")
    temps.append(name)
    try:
        with open(source.path, "rb") as handle:
            remaining = source.cases_end - source.cases_offset
            offset = source.cases_offset
            while remaining > 0:
                try:
                    copied = os.copy_file_range(handle.fileno(), fd, remaining, offset)
                except OSError:
                    handle.seek(offset)
                    os.write(fd, handle.read(remaining))
                    break
                if copied == 0:
                    break
                offset += copied
                remaining -= copied
    finally:
        os.close(fd)
    return name
