"""The console script's entry: standard library only until it knows the command.

A command whose first real work is a scan of result files (`gate`, `compare`,
`report`) starts it here, before click and capeval's own modules import, so
the two overlap: the native scan itself when the command line names JSON
Lines files plainly (`capeval.analysis.prefetch`), else DuckDB's engine
(`capeval.analysis.engine` says how much that saves).
"""

from __future__ import annotations

import sys

from capeval.interrupt import leave_interrupted

# Commands that read result files as soon as their options parse.
EARLY_DUCKDB = frozenset({"gate", "compare", "report"})


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
