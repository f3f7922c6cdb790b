"""A fresh, committed git workdir per repeat, copied from the case's fixture.

Agents expect a repository (`git diff`, `git status`, `HEAD`), and a grader
may compare against the initial commit, so the copy is committed once. The
commit must be identical on every machine and never run user hooks or ask
for a signing key, hence the fixed identity, dates and config isolation.
Symlinks are copied as links; one that points outside the fixture would let
a repeat read or write files beyond its own copy, so it is refused.
A special file (a FIFO, a socket, a device) cannot be copied and is refused too.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from capeval.proc.process import GIT_LOCATION_VARS
from capeval.proc.reaper import remove_tree
from capeval.workspace import fixture_entry_problem

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "capeval",
    "GIT_AUTHOR_EMAIL": "capeval@localhost",
    "GIT_COMMITTER_NAME": "capeval",
    "GIT_COMMITTER_EMAIL": "capeval@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}
INITIAL_BRANCH = "main"
INITIAL_COMMIT_MESSAGE = "capeval fixture"


def git_flags(repo: Path) -> tuple[str, ...]:
    """The `-c` settings of the runner's git calls in the repository at `repo`.

    No user or system configuration reaches them: hooks, ignore rules and
    the global config point at files inside the repository's own `.git`
    that are never created, which git reads as empty. Not /dev/null: a
    machine whose /dev/null was replaced by a regular file (a root process
    renaming over it) would feed that file to every commit.
    """
    nothing = repo / ".git" / "capeval-none"
    return (
        "-c",
        "commit.gpgsign=false",
        "-c",
        f"core.hooksPath={nothing}",
        "-c",
        f"init.defaultBranch={INITIAL_BRANCH}",
        "-c",
        "core.autocrlf=false",
        # git reads $XDG_CONFIG_HOME/git/ignore even without a global config: a
        # user's ignore rules would leave fixture files out of the commit.
        "-c",
        f"core.excludesFile={nothing}",
    )


class FixtureLike(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def fixture(self) -> str: ...


class WorkdirError(ValueError):
    """A fixture that cannot be copied safely; the message names the path and the fix."""


def own_repo_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this process's environment) without `GIT_LOCATION_VARS`:
    git run in a workdir then finds the workdir's own repository."""
    env = os.environ if base is None else base
    return {k: v for k, v in env.items() if k not in GIT_LOCATION_VARS}


def git_env(repo: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for the runner's own git calls: no user or system config, fixed identity."""
    env = own_repo_env(base)
    env.update(GIT_IDENTITY)
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["GIT_CONFIG_GLOBAL"] = str(repo / ".git" / "capeval-none")
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


# Set for the grader's git through the environment, which wins over the
# workdir's own .git/config: no hook and no fsmonitor command of the agent's
# runs when a grader calls git.
GRADER_GIT_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", os.devnull),
    ("core.fsmonitor", "false"),
    ("safe.directory", "*"),
)


def grader_git_env(workdir: Path) -> dict[str, str]:
    """git's configuration for a grader: capeval's, not the user's nor (for what runs
    commands) the workdir's; and no repository above the workdir is ever found."""
    env = {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CEILING_DIRECTORIES": str(workdir.parent),
        "GIT_CONFIG_COUNT": str(len(GRADER_GIT_CONFIG)),
        **{k: v for k, v in GIT_IDENTITY.items() if not k.endswith("_DATE")},
    }
    for i, (key, value) in enumerate(GRADER_GIT_CONFIG):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def saved_git_config(workdir: Path) -> bytes | None:
    """The workdir's .git/config as capeval committed it, before any agent ran."""
    try:
        return (workdir / ".git" / "config").read_bytes()
    except OSError:
        return None


def restore_git_config(workdir: Path, saved: bytes | None) -> None:
    """Put capeval's .git/config back (filters, textconv, aliases, includes of the
    agent's run commands when the grader calls git). A `.git` that is no longer a
    folder is left as it is: the grader's git then finds what the agent left."""
    git = workdir / ".git"
    if saved is None or git.is_symlink() or not git.is_dir():
        return
    config = git / "config"
    try:
        if config.is_dir() and not config.is_symlink():
            shutil.rmtree(config)
        elif config.is_symlink() or config.exists():
            config.unlink()
        fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(saved)
    except OSError:
        pass


def fixture_path(root: Path, case: FixtureLike) -> Path:
    """The case's fixture directory, refusing one that escapes the workspace root."""
    root = root.resolve()
    path = (root / case.fixture).resolve()
    if not path.is_relative_to(root):
        raise WorkdirError(
            f"case {case.id}: fixture: {case.fixture!r} resolves outside the workspace root; "
            "use a directory under the workspace (e.g. evals/capability/fixtures/<name>)"
        )
    if not path.is_dir():
        raise WorkdirError(
            f"case {case.id}: fixture: {case.fixture!r} is not a directory; "
            "create it or fix the path (it is relative to the workspace root)"
        )
    return path


def check_symlinks(fixture: Path) -> None:
    """Refuse absolute symlinks, links that resolve outside the fixture and
    special files (FIFOs, sockets, devices), which cannot be copied."""
    problem = fixture_entry_problem(fixture)
    if problem:
        raise WorkdirError(problem)


class WorkdirCache:
    """Committed copies of fixtures, made once per run and copied per repeat.

    `git init/add/commit` costs tens of milliseconds per repeat, more than
    the rest of the runner together; because the commit is deterministic
    (fixed identity and dates), copying a committed template, `.git`
    included, gives the same repository. One cache per run, so a fixture
    edited between runs is picked up; `close()` removes the templates.
    """

    def __init__(self, parent: Path | None = None) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="capeval-templates-", dir=parent))
        self._lock = threading.Lock()
        self._keys: dict[Path, threading.Lock] = {}
        self._templates: dict[Path, Path] = {}

    def template(self, root: Path, case: FixtureLike) -> Path:
        src = fixture_path(root, case)
        with self._lock:
            key_lock = self._keys.setdefault(src, threading.Lock())
        with key_lock:
            if src not in self._templates:
                dest = self._dir / f"{len(self._templates)}-{case.id}"
                prepare_workdir(root, case, dest=dest)
                self._templates[src] = dest
            return self._templates[src]

    def close(self) -> None:
        remove_tree(self._dir)

    def __enter__(self) -> WorkdirCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def prepare_workdir(
    root: Path, case: FixtureLike, *, dest: Path | None = None, cache: WorkdirCache | None = None
) -> Path:
    """Copy the case's fixture to `dest` (default: a new temp dir) and commit it once.

    Returns the workdir. The caller removes it when the repeat is over.
    """
    if dest is None:
        dest = Path(tempfile.mkdtemp(prefix=f"capeval-{case.id}-"))
        dest.rmdir()
    existed = os.path.lexists(dest)
    try:
        if cache is not None:
            # The template's folders were made writable when it was copied.
            _copy(cache.template(root, case), dest, case)
            return dest
        src = fixture_path(root, case)
        try:
            check_symlinks(src)
        except WorkdirError as exc:
            raise WorkdirError(f"case {case.id}: fixture {case.fixture}/{exc}") from None
        _copy(src, dest, case, ignore=shutil.ignore_patterns(".git"))
        _writable_folders(dest)
        _commit(dest, case)
    except BaseException:
        # A half-made copy must not stay: a cached template would make every
        # later repeat of the case fail with "File exists", even once the
        # disk that was full has room again.
        if not existed:
            remove_tree(dest)
        raise
    return dest


def _copy(src: Path, dest: Path, case: FixtureLike, ignore: Any = None) -> None:
    """copytree, with its list of failures said as one line (a full disk)."""
    try:
        shutil.copytree(src, dest, symlinks=True, ignore=ignore)
    except shutil.Error as exc:
        failures = exc.args[0] if exc.args and isinstance(exc.args[0], list) else []
        if not failures:
            raise
        _, failed, why = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        raise OSError(
            f"copying fixture {case.fixture} to the workdir failed at {failed}: {why}{more}"
        ) from None


def _writable_folders(dest: Path) -> None:
    """Give every folder of a fresh copy its owner's rwx.

    A read-only fixture folder (a read-only checkout, a Nix store) kept its
    mode: `git init` then failed in the copy, and an agent could not create a
    file where the task needs one, but only when not run as root, which
    ignores modes. A git checkout of the same commit gives writable folders.
    """
    for dirpath, _dirnames, _files in os.walk(dest):
        mode = os.lstat(dirpath).st_mode
        if mode & 0o700 != 0o700:
            os.chmod(dirpath, stat.S_IMODE(mode) | 0o700)


def _commit(dest: Path, case: FixtureLike) -> None:
    env = git_env(dest)
    for args in (
        ("init", "-q", "--template="),
        # -f: the fixture's own .gitignore must not leave its files out of the
        # baseline, or the agent's edits to them never show in `git diff`.
        ("add", "-A", "-f"),
        ("commit", "-q", "--allow-empty", "--no-verify", "-m", INITIAL_COMMIT_MESSAGE),
    ):
        proc = subprocess.run(
            ["git", *git_flags(dest), *args],
            cwd=dest,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise WorkdirError(
                f"case {case.id}: git {args[0]} failed in the workdir copy of {case.fixture}: "
                f"{proc.stderr.strip()}"
            )
