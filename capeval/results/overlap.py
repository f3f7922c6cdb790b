"""Files on one side of a comparison that hold the same run, or are the same file.

Passing a run's v3 export beside its JSON Lines stream counts every repeat
twice, and nothing in the verdicts would show it. The gate's fast path reads
no runId column, so this looks only at each file's head: cheap enough for
every gate, and it catches that mistake. (The reference reader counts the
shared repeats exactly: `capeval.results.load.read_many`.)
"""

from __future__ import annotations

import os
import re
import stat
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

_RUN_ID = re.compile(rb'"runId"\s*:\s*"((?:[^"\\]|\\.)*)"')


def head_run_id(path: str | Path) -> str | None:
    """The first run id a result file names, from its first 64 KiB (None: none there).

    A cheap look for the gate's fast path, which reads no runId column.
    """
    with open(path, "rb") as handle:
        found = _RUN_ID.search(handle.read(1 << 16))
    return found.group(1).decode("utf-8", "replace") if found else None


def same_run_warnings(paths: Sequence[str | Path]) -> list[str]:
    """One warning per pair of files whose first rows belong to the same run."""
    first: dict[str, str] = {}
    out = []
    for path in paths:
        run = head_run_id(path)
        if run is None:
            continue
        if run in first:
            out.append(
                f"{path} and {first[run]} both hold run {run}; its repeats are counted "
                "twice: pass one file per run (its .jsonl or its v3 export)"
            )
        else:
            first[run] = str(path)
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
    from capeval.results.errors import ResultFileWarning

    warnings.warn(message, ResultFileWarning, stacklevel=4)
