"""Cells straight from result files, aggregated without building rows.

The gate runs in CI on files of hundreds of thousands of rows; building a
Python dict per row costs seconds. DuckDB reads only the fields a verdict
needs, each as its JSON text typed by the column registry's rules
(`capeval.results.columns`, `capeval.results.rowcheck`), and aggregates each
cell with the SQL the history `cells` view uses (`capeval.analysis.cellsql`).

It is a fast path only. A row the reference reader would refuse or read
otherwise (a metric written as true or "5", a field a verdict reads written
twice, a fractional repeat, a tokenUsage that is no object, a legacy
tool-call count past a 64-bit integer, a subnormal metric DuckDB's median
would lose) marks its cell, and so does a cell whose rows disagree where the
reference takes the first row's value (the case id, a bait, a tier): the
files are then read again by the reference reader
(`capeval.results.load.read_rows`), so its errors and warnings, naming file,
line and field, are the ones the user sees. Tests hold both paths to the
same `Cell`s or the same refusal on random odd rows. What remains: DuckDB's
parser takes, with no option to refuse them, a trailing comma inside a row
and values Python will not hold (integers past 4300 digits, nesting past
its recursion limit), which the reference reader refuses; no writer
produces them, and looking for them costs a pass over every byte. A repeat
one file holds twice (after supersession) sends its files to the reference
reader, which names it; repeats two files of one side share are counted
exactly by both.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from capeval.analysis import engine
from capeval.analysis.cellsql import measures
from capeval.analysis.duckfiles import (
    FastPathUnavailable,
    Source,
    literal_path,
    probe,
    slice_all,
)
from capeval.core.cell import BaitDecl, Cell, cells_from_rows, parse_bait, variant_of
from capeval.core.metrics import LEGACY_TASK_TOOLS, METRIC_NAMES, TOOL_CALLS_BY_NAME
from capeval.core.outcome import ERROR
from capeval.results.columns import (
    COLUMNS,
    LEGACY_PATHS,
    STR,
    TypedSQL,
    ident,
    json_columns,
    json_text,
    legacy_task_calls_sql,
    outcome_of_row_sql,
    path_sql,
    sql_str,
    task_calls_sql,
    typed_sql,
)
from capeval.results.errors import ResultFileError
from capeval.results.inputs import InputRefused, check_input, is_regular
from capeval.results.rowcheck import CONTRACT
from capeval.results.supersede import superseded_sql


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

    Raises `ResultFileError` for a file that is not a readable result file, and
    for one that changed while it was read (a run still writing it): its
    rows would be a prefix of the run, never to be judged as the whole.
    """
    before = {Path(p): _size(Path(p)) for paths in sides for p in paths}
    cells, warnings = _load_sides(sides, with_values=with_values, fast=fast, headline=headline)
    for path, size in before.items():
        if _size(path) != size:
            raise ResultFileError(
                path,
                "changed while it was read (a run still writing it?); its rows would be a "
                "prefix of the run: gate it once the run has finished",
            )
    return cells, warnings


def _size(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def _load_sides(
    sides: Sequence[Sequence[Path]], *, with_values: bool, fast: bool, headline: bool
) -> tuple[list[dict[str, Cell]], list[str]]:
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
    try:
        check_input(path)
        if is_regular(path):
            with open(path, "rb"):
                pass
    except InputRefused as exc:
        raise ResultFileError(path, f"{exc.reason} (.jsonl or v3 .json)") from exc
    except OSError as exc:
        raise ResultFileError(path, f"cannot read: {exc.strerror or exc}") from exc


def _read_rows(paths: Iterable[Path], warnings: list[str]) -> list[dict[str, Any]]:
    from capeval.results.load import read_many

    return read_many(paths, on_warning=warnings.append)


# -- the rows, typed as the registry types them --------------------------------------

# What the gate reads: every field a verdict reads (so DuckDB refuses each one
# written twice, as the reference reader does).
_VERDICT_PATHS = [c.path for c in COLUMNS if c.verdict and c.path is not None]
# The run (supersession's key) and the tier (a bait case must be declared) are always read.
_ALWAYS_PATHS: list[tuple[str, ...]] = [("runId",), ("tier",)]
_HEADLINE_PATHS: list[tuple[str, ...]] = [("title",), ("durationMs",), ("turnsUsed",)]
_SMALLEST_NORMAL = sys.float_info.min  # 2.2250738585072014e-308


def _text(path: tuple[str, ...]) -> str:
    return json_text(path_sql(path))


def _rows_sql(source: str, *, headline: bool, legacy: bool) -> str:
    """The rows of one read_json `source`, typed, and whether the reference would judge otherwise.

    `odd` marks a row the reference reader refuses or reads otherwise; the
    text columns are judged per cell (`_exact`): a cell's case id, bait and
    provider must each be one value for the cell to be read here. Three
    levels, so each field's text and number are computed once.
    """
    metrics = {m: f"m{i}" for i, m in enumerate(METRIC_NAMES)}
    tools = {t: f"calls{i}" for i, t in enumerate(LEGACY_TASK_TOOLS)} if legacy else {}
    outcome = outcome_of_row_sql()
    texts = [
        "side",
        "superseded",
        "filename",
        f"{_text(('resultKey',))} AS key",
        f"{_text(('id',))} AS idText",
        f"{_text(('passed',))} AS passedText",
        f"{outcome.value} AS outcome",
        f"{outcome.misfit} AS outcomeMisfit",
        f"{_text(('runId',))} AS runIdText",
        f"{_text(('tier',))} AS tierText",
        f"{_text(('provider',))} AS providerText",
        f"{_text(('model',))} AS modelText",
        f"{path_sql(('bait',))} IS NOT NULL AS baited",
        f"{_text(('bait', 'metric'))} AS baitMetricText",
        f"{_text(('bait', 'threshold'))} AS baitThresholdText",
        f"{_text(('repeat',))} AS repeatText",
        # Read, so DuckDB refuses a `tokenUsage` that is no object, as the reference does.
        f"{path_sql(('tokenUsage',))} IS NOT NULL AS tokens",
        f"{path_sql(('behaviors',))} IS NOT NULL AS captured",
        *(f"{_text(('behaviors', m))} AS {c}" for m, c in metrics.items()),
        *(f"{_text(('behaviors', TOOL_CALLS_BY_NAME, t))} AS {c}" for t, c in tools.items()),
    ]
    numbers = ["*", *(f"TRY_CAST({c} AS DOUBLE) AS {c}n" for c in metrics.values())]
    if headline:
        texts += [
            f"{_text(('title',))} AS titleText",
            *(
                f"{_text(path)} AS {name}Text"
                for name, path in (
                    ("durationMs", ("durationMs",)),
                    ("turnsUsed", ("turnsUsed",)),
                    ("tokenInput", ("tokenUsage", "input")),
                )
            ),
        ]
        numbers += [
            f"TRY_CAST({n}Text AS DOUBLE) AS {n}Number"
            for n in ("durationMs", "turnsUsed", "tokenInput")
        ]
    task = metrics["taskToolCallCount"]
    own = TypedSQL(f"{task}n", "false", "false")
    filled = (
        task_calls_sql("captured", own, legacy_task_calls_sql(*tools.values())) if legacy else own
    )
    odd = [
        CONTRACT[("repeat",)].misfit("repeatText", ""),
        filled.inexact,
        "outcomeMisfit",
        # Supersession keys on the run id as its column holds it: text.
        "(runIdText IS NOT NULL AND NOT starts_with(runIdText, '\"'))",
    ]
    typed = [
        "side",
        "superseded",
        "filename",
        "runIdText",
        "repeatText",
        "key",
        "idText",
        "passedText",
        "passedText = 'true' AS passed",
        "outcome",
        "tierText",
        "providerText",
        "modelText",
        "baited",
        "baitMetricText",
        "baitThresholdText",
        "tokens",
        f"captured AND {task} IS NULL AS predates",
    ]
    for metric, c in metrics.items():
        check = CONTRACT[("behaviors", metric)]
        value = f"CAST({filled.value} AS DOUBLE)" if c == task else f"{c}n"
        # DuckDB's median halves the two middle values before adding them and
        # loses a subnormal one, where the reference adds first.
        normal = f"({c}n = 0 OR abs({c}n) >= {_SMALLEST_NORMAL!r})"
        odd.append(check.odd(c, f"{c}n", also=normal))
        typed.append(f"{value} AS {ident(metric)}")
    typed.append(f"({' OR '.join(odd)}) AS odd")
    if headline:
        typed += [
            "titleText",
            # As the reference's cells read a number: a finite one, else nothing.
            *(
                f"CASE WHEN isfinite({n}Number) THEN {n}Number END AS {n}"
                for n in ("durationMs", "turnsUsed", "tokenInput")
            ),
        ]
    return (
        f"SELECT {', '.join(typed)} FROM (SELECT {', '.join(numbers)} FROM "
        f"(SELECT {', '.join(texts)} FROM {source}))"
    )


def _read_json(
    side: int, files: Sequence[str], fmt: str, columns: str, *, supersede: bool = False
) -> str:
    """The rows of `files`, each with its side and whether a later row supersedes it
    (computed only with `supersede`: a window over every row, needed only when some
    row is an `error`)."""
    read = (
        f"read_json([{', '.join(sql_str(f) for f in files)}], "
        f"columns={columns}, format='{fmt}', records=true, auto_detect=false, "
        "filename=true, maximum_object_size=16777216) WITH ORDINALITY"
    )
    flag = "false"
    if supersede:
        flag = superseded_sql(
            outcome=outcome_of_row_sql().value,
            order="ordinality",
            file="filename",
            run=typed_sql(STR, path_sql(("runId",))).value,
            cell=_text(("resultKey",)),
            repeat=_text(("repeat",)),
        )
    return f"(SELECT {side} AS side, *, {flag} AS superseded FROM {read})"


# Every aggregate but the `odd` count leaves superseded rows out.
_COUNTED = "NOT superseded"


def _texts(name: str) -> list[str]:
    """A text column judged per cell: one value (or none) across the cell's rows."""
    return [
        f"min({name}) FILTER (WHERE {_COUNTED}) AS {name}Min",
        f"max({name}) FILTER (WHERE {_COUNTED}) AS {name}Max",
        f"count({name}) FILTER (WHERE {_COUNTED}) AS {name}N",
    ]


def _query(
    scans: Sequence[tuple[int, Sequence[str], str]],
    *,
    with_values: bool,
    headline: bool,
    legacy: bool,
    supersede: bool = False,
) -> str:
    """Per side and cell, the cell's aggregates and what tells whether they are exact.

    `legacy`: read what fills `taskToolCallCount` for rows that predate it
    (each costs a little, so only for files whose first row does).
    `supersede`: leave out the rows a later row supersedes (only when a row
    is an `error`: the window it takes costs a sort).
    """
    paths = _VERDICT_PATHS + _ALWAYS_PATHS + (list(LEGACY_PATHS) if legacy else [])
    columns = json_columns(paths + (_HEADLINE_PATHS if headline else []))
    rows = " UNION ALL ".join(
        _rows_sql(
            _read_json(side, files, fmt, columns, supersede=supersede),
            headline=headline,
            legacy=legacy,
        )
        for side, files, fmt in scans
    )
    counted = _COUNTED
    judged = f"({counted} AND outcome <> '{ERROR}')"
    aggregates = [
        *measures(["repeats", "passCount", "errors", *METRIC_NAMES], counted=counted),
        f"count(*) FILTER (WHERE {counted}) AS rows",
        # A repeat a file holds twice once supersession is done: only the reference names it.
        f"count(*) FILTER (WHERE {counted} AND repeatText IS NOT NULL) AS numbered",
        "count(DISTINCT [filename, runIdText, repeatText]) "
        f"FILTER (WHERE {counted} AND repeatText IS NOT NULL) AS distinctRepeats",
        # Every row, superseded or not: the reference reader judges each line.
        "count_if(odd) AS odd",
        f"count_if(predates AND {counted}) AS predates",
        *_texts("idText"),
        *_texts("passedText"),
        *_texts("providerText"),
        *_texts("modelText"),
        *_texts("tierText"),
        f"count_if(baited AND {counted}) AS baited",
        "count_if(tokens) AS tokens",  # read, so a `tokenUsage` that is no object is refused
        *_texts("baitMetricText"),
        *_texts("baitThresholdText"),
    ]
    if headline:
        aggregates += [
            *_texts("titleText"),
            *measures(["durationMs", "turnsUsed", "tokenInput"], counted=counted),
            f"count(durationMs) FILTER (WHERE {counted}) AS durationN",
            f"count(turnsUsed) FILTER (WHERE {counted}) AS turnsN",
            f"count(tokenInput) FILTER (WHERE {counted}) AS tokenN",
        ]
    if with_values:
        aggregates += [
            f"list({ident(m)}) FILTER (WHERE {ident(m)} IS NOT NULL AND {judged}) "
            f"AS {ident('values ' + m)}"
            for m in METRIC_NAMES
        ]
        aggregates.append(f"list(passed) FILTER (WHERE {judged}) AS passes")
    return f"SELECT side, key, {', '.join(aggregates)} FROM ({rows}) GROUP BY side, key"


def _pairs_query(
    scans: Sequence[tuple[int, Sequence[str], str]], keys: Sequence[str], *, supersede: bool
) -> str:
    """Every (provider, model) pair of the given cells: only run when a cell is mixed."""
    fields = ("resultKey", "provider", "model", "runId", "repeat", "outcome", "passed", "status")
    columns = json_columns([(name,) for name in fields])
    selects = " UNION ALL ".join(
        _read_json(side, files, fmt, columns, supersede=supersede) for side, files, fmt in scans
    )
    wanted = ", ".join(sql_str(k) for k in keys)
    return (
        "SELECT side, key, list(DISTINCT [providerText, modelText]) FROM (SELECT side, "
        f"{_text(('resultKey',))} AS key, {_text(('provider',))} AS providerText, "
        f"{_text(('model',))} AS modelText FROM ({selects}) WHERE NOT superseded) "
        f"WHERE key IN ({wanted}) GROUP BY side, key"
    )


# -- from per-cell records to cells --------------------------------------------------


def _one(r: dict[str, Any], name: str, *, rows: int | None = None) -> tuple[bool, Any]:
    """(whether the cell's rows hold one value of a text column, it decoded; None: absent).

    `rows`: how many rows must hold it (the cell's, or its baited rows');
    by default either all of them or none.
    """
    count = r[f"{name}N"]
    if count == 0:
        return True, None
    if r[f"{name}Min"] != r[f"{name}Max"] or count != (r["rows"] if rows is None else rows):
        return False, None
    return True, json.loads(r[f"{name}Min"])


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _exact(r: dict[str, Any]) -> str | None:
    """Why the reference reader must read this cell (None: the record is exact)."""
    if r["odd"]:
        return "a row the reference reader must judge"
    if r["distinctRepeats"] != r["numbered"]:
        return "a repeat recorded twice in one file, which the reference reader names"
    key = json.loads(r["key"]) if r["key"] is not None else None
    if not isinstance(key, str) or not key:
        return "a row without a resultKey of its own"
    one, case = _one(r, "idText")
    if not one or not isinstance(case, str) or not case or r["idTextN"] != r["rows"]:
        return "the cell's rows name no single case id"
    if r["passedTextN"] != r["rows"] or not (
        r["passedTextMin"] >= "false" and r["passedTextMax"] <= "true"
    ):
        return "a `passed` that is not true or false"
    if variant_of(key, case) is None:
        return "a resultKey that does not end in its case id"
    return None


def _bait_of(r: dict[str, Any]) -> tuple[bool, BaitDecl | None]:
    """(whether the cell's bait is exactly read here, the bait)."""
    if not r["baited"]:
        return True, None
    one_metric, metric = _one(r, "baitMetricText", rows=r["baited"])
    one_threshold, threshold = _one(r, "baitThresholdText", rows=r["baited"])
    bait = parse_bait({"metric": metric, "threshold": threshold})
    # An unusable declaration is reported whole (`unread_bait`): the reference's.
    return (one_metric and one_threshold and bait is not None), bait


def _load_duckdb(
    sides: Sequence[Sequence[Path]],
    *,
    with_values: bool,
    headline: bool,
    shared: list[str] | None = None,
) -> list[dict[str, Cell]]:
    """Cells per side; `shared` gets what `read_many` says of repeats two files hold."""
    duckdb = engine.engine()
    sources = [[probe(Path(p)) for p in paths] for paths in sides]
    temps: list[str] = []
    try:
        scans: list[tuple[int, Sequence[str], str]] = []
        sliced = slice_all([s for side in sources for s in side if s.fmt == "v3"], temps)
        for side, side_sources in enumerate(sources):
            jsonl = [literal_path(s.path) for s in side_sources if s.fmt == "jsonl"]
            arrays = [literal_path(Path(sliced[s])) for s in side_sources if s.fmt == "v3"]
            scans += [
                (side, f, fmt) for f, fmt in ((jsonl, "newline_delimited"), (arrays, "array")) if f
            ]
        con = engine.connect()
        try:
            with contextlib.suppress(duckdb.Error):  # refused inside Jupyter without ipywidgets
                con.execute("SET enable_progress_bar = false")
            con.execute("SET preserve_insertion_order = false")
            legacy = any(s.legacy for side in sources for s in side)
            supersede = False
            while True:
                query = _query(
                    scans,
                    with_values=with_values,
                    headline=headline,
                    legacy=legacy,
                    supersede=supersede,
                )
                cursor = con.execute(query)
                names = [d[0] for d in cursor.description or ()]
                records = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
                # Older rows after newer ones at the head: read again with what fills them;
                # an `error` row, which a later row may supersede: read again leaving those out.
                again = False
                if not legacy and any(r["predates"] for r in records):
                    legacy = again = True
                if not supersede and any(r["errors"] for r in records):
                    supersede = again = True
                if not again:
                    break
            for r in records:
                why = _exact(r)
                if why is not None:
                    raise FastPathUnavailable(why)
            resolved: dict[tuple[int, str], tuple[tuple[str | None, str | None], ...]] = {}
            for r in records:
                one_provider, provider = _one(r, "providerText")
                one_model, model = _one(r, "modelText")
                if one_provider and one_model:
                    resolved[(r["side"], r["key"])] = ((_string(provider), _string(model)),)
            mixed = sorted({r["key"] for r in records if (r["side"], r["key"]) not in resolved})
            if mixed:
                pairs_sql = _pairs_query(scans, mixed, supersede=supersede)
                for side, key, pairs in con.execute(pairs_sql).fetchall():
                    decoded = {
                        tuple(_string(json.loads(t)) if t is not None else None for t in pair)
                        for pair in pairs
                    }
                    resolved[(side, key)] = tuple(
                        sorted(decoded, key=lambda x: (x[0] or "", x[1] or ""))  # type: ignore[arg-type]
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
    return _cells_of(records, resolved, len(sides), with_values=with_values, headline=headline)


def _cells_of(
    records: Sequence[dict[str, Any]],
    resolved: dict[tuple[int, str], tuple[tuple[str | None, str | None], ...]],
    n_sides: int,
    *,
    with_values: bool,
    headline: bool,
) -> list[dict[str, Cell]]:
    """`Cell`s from exact per-cell records."""
    out: list[dict[str, Cell]] = [{} for _ in range(n_sides)]
    for r in records:
        key, case = json.loads(r["key"]), json.loads(r["idTextMin"])
        exact, bait = _bait_of(r)
        if not exact:
            raise FastPathUnavailable("the cell's rows declare a bait the reference must read")
        title = None
        one_tier, tier = _one(r, "tierText")
        if headline:
            one_title, title = _one(r, "titleText")
            one_tier = one_tier and one_title
        if not one_tier:
            raise FastPathUnavailable("the cell's tier or title is its first row's")
        cell_values = None
        if with_values:
            cell_values = {m: tuple(sorted(r[f"values {m}"] or ())) for m in METRIC_NAMES}
        out[r["side"]][key] = Cell(
            resultKey=key,
            caseId=case,
            variantId=variant_of(key, case) or key,
            repeats=r["repeats"],
            passCount=r["passCount"],
            errors=r["errors"],
            medians={m: _plain(r[m]) for m in METRIC_NAMES},
            resolved=resolved[(r["side"], r["key"])],
            bait=bait,
            tier=_string(tier),
            title=_string(title),
            durationMs=r["durationMs"] or 0.0 if headline else 0.0,
            turnsUsed=r["turnsUsed"] or 0.0 if headline else 0.0,
            tokenInput=r["tokenInput"] or 0.0 if headline else 0.0,
            durationReported=r["durationN"] if headline else 0,
            turnsReported=r["turnsN"] if headline else 0,
            tokenReported=r["tokenN"] if headline else 0,
            passes=tuple(sorted(r["passes"] or ())) if with_values else None,
            values=cell_values,
        )
    return [dict(sorted(side.items())) for side in out]


def _shared_repeats(
    con: Any, sources: Sequence[Sequence[Source]], sliced: dict[Source, str]
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
        reads = [literal_path(s.path if s.fmt == "jsonl" else Path(sliced[s])) for s in side]
        selects = [
            f'SELECT filename, runId::VARCHAR AS run, resultKey AS cell, "repeat"::VARCHAR AS rep '
            f"FROM read_json([{', '.join(sql_str(r) for r, s in zip(reads, side, strict=True) if s.fmt == fmt)}], "
            f"columns={columns}, format='{json_fmt}', records=true, auto_detect=false, "
            "filename=true, maximum_object_size=16777216)"
            for fmt, json_fmt in (("jsonl", "newline_delimited"), ("v3", "array"))
            if any(s.fmt == fmt for s in side)
        ]
        order = ", ".join(f"({sql_str(r)}, {i})" for i, r in enumerate(reads))
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


def _plain(value: float | None) -> float | int | None:
    """Medians as the reference path returns them: ints when integral."""
    if value is None:
        return None
    return int(value) if float(value).is_integer() else float(value)
