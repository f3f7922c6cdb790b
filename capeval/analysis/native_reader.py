"""The compiled JSON Lines reader, when this install has it.

hatch_build.py compiles capeval/analysis/native/jsonl_cells.cpp on install
when a compiler is there; a pure-Python install reads result files through
DuckDB instead, with the same verdicts.
"""

from __future__ import annotations

import os
from types import ModuleType


def native_reader() -> ModuleType | None:
    """The module, or None when it was not built or CAPEVAL_NATIVE=0 turns it off.

    CAPEVAL_NATIVE=0 is there to compare with the DuckDB reader or to rule
    the native one out when something looks wrong.
    """
    if os.environ.get("CAPEVAL_NATIVE") == "0":
        return None
    try:
        from capeval.analysis import _jsonl_cells  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _jsonl_cells
