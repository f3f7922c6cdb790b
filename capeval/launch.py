"""The console script's entry: standard library only until it knows the command.

A command whose first real work is a scan of result files (`gate`, `compare`,
`report`) starts it here, before click and capeval's own modules import, so
the two overlap: the native scan itself when the command line names JSON
Lines files plainly (`capeval.analysis.prefetch`), else DuckDB's engine
(`capeval.analysis.engine` says how much that saves).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn

# Commands that read result files as soon as their options parse.
EARLY_DUCKDB = frozenset({"gate", "compare", "report"})
# What a shell reports for a program stopped by SIGINT (128 + 2); `capeval.cli` agrees.
EXIT_INTERRUPTED = 130


def interrupted_words(command: str | None) -> str:
    """What capeval says when SIGINT stops it, before click is loaded or after."""
    return f"{f'capeval {command}' if command else 'capeval'}: interrupted by SIGINT"


def leave_interrupted(command: str | None) -> NoReturn:
    """Say that SIGINT stopped `command` and exit 130, never hanging on the way out.

    A Ctrl-C that lands inside an import can leave one of Python's import
    locks held; a background start (DuckDB's, or a guessed scan) importing
    the same module then waits forever, and so would the normal exit, which
    joins it (a gate hung in 1 of about 150 interrupted). With one still at
    work, output is flushed and the process ends at once: these commands
    hold no file open for writing.
    """
    sys.stderr.write(f"\n{interrupted_words(command)}\n")
    busy = False
    engine = sys.modules.get("capeval.analysis.engine")
    prefetch = sys.modules.get("capeval.analysis.prefetch")
    for module in (engine, prefetch):
        busy = busy or (module is not None and module.running())
    if busy:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(EXIT_INTERRUPTED)
    raise SystemExit(EXIT_INTERRUPTED)


def entry() -> None:
    """`capeval`: start DuckDB early when the command will want it, then run the CLI."""
    try:
        if len(sys.argv) > 1 and sys.argv[1] in EARLY_DUCKDB:
            from capeval.analysis import engine, prefetch

            if not prefetch.start(sys.argv[1:]):
                engine.start()
        from capeval.cli import entry as cli_entry

        # Ctrl-C before click is there to catch it (its entry still imports
        # before it runs): the same words and code as after, never a
        # traceback and exit 1 (the gate's "regressed").
        cli_entry()
    except KeyboardInterrupt:
        leave_interrupted(None)
