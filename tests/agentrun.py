"""`capeval run` of a configured agent, as a user runs it: a real process over a workspace.

Adapter tests that go through the whole runner share this: the `[agents.NAME]`
table pointing a CLI (or a wrapper around it) at the scripted model server,
and one `python -m capeval run` whose rows the test then reads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def agent_table(
    name: str,
    agent_type: str,
    command: str | Path,
    *,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> str:
    """An `[agents.NAME]` table of capeval.toml."""
    lines = [
        f"[agents.{name}]",
        f'type = "{agent_type}"',
        f"command = {json.dumps(str(command))}",
    ]
    if args:
        lines.append(f"args = {json.dumps(list(args))}")
    if env:
        lines.append(
            "env = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items()) + " }"
        )
    return "\n".join(lines) + "\n"


def capeval_run(
    root: Path,
    matrix: str,
    rows: Path,
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """`capeval run --root ROOT --matrix MATRIX --jsonl ROWS --quiet` in a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "capeval", "run", "--root", str(root), "--matrix", matrix,
         "--jsonl", str(rows), "--quiet"],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
    )  # fmt: skip
