"""A run-summary file (the corbits hook's JSON, or capeval's own `summary.json`), read.

The parsing is the core's (`capeval.core.runsummary`); this is the file: a
regular file or a pipe, never a device or a FIFO nobody writes into.
"""

from __future__ import annotations

from pathlib import Path

from capeval.core.runsummary import RunSummaryError, summary_from_text
from capeval.core.turns import RunSummary
from capeval.results.inputs import InputRefused, read_input


def read_summary(path: str | Path) -> RunSummary:
    """Read a run-summary JSON file; every failure is a `RunSummaryError` naming it."""
    try:
        data = read_input(path)
    except InputRefused as exc:
        raise RunSummaryError(str(path), "(file)", exc.reason) from exc
    except OSError as exc:
        raise RunSummaryError(str(path), "(file)", f"cannot read: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunSummaryError(str(path), "(file)", f"not UTF-8 text: {exc.reason}") from exc
    return summary_from_text(text, source=str(path))
