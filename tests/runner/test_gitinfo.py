"""git_info: the workspace's own commit, whatever git location variables capeval inherited."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from capeval.runner.gitinfo import GitInfo, git_info
from tests.casefactory import write_case

IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false"]


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def _repo(path: Path, message: str) -> str:
    """A repository at `path` with one commit holding a.txt; returns the commit."""
    path.mkdir(parents=True, exist_ok=True)
    env = _clean_env()
    (path / "a.txt").write_text(message + "\n")
    for args in (["init", "-q"], ["add", "-A"], [*IDENTITY, "commit", "-q", "-m", message]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=path, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def test_an_inherited_git_dir_is_not_the_workspaces_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = _repo(tmp_path / "other", "other")
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "other" / ".git"))
    assert git_info(plain).commit is None
    own = _repo(tmp_path / "own", "own")
    info = git_info(tmp_path / "own")
    assert (info.commit, info.dirty) == (own, False)
    assert info.commit != other


def test_an_inherited_work_tree_and_index_do_not_decide_dirtiness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = _repo(tmp_path / "own", "own")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()  # against this empty tree, a.txt would be deleted: "dirty"
    monkeypatch.setenv("GIT_WORK_TREE", str(elsewhere))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "no-such-index"))
    assert git_info(tmp_path / "own") == GitInfo(own, False)


def test_a_run_started_from_a_git_hook_records_no_other_repositorys_commit(
    tmp_path: Path,
) -> None:
    """`capeval run` as a hook starts it: GIT_DIR names the hook's repository."""
    _repo(tmp_path / "other", "other")
    ws = tmp_path / "ws"
    write_case(ws, "one", verify="test -f done.txt\n")
    env = {**_clean_env(), "GIT_DIR": str(tmp_path / "other" / ".git")}
    proc = subprocess.run(
        [sys.executable, "-m", "capeval", "run", "--root", str(ws)],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    (rows_file,) = (ws / "evals/capability/results").glob("*.jsonl")
    rows = [json.loads(line) for line in rows_file.read_text().splitlines() if line.strip()]
    assert rows
    assert {(r["gitCommit"], r["gitDirty"]) for r in rows} == {(None, None)}
