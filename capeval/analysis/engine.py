"""DuckDB's engine, started in a thread while the rest of capeval imports.

`capeval gate` in CI is a fresh process, and on small files most of its time
is start-up: about 90 ms importing click and capeval's modules, 30 ms
importing DuckDB's engine and 50 ms opening its first connection (DuckDB fills
its catalog of functions then). That connection is built with the GIL
released, so started first (`start`, by `capeval.launch`) it overlaps the
imports: a gate on two 3-row files took 0.204 s instead of 0.256 s (medians
of 10 interleaved runs on the 2-core development VM).

Standard library only at import time: the launcher imports this before click.
"""

from __future__ import annotations

import atexit
import signal
import threading
from typing import Any

_LOCK = threading.Lock()
_started: threading.Thread | None = None
_ready: list[Any] = []  # the early connection, until someone takes it


def engine() -> Any:
    """DuckDB's engine module, without the Python layer DuckDB wraps around it.

    `import duckdb` also builds the relational API and reads package metadata:
    about 0.1 s of every gate's start-up (half of it) that SQL over files never
    uses. The engine (`_duckdb`) has `connect` and `Error` itself; should a
    DuckDB release lay it out differently, the public module is used instead.
    """
    thread = _started
    if thread is not None and thread is not threading.current_thread():
        # Let the early start finish first, as `connect` does: the main thread
        # then waits in Python (where a Ctrl-C is a plain KeyboardInterrupt)
        # rather than inside DuckDB's import, running on the other thread.
        thread.join()
    module: Any
    try:
        import _duckdb as module
    except ImportError:
        import duckdb as module
    if not (hasattr(module, "connect") and hasattr(module, "Error")):
        import duckdb as module
    return module


def _open_early() -> None:
    # Process-directed signals may go to any thread that does not block them.
    # One taken by this thread or DuckDB's (in C++, GIL released) would leave
    # the main thread blocked in a read only its own EINTR ends (`capeval gate
    # --candidate <fifo>` hung on Ctrl-C, now and then, in the test suite).
    # Blocked here and in the threads DuckDB starts from here (they inherit
    # the mask), SIGINT and SIGTERM reach the main thread and its handlers.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        con = engine().connect()
    except Exception:  # `connect()` below tries again, and reports what fails then
        return
    with _LOCK:
        _ready.append(con)


def start() -> None:
    """Begin importing the engine and opening a connection, in the background."""
    global _started
    with _LOCK:
        if _started is not None:
            return
        _started = threading.Thread(target=_open_early, name="capeval-duckdb", daemon=True)
        _started.start()
    # A command that ends early (a usage error) must not exit while the thread
    # is inside DuckDB: a daemon thread cut off at interpreter shutdown may crash
    # the exit, and an exit code is what the gate is run for.
    atexit.register(_started.join)


def running() -> bool:
    """Whether the early start is still at work (importing or connecting)."""
    return _started is not None and _started.is_alive()


def connect() -> Any:
    """An in-memory connection: the one opened early (once), else a new one."""
    thread = _started
    if thread is not None:
        thread.join()
        with _LOCK:
            if _ready:
                return _ready.pop()
    return engine().connect()
