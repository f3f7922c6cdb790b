"""What Ctrl-C and SIGTERM do to capeval: one exit code and one sentence, whenever they land.

Standard library only: the console script imports this before click, and a
SIGINT can arrive during any import. An interrupted gate must never exit 1,
which is the gate's "regressed". SIGTERM (a CI job cancelled, a `timeout`)
is raised as `Terminated` where the program was, so every `finally` runs:
left to its default action it ended a gate or `validate --graders` at once,
leaving temp copies of result files and repeat workdirs behind.
"""

from __future__ import annotations

import signal
import sys
from typing import NoReturn

# What a shell reports for a program stopped by SIGINT (128 + 2); `capeval.cli` agrees.
EXIT_INTERRUPTED = 130
# And by SIGTERM (128 + 15).
EXIT_TERMINATED = 143


class Terminated(BaseException):
    """SIGTERM arrived; raised in the main thread so cleanup code runs on the way out."""


def _raise_terminated(_signum: int, _frame: object) -> None:
    raise Terminated


def raise_on_sigterm() -> None:
    """Turn SIGTERM into `Terminated` for the rest of this process (`capeval run` has its own)."""
    signal.signal(signal.SIGTERM, _raise_terminated)


def terminated_words(command: str | None) -> str:
    return f"{f'capeval {command}' if command else 'capeval'}: terminated by SIGTERM"


def interrupted_words(command: str | None) -> str:
    """What capeval says when SIGINT stops it, before click is loaded or after."""
    return f"{f'capeval {command}' if command else 'capeval'}: interrupted by SIGINT"


def leave_interrupted(command: str | None) -> NoReturn:
    """Say that SIGINT stopped `command` and exit 130."""
    sys.stderr.write(f"\n{interrupted_words(command)}\n")
    raise SystemExit(EXIT_INTERRUPTED)


def query_interrupted(exc: BaseException) -> bool:
    """Whether `exc` is DuckDB's answer to a Ctrl-C during a query.

    DuckDB takes the SIGINT itself while a query runs and raises
    RuntimeError("Query interrupted") (its InterruptException in some
    releases) instead of KeyboardInterrupt: left alone, a gate stopped
    mid-scan printed a traceback and exited 1, its "regressed".
    """
    for name in ("_duckdb", "duckdb"):
        kind = getattr(sys.modules.get(name), "InterruptException", None)
        if isinstance(kind, type) and isinstance(exc, kind):
            return True
    return isinstance(exc, RuntimeError) and str(exc) == "Query interrupted"
