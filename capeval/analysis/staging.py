"""Getting rows into DuckDB: files read where they lie, or staged, small ones batched.

Each file to read is an `Input`: a byte range with the facts its rows
inherit (its source, format, stem and a v3 header's run times), staged as a
temp table the read joins. A slice of a grown stream, a v3 file's rows and
what the reference reader read instead are staged as temp JSON Lines files.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capeval.analysis.views import INPLACE_FACTS, read_sql, select_sql, typed_row

if TYPE_CHECKING:
    import duckdb


@dataclass
class Input:
    """One byte range of one file to read, with the facts its rows inherit."""

    source: str
    format: str
    read_path: str
    stem: str
    header_started: str | None = None
    header_finished: str | None = None
    start: int = 0  # byte offset of the range in `source` (a grown stream's new rows)
    row_start: int = 0  # how many of the file's rows come before the range


def temp_jsonl(rows: Sequence[dict[str, Any]], temps: list[str]) -> str:
    fd, name = tempfile.mkstemp(prefix="capeval-history-", suffix=".jsonl")
    temps.append(name)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(typed_row(row), ensure_ascii=False) + "\n")
    return name


def temp_slice(handle: Any, start: int, end: int, temps: list[str]) -> str:
    fd, name = tempfile.mkstemp(prefix="capeval-history-", suffix=".jsonl")
    temps.append(name)
    handle.seek(start)
    with os.fdopen(fd, "wb") as out:
        remaining = end - start
        while remaining > 0:
            chunk = handle.read(min(remaining, 1 << 20))
            if not chunk:
                break
            out.write(chunk)
            remaining -= len(chunk)
    return name


def table_select(files: str = "?", *, in_place: bool = False, batched: bool = False) -> str:
    """SELECT of table columns from JSON Lines files (`files`: a list parameter or literal).

    Staged files take their facts from `_inputs` (a batch's rows by the input
    index each line was given, see `_batch`); files read in place need no join.
    """
    source = read_sql(files, BATCH_KEY if batched else None)
    if in_place:
        return f"SELECT {select_sql(INPLACE_FACTS, lazy=True)}\nFROM {source}"
    join = f'i.idx = r."{BATCH_KEY}"' if batched else "i.readPath = r.filename"
    return f"SELECT {select_sql()}\nFROM {source}\nJOIN _inputs i ON {join}"


# DuckDB sets up every column of a read once per file: over 1,500 small run
# files that was 4 s of a 4.4 s read, against 0.04 s for the same rows in one
# file. Files under this size are read as one batch file instead, each line
# tagged with its input's index under a key no row may hold.
BATCH_MAX_BYTES = 1 << 20
BATCH_KEY = "__capevalInput"


def batch(inputs: Sequence[Input], temps: list[str]) -> tuple[str, list[Input]] | None:
    """One temp JSON Lines file holding the small inputs' lines, and those inputs, in order.

    A line that is not an object is copied as it is: DuckDB then refuses the
    batch and `_diagnose` reads each file on its own, naming file and line.
    """
    chosen: list[tuple[Input, bytes]] = []
    for item in inputs:
        try:
            if os.path.getsize(item.read_path) >= BATCH_MAX_BYTES:
                continue
            data = Path(item.read_path).read_bytes()
        except OSError:
            continue  # read on its own, where the error is named
        if BATCH_KEY.lower().encode() in data.lower():
            continue
        chosen.append((item, data))
    if len(chosen) < 2:
        return None
    fd, name = tempfile.mkstemp(prefix="capeval-history-batch-", suffix=".jsonl")
    temps.append(name)
    with os.fdopen(fd, "wb") as out:
        for index, (_, data) in enumerate(chosen):
            tag = b'{"' + BATCH_KEY.encode() + b'":' + str(index).encode()
            for line in data.split(b"\n"):
                body = line.lstrip(b" \t\r")
                if body.startswith(b"{"):
                    rest = body[1:]
                    empty = rest.lstrip(b" \t\r").startswith(b"}")
                    line = tag + (b"" if empty else b",") + rest
                out.write(line + b"\n")
    return name, [item for item, _ in chosen]


def stage(con: duckdb.DuckDBPyConnection, inputs: Sequence[Input]) -> None:
    """The per-file facts of `inputs` as the temp table `_inputs` (one statement)."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _inputs AS SELECT CAST(unnest(?) AS BIGINT) AS idx, "
        "unnest(?) AS readPath, "
        "unnest(?) AS source, unnest(?) AS format, unnest(?) AS stem, "
        "CAST(unnest(?) AS VARCHAR) AS headerStartedAt, "
        "CAST(unnest(?) AS VARCHAR) AS headerFinishedAt, "
        "CAST(unnest(?) AS BIGINT) AS rowStart",
        [
            list(range(len(inputs))),
            [i.read_path for i in inputs],
            [i.source for i in inputs],
            [i.format for i in inputs],
            [i.stem for i in inputs],
            [i.header_started for i in inputs],
            [i.header_finished for i in inputs],
            [i.row_start for i in inputs],
        ],
    )


def insert(
    con: duckdb.DuckDBPyConnection, inputs: Sequence[Input], table: str = "result_rows"
) -> int:
    if not inputs:
        return 0
    before = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]
    temps: list[str] = []
    try:
        batched_file = batch(inputs, temps)
        rest = list(inputs)
        if batched_file is not None:
            name, batched = batched_file
            stage(con, batched)
            con.execute(f"INSERT INTO {table} BY NAME " + table_select(batched=True), [[name]])
            taken = {id(i) for i in batched}
            rest = [i for i in inputs if id(i) not in taken]
        if rest:
            stage(con, rest)
            con.execute(
                f"INSERT INTO {table} BY NAME " + table_select(), [[i.read_path for i in rest]]
            )
    finally:
        for name in temps:
            Path(name).unlink(missing_ok=True)
    after = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]
    return int(after - before)
