"""Which run a row belongs to, when its file is the only witness.

A row names its run (`runId`) and the run's start (`runStartedAt`). Files of
the TypeScript harness carry neither in their rows: a v3 file of it dates its
run in its header's `startedAt` and names it only by being one file per run.
The history views (SQL) and `load_frame` (polars) render the same rule, so a
run is the same run in both.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from capeval.results.formats import holds_rows, v3_header

T = TypeVar("T")


def run_identity(
    run_id: T,
    run_started: T,
    stem: T,
    header_started: T,
    *,
    coalesce: Callable[..., T],
    concat: Callable[..., T],
    text: Callable[[str], T],
) -> tuple[T, T]:
    """(runId, runStartedAt) of a row, in any expression language.

    A row keeps its own `runStartedAt`, else takes its file's header
    `startedAt`; a row keeps its own `runId`, else belongs to the run
    `<file stem>@<start>` (`<file stem>@` when nothing dates it).
    """
    started = coalesce(run_started, header_started)
    run = coalesce(run_id, concat(stem, text("@"), coalesce(run_started, header_started, text(""))))
    return run, started


def run_stem(path: str | Path) -> str:
    """The file part of a run id: the name of the file the path leads to, without its suffix.

    The views name a file by its resolved path, so a link is named after
    its target here too.
    """
    try:
        return Path(path).resolve().stem
    except (OSError, RuntimeError):
        return Path(path).stem


def run_times(path: str | Path) -> tuple[str | None, str | None]:
    """A v3 file's header `startedAt` and `finishedAt` ((None, None) for a row stream,
    which dates runs in its rows)."""
    if holds_rows(path):
        return None, None  # the v3 head walk costs more than reading a small stream
    header = v3_header(path)
    if header is None:
        return None, None
    if "startedAt" not in header or "finishedAt" not in header:
        # Not before `cases`, where every writer puts them; rare enough to parse it all.
        try:
            with open(path, "rb") as handle:
                doc = json.load(handle)
        except (OSError, ValueError, RecursionError):
            doc = None
        header = doc if isinstance(doc, dict) else header
    started, finished = header.get("startedAt"), header.get("finishedAt")
    return (
        started if isinstance(started, str) else None,
        finished if isinstance(finished, str) else None,
    )


def header_started(path: str | Path) -> str | None:
    """A v3 file's header `startedAt` (None for a row stream)."""
    return run_times(path)[0]
