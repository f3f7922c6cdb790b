"""Files on one side of a comparison that hold the same run.

Passing a run's v3 export beside its JSON Lines stream counts every repeat
twice, and nothing in the verdicts would show it. The gate's fast path reads
no runId column, so this looks only at each file's head: cheap enough for
every gate, and it catches that mistake. (The reference reader counts the
shared repeats exactly: `capeval.results.load.read_many`.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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
