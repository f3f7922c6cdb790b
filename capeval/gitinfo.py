"""Which code produced a run: the workspace's git commit and whether it was dirty.

Recorded in every row so a result can be traced to the agent build and cases
that made it. Never fatal: outside a repository, or without git, both are None.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GitInfo:
    commit: str | None
    dirty: bool | None


def git_info(path: Path) -> GitInfo:
    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(
                ["git", *args],
                cwd=path,
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return proc.stdout if proc.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return GitInfo(None, None)
    status = git("status", "--porcelain", "--untracked-files=normal")
    return GitInfo(commit.strip(), None if status is None else bool(status.strip()))
