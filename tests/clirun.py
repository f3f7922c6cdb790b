"""`capeval` as users start it: a fresh process, so import-time and exit-code behavior is real."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def capeval(
    *args: str | Path, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run `python -m capeval ARGS` (the console script's own entry) and capture its text output (never raises on exit code)."""
    return subprocess.run(
        [sys.executable, "-m", "capeval", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
