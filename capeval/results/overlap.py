"""Files on one side of a comparison that hold the same run, or are the same file.

Passing a run's v3 export beside its JSON Lines stream counts every repeat
twice, and nothing in the verdicts would show it. The gate's fast path reads
no runId column, so this looks only at each file's head: cheap enough for
every gate, and it catches that mistake. (The reference reader counts the
shared repeats exactly: `capeval.results.load.read_many`.)

A v3 file of the TypeScript harness names no run in its rows; its run is
told by its header's `startedAt` (the harness wrote one file per run, so two
such files started at the same instant are copies of one run). Its copy
under another name is caught that way, from the header only.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from capeval.results.formats import first_rows_search, v3_header

_RUN_ID = re.compile(rb'"runId"\s*:\s*"((?:[^"\\]|\\.)*)"')


def head_run_id(path: str | Path) -> str | None:
    """The first run id a result file names, from its first rows (None: none there).

    A cheap look for the gate's fast path, which reads no runId column.
    """
    found = first_rows_search(path, _RUN_ID)
    return found.group(1).decode("utf-8", "replace") if found else None


def _run_key(path: str | Path) -> tuple[str, str] | None:
    """What tells a file's run from its head: the first run id, else a v3 header's startedAt."""
    run = head_run_id(path)
    if run is not None:
        return "run", run
    header = v3_header(path)
    started = header.get("startedAt") if header is not None else None
    return ("started", started) if isinstance(started, str) and started else None


def shared_repeats_warning(
    path: str | Path, count: int, other: str | Path, *, counted_once: bool = False
) -> str:
    """What every reader says of repeats a file holds that an earlier file holds too.

    `counted_once`: said by a reader that keeps each such repeat once, as the history
    views do (the viewer's run matrices), which has nothing to ask of the user.
    """
    said = f"{path} holds {count} repeat(s) that {other} holds too (same run, cell and repeat)"
    if counted_once:
        return f"{said}; each is counted once, as `capeval history` counts it"
    return f"{said}; both are counted: pass one file per run (its .jsonl or its v3 export)"


def same_run_warnings(paths: Sequence[str | Path], *, run_ids: bool = True) -> list[str]:
    """One warning per pair of files whose first rows belong to the same run.

    A file whose head names no run id is a v3 file of the TypeScript harness
    if anything: its run is its header's `startedAt`. `run_ids=False` leaves
    out files told by run id (the reference reader counts their shared
    repeats itself, and says so).
    """
    first: dict[tuple[str, str], str] = {}
    out = []
    for path in paths:
        try:
            key = _run_key(path)
        except OSError:
            continue  # reading it names the problem
        if key is None or (key[0] == "run" and not run_ids):
            continue
        if key not in first:
            first[key] = str(path)
        elif key[0] == "run":
            out.append(
                f"{path} and {first[key]} both hold run {key[1]}; its repeats are counted "
                "twice: pass one file per run (its .jsonl or its v3 export)"
            )
        else:
            out.append(
                f"{path} and {first[key]} both hold the run started at {key[1]} (the same "
                "v3 header startedAt, rows without run ids); its repeats are counted twice: "
                "pass one file per run (one is a copy of the other)"
            )
    return out


def distinct_files(
    paths: Iterable[str | Path], *, on_warning: Callable[[str], None] | None = None
) -> list[str | Path]:
    """Each file once, in order: one named twice (or by two names) is read once, with a warning.

    Read twice, every repeat of it counted double, silently (same-run
    warnings compare two files, not a file with itself). A path that cannot
    be examined is kept: reading it names the problem.
    """
    out: list[str | Path] = []
    seen: dict[tuple[int, int], str | Path] = {}
    for path in paths:
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            out.append(path)
            continue
        if not stat.S_ISREG(info.st_mode):
            out.append(path)  # a pipe is a stream of its own each time
            continue
        key = (info.st_dev, info.st_ino)
        if key in seen:
            first = seen[key]
            again = "given twice" if str(first) == str(path) else f"the same file as {first}"
            (on_warning or _warn)(
                f"{path} is {again}; read once (read twice, its repeats would count twice)"
            )
            continue
        seen[key] = path
        out.append(path)
    return out


def _warn(message: str) -> None:
    from capeval.results.errors import warn_passed_over

    warn_passed_over(message, stacklevel=4)
