"""Which code produced a run: the workspace's git commit and whether it was dirty.

Recorded in every row so a result can be traced to the agent build and cases
that made it. Never fatal: outside a repository, or without git, both are None.
Git's location variables (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, ...) are not
passed on: a git hook or CI job running capeval exports them, and every row
then carried that other repository's commit, not the workspace's.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from capeval.proc.process import GIT_LOCATION_VARS


@dataclass(frozen=True)
class GitInfo:
    commit: str | None
    dirty: bool | None


def git_info(path: Path) -> GitInfo:
    env = {k: v for k, v in os.environ.items() if k not in GIT_LOCATION_VARS}

    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(
                ["git", *args],
                cwd=path,
                env=env,
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
