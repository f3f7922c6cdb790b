"""Read any result file into rows: JSON Lines streams and v3 JSON alike.

The format is told by content, not by name, because users rename files; the
suffix only breaks the tie when the content is too broken to tell. Rows come
back with older behavior records brought up to date (`taskToolCallCount`), so
everything downstream sees one shape.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from capeval.core.aggregate import backfill_behaviors, row_result_key
from capeval.core.outcome import row_outcome
from capeval.results.errors import (
    JSON_ERRORS,
    ResultFileError,
    json_error_detail,
    warn_passed_over,
)
from capeval.results.formats import read_bytes, reading_format
from capeval.results.jsonl import parse_jsonl
from capeval.results.overlap import distinct_files, shared_repeats_warning
from capeval.results.rowcheck import load_json, parses_made_twice
from capeval.results.supersede import supersede
from capeval.results.v3 import parse_v3

__all__ = ["ResultFileError", "read_many", "read_rows"]


def _up_to_date(row: dict[str, Any]) -> dict[str, Any]:
    """The row with what older writers left out filled in: `taskToolCallCount`, `outcome`."""
    behaviors = row.get("behaviors")
    filled = backfill_behaviors(behaviors)
    if filled is behaviors and row.get("outcome") is not None:
        return row
    return {**row, "behaviors": filled, "outcome": row_outcome(row)}


def _default_warn(message: str) -> None:
    warn_passed_over(message, stacklevel=4)


def read_rows(
    path: str | Path, *, on_warning: Callable[[str], None] | None = None
) -> list[dict[str, Any]]:
    """Every row of one result file (JSON Lines or v3) that stands, brought up to date.

    Rows a later row of their repeat supersedes are left out
    (`capeval.results.supersede`); every row has its `outcome` (derived from
    `passed` and `status` for older rows) and behaviors backfilled. Raises
    `ResultFileError` naming the file for anything that is not a result
    file. Skipped torn lines and duplicate repeats are reported through
    `on_warning` (default: a `ResultFileWarning`).
    """
    path = Path(path)
    data = read_bytes(path)
    mark = parses_made_twice()
    fmt, doc = reading_format(data, path)
    if fmt == "jsonl":
        rows, found = parse_jsonl(data, path)
        for message in found:
            (on_warning or _default_warn)(message)
    else:
        if doc is None:
            try:
                doc = load_json(data)
            except json.JSONDecodeError as exc:
                raise ResultFileError(
                    path,
                    f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}; "
                    "expected a v3 results object or a JSON Lines row stream",
                ) from exc
            except UnicodeDecodeError as exc:
                raise ResultFileError(path, "not UTF-8 text; is this a result file?") from exc
            except JSON_ERRORS as exc:
                raise ResultFileError(
                    path, f"cannot be read as JSON: {json_error_detail(exc)}"
                ) from exc
        rows = parse_v3(doc, path, twice=parses_made_twice() != mark)[1]
    rows = supersede(rows)
    for message in duplicate_repeats(rows, path):
        (on_warning or _default_warn)(message)
    return [_up_to_date(row) for row in rows]


def _repeat_key(row: dict[str, Any]) -> tuple[Any, ...] | None:
    """Which repeat a row is: (run, cell, repeat); None for rows without a repeat."""
    if row.get("repeat") is None:
        return None
    return (row.get("runId"), row_result_key(row), row["repeat"])


def duplicate_repeats(rows: list[dict[str, Any]], path: Path) -> list[str]:
    """Repeats recorded twice in one file, once supersession has left out what it does.

    Both are kept (data is never dropped), but they inflate a cell's repeat
    count, e.g. after a resume that re-ran a finished repeat, so say so.
    """
    first: dict[tuple[Any, ...], int] = {}
    found: list[str] = []
    for index, row in enumerate(rows):
        key = _repeat_key(row)
        if key is None:
            continue
        if key in first:
            found.append(
                f"{path}: row {index + 1} repeats {key[1]} repeat {key[2]} (first at row "
                f"{first[key] + 1}); both are counted"
            )
        else:
            first[key] = index
    return found


def read_many(
    paths: Iterable[str | Path], *, on_warning: Callable[[str], None] | None = None
) -> list[dict[str, Any]]:
    """Rows of several files, in file order then row order; a file named twice is read once.

    Repeats that two files both hold (a run's v3 export passed beside its
    stream) are all counted, as within one file, and reported once per pair.
    """
    out: list[dict[str, Any]] = []
    seen: dict[tuple[Any, ...], str] = {}  # repeat -> the first file that held it
    for path in distinct_files(paths, on_warning=on_warning):
        rows = read_rows(path, on_warning=on_warning)
        keys = {
            key
            for row in rows
            if row.get("runId") is not None and (key := _repeat_key(row)) is not None
        }
        shared = Counter(seen[k] for k in keys if seen.get(k, str(path)) != str(path))
        for other, count in shared.items():
            (on_warning or _default_warn)(shared_repeats_warning(path, count, other))
        for key in keys:
            seen.setdefault(key, str(path))
        out.extend(rows)
    return out


def rows_by_file(
    paths: Iterable[str | Path], *, on_warning: Callable[[str], None] | None = None
) -> list[tuple[Path, list[dict[str, Any]]]]:
    """Like `read_many` but keeps which file each batch came from."""
    return [(Path(p), read_rows(p, on_warning=on_warning)) for p in paths]
