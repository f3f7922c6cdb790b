"""The v3 results JSON: the interchange format of old baselines and other tools.

`{version: 3, startedAt, finishedAt, provider, model, repeats, variants,
aggregates, totals, cases}`. On write, aggregates and totals are computed from
the rows; on read they are dropped and callers recompute them with
`capeval.core.aggregate`, so a hand-edited aggregate can never reach a verdict.
Unknown fields, at the top level and in rows, are kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from capeval.core.aggregate import aggregate, totals
from capeval.results.errors import JSON_ERRORS, ResultFileError, json_error_detail
from capeval.results.inputs import InputRefused, read_input
from capeval.results.output import write_output
from capeval.results.rowcheck import (
    document_twice,
    load_json,
    parses_made_twice,
    plain,
    row_problem,
    twice_problem,
)

VERSION = 3
# Stored, but never trusted on read: see the module docstring.
DERIVED_FIELDS: tuple[str, ...] = ("aggregates", "totals")


def default_variants(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Variants in first-seen order, with the provider/model each cell asked for."""
    seen: dict[str, dict[str, Any]] = {}
    for row in rows:
        vid = row.get("variantId")
        if not isinstance(vid, str) or vid in seen:
            continue
        entry: dict[str, Any] = {"id": vid}
        for field, source in (("provider", "requestedProvider"), ("model", "requestedModel")):
            if row.get(source) is not None:
                entry[field] = row[source]
        seen[vid] = entry
    return list(seen.values())


def build_v3(
    rows: Sequence[Mapping[str, Any]],
    *,
    started_at: str | None,
    finished_at: str | None,
    provider: str | None = None,
    model: str | None = None,
    repeats: int | None = None,
    variants: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The v3 document for `rows` (pure; `write_v3` stores it)."""
    for index, row in enumerate(rows):
        problem = row_problem(row)
        if problem is not None:
            raise ValueError(f"rows[{index}]: {problem}")
    if repeats is None and rows:
        repeats = max(int(r.get("repeat") or 0) for r in rows) + 1
    return {
        "version": VERSION,
        "startedAt": started_at,
        "finishedAt": finished_at,
        "provider": provider,
        "model": model,
        "repeats": repeats,
        "variants": [dict(v) for v in variants] if variants is not None else default_variants(rows),
        "aggregates": aggregate(rows),
        "totals": totals(rows),
        "cases": [dict(r) for r in rows],
    }


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def dump_v3(doc: Mapping[str, Any]) -> str:
    """JSON text with one top-level field per line and one row per line.

    Readable and diff-friendly like an indented file, but written by the C
    encoder: fully indented output of a 200,000-row file takes tens of seconds.
    """
    parts = []
    for key, value in doc.items():
        if isinstance(value, list) and value:
            text = "[\n" + ",\n".join("    " + _compact(v) for v in value) + "\n  ]"
        else:
            text = _compact(value)
        parts.append(f"  {_compact(key)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def write_v3(
    path: str | Path,
    rows: Sequence[Mapping[str, Any]],
    *,
    started_at: str | None,
    finished_at: str | None,
    provider: str | None = None,
    model: str | None = None,
    repeats: int | None = None,
    variants: Sequence[Mapping[str, Any]] | None = None,
) -> None:
    """Write a v3 file atomically: readers see the old file or the new one, never half."""
    doc = build_v3(
        rows,
        started_at=started_at,
        finished_at=finished_at,
        provider=provider,
        model=model,
        repeats=repeats,
        variants=variants,
    )
    write_output(Path(path), dump_v3(doc))


def parse_v3(
    doc: Any, path: str | Path, *, twice: bool = False
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Check an already-parsed v3 document; return (header, rows).

    `twice`: its parse (`load_json`) met an object holding a key twice, so
    the document and its rows are checked for fields written twice.
    The header is every top-level field except `cases` and the derived
    `aggregates`/`totals`.
    """
    repeated = document_twice(doc) if twice else None
    if repeated is not None:
        raise ResultFileError(path, f"field {repeated!r} is written twice; keep one")
    if not isinstance(doc, dict):
        raise ResultFileError(
            path, f"top level is a JSON {type(doc).__name__}, expected a v3 results object"
        )
    if "version" not in doc:
        raise ResultFileError(
            path,
            "no 'version' field: capeval reads v3 results JSON ({\"version\": 3, ..., "
            '"cases": [...]}) and JSON Lines row streams (one row object per line)',
        )
    version = doc["version"]
    if version != VERSION or isinstance(version, bool):
        raise ResultFileError(
            path, f"field 'version' is {json.dumps(version)}; capeval reads version 3 files only"
        )
    cases = doc.get("cases")
    if not isinstance(cases, list):
        what = "missing" if "cases" not in doc else f"a JSON {type(cases).__name__}"
        raise ResultFileError(
            path, f"field 'cases' is {what}; it must be the list of per-repeat rows"
        )
    if twice:
        for index, row in enumerate(cases):
            problem = twice_problem(row, row.get("id") if isinstance(row, dict) else None)
            if problem is not None:
                raise ResultFileError(path, f"cases[{index}]: {problem}")
        doc = plain(doc)
        cases = doc["cases"]
    for index, row in enumerate(cases):
        problem = row_problem(row)
        if problem is not None:
            raise ResultFileError(path, f"cases[{index}]: {problem}")
    header = {k: v for k, v in doc.items() if k != "cases" and k not in DERIVED_FIELDS}
    return header, cases


def read_v3(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, rows) of a v3 file; stored aggregates and totals are not returned."""
    path = Path(path)
    try:
        text = read_input(path)
    except InputRefused as exc:
        raise ResultFileError(path, exc.reason) from exc
    except OSError as exc:
        raise ResultFileError(path, f"cannot read: {exc.strerror or exc}") from exc
    mark = parses_made_twice()
    try:
        doc = load_json(text)
    except json.JSONDecodeError as exc:
        raise ResultFileError(
            path, f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc
    except UnicodeDecodeError as exc:
        raise ResultFileError(path, "not UTF-8 text; is this a result file?") from exc
    except JSON_ERRORS as exc:
        raise ResultFileError(path, f"cannot be read as JSON: {json_error_detail(exc)}") from exc
    return parse_v3(doc, path, twice=parses_made_twice() != mark)
