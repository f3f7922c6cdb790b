"""DuckDB's engine, without the Python layer DuckDB wraps around it.

`import duckdb` also builds the relational API and reads package metadata:
about 0.1 s of every gate's start-up (half of it) that SQL over files never
uses. The engine module (`_duckdb`) has `connect` and `Error` itself; should a
DuckDB release lay it out differently, the public module is used instead.
"""

from __future__ import annotations

from typing import Any


def engine() -> Any:
    """The module with DuckDB's `connect` and `Error`, the lightest there is."""
    module: Any
    try:
        import _duckdb as module
    except ImportError:
        import duckdb as module
    if not (hasattr(module, "connect") and hasattr(module, "Error")):
        import duckdb as module
    return module


def connect() -> Any:
    """A new in-memory connection."""
    return engine().connect()
