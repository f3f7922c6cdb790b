"""Cleanup under odd fixtures and hostile children: nothing is left in `$TMPDIR`.

Permissions do not bind root, and these tests often run as root, so the
removal itself runs in a forked child that drops to an unprivileged user:
what a normal user's capeval would meet.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from capeval.proc import reaper

NOBODY = 65534


@pytest.fixture
def user_dir(tmp_path: Path) -> Iterator[Path]:
    """A folder the unprivileged user can reach (pytest's tmp_path is root's own 0700)."""
    if os.geteuid() != 0:
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="capeval-test-cleanup-"))
    os.chmod(path, 0o755)
    os.chown(path, NOBODY, NOBODY)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)  # as root: modes do not matter


def _as_a_user(tree: Path, action: Callable[[], None]) -> None:
    """Run `action` as an unprivileged owner of `tree` (as ourselves when not root)."""
    if os.geteuid() != 0:
        action()
        return
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
            os.lchown(name, NOBODY, NOBODY)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        code = 1
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            action()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def _read_only_tree(base: Path) -> Path:
    tree = base / "scratch"
    locked = tree / "work" / "ro"
    (locked / "deeper").mkdir(parents=True)
    (locked / "deeper" / "f.txt").write_text("x")
    (locked / "file.txt").write_text("x")
    (tree / "work" / "closed").mkdir()
    (tree / "work" / "closed" / "g.txt").write_text("x")
    os.chmod(locked / "file.txt", 0o444)
    os.chmod(locked / "deeper", 0o555)
    os.chmod(locked, 0o555)
    os.chmod(tree / "work" / "closed", 0)  # cannot even be listed
    return tree


def test_remove_tree_removes_read_only_folders(user_dir: Path) -> None:
    tree = _read_only_tree(user_dir)
    _as_a_user(tree, lambda: reaper.remove_tree(tree))
    assert not tree.exists()


def test_remove_tree_follows_no_symlink_and_leaves_the_outside_alone(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("x")
    os.chmod(outside, 0o555)
    tree = tmp_path / "tree"
    tree.mkdir()
    os.symlink(outside, tree / "link")
    reaper.remove_tree(tree)
    assert not tree.exists()
    assert (outside / "keep.txt").is_file()
    assert stat.S_IMODE(outside.stat().st_mode) == 0o555


def test_remove_tree_of_a_missing_path_is_quiet(tmp_path: Path) -> None:
    reaper.remove_tree(tmp_path / "gone")


@pytest.mark.parametrize("via", ["temp_dir", "workdir_cache"])
def test_run_temp_dirs_with_read_only_folders_are_removed(user_dir: Path, via: str) -> None:
    from capeval.runner.workdir import WorkdirCache

    parent = user_dir

    def make_and_leave() -> None:
        if via == "temp_dir":
            with reaper.temp_dir("capeval-run-", parent) as run_tmp:
                _read_only_tree(run_tmp)
        else:
            cache = WorkdirCache(parent)
            _read_only_tree(cache._dir)
            cache.close()

    _as_a_user(parent, make_and_leave)
    assert list(parent.iterdir()) == []


def _fixture_case(root: Path) -> tuple[Path, object]:
    from tests.runner.test_workdir import FakeCase

    fx = root / "evals/capability/fixtures/demo"
    (fx / "src").mkdir(parents=True)
    (fx / "src/app.py").write_text("print('hi')\n")
    return fx, FakeCase("demo", "evals/capability/fixtures/demo")


def test_a_read_only_fixture_gives_a_writable_committed_workdir(user_dir: Path) -> None:
    from capeval.runner.workdir import WorkdirCache, prepare_workdir

    fx, case = _fixture_case(user_dir)
    os.chmod(fx / "src", 0o555)
    os.chmod(fx, 0o555)  # a read-only checkout

    def copy_and_edit() -> None:
        with WorkdirCache(user_dir) as cache:
            work = prepare_workdir(user_dir, case, dest=user_dir / "work", cache=cache)  # type: ignore[arg-type]
            assert (work / ".git").is_dir()
            (work / "new.txt").write_text("agent output")
            (work / "src" / "new.py").write_text("x = 1\n")
        reaper.remove_tree(user_dir / "work")

    _as_a_user(user_dir, copy_and_edit)


def test_a_template_that_failed_half_made_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from capeval.runner import workdir
    from capeval.runner.workdir import WorkdirCache, WorkdirError, prepare_workdir

    _, case = _fixture_case(tmp_path)
    real_commit = workdir._commit
    calls: list[Path] = []

    def full_disk_once(dest: Path, case: object) -> None:
        calls.append(dest)
        if len(calls) == 1:
            raise WorkdirError("git commit failed: No space left on device")
        real_commit(dest, case)  # type: ignore[arg-type]

    monkeypatch.setattr(workdir, "_commit", full_disk_once)
    with WorkdirCache(tmp_path) as cache:
        with pytest.raises(WorkdirError, match="No space"):
            prepare_workdir(tmp_path, case, dest=tmp_path / "a", cache=cache)  # type: ignore[arg-type]
        assert not calls[0].exists()  # the half-made template is gone
        # The disk has room again: the next repeat gets a workdir, not "File exists".
        b = prepare_workdir(tmp_path, case, dest=tmp_path / "b", cache=cache)  # type: ignore[arg-type]
        assert (b / "src/app.py").is_file() and (b / ".git").is_dir()


def test_a_failed_copy_is_one_line_naming_the_fixture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from capeval.runner.workdir import prepare_workdir

    _, case = _fixture_case(tmp_path)

    def full_disk(src: Path, dst: Path, **_: object) -> None:
        Path(dst).mkdir()
        why = "[Errno 28] No space left on device"
        raise shutil.Error([(f"{src}/a", f"{dst}/a", why), (f"{src}/b", f"{dst}/b", why)])

    monkeypatch.setattr(shutil, "copytree", full_disk)
    with pytest.raises(OSError) as caught:
        prepare_workdir(tmp_path, case, dest=tmp_path / "w")  # type: ignore[arg-type]
    message = str(caught.value)
    assert message.startswith("copying fixture evals/capability/fixtures/demo to the workdir")
    assert "No space left on device (and 1 more)" in message and "[(" not in message
    assert not (tmp_path / "w").exists()


def _refuse_mkdtemp(monkeypatch: pytest.MonkeyPatch, prefix: str) -> None:
    """`tempfile.mkdtemp` fails as on a full disk for temp dirs named `prefix`..."""
    import errno

    real = tempfile.mkdtemp

    def full(*args: object, **kwargs: object) -> str:
        if str(kwargs.get("prefix", "")).startswith(prefix):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tempfile, "mkdtemp", full)


def test_a_full_tmpdir_at_the_start_is_a_clear_error_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from capeval.runner.options import RunError, RunOptions
    from capeval.runner.run import execute
    from tests.runhelpers import write_case

    write_case(tmp_path, "alpha")
    _refuse_mkdtemp(monkeypatch, "capeval-run-")
    options = RunOptions(root=tmp_path, jsonl=tmp_path / "r.jsonl", handle_signals=False)
    with pytest.raises(RunError, match=r"run's temp folder .*No space left on device.*TMPDIR"):
        execute(options)


def test_a_repeat_whose_temp_folder_cannot_be_made_is_a_setup_failure_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from capeval.runner.options import RunOptions
    from capeval.runner.run import execute
    from tests.runhelpers import write_case

    write_case(tmp_path, "alpha")
    _refuse_mkdtemp(monkeypatch, "capeval-alpha-")
    options = RunOptions(root=tmp_path, jsonl=tmp_path / "r.jsonl", handle_signals=False)
    outcome = execute(options)
    [row] = outcome.rows
    assert row["passed"] is False and row["status"] == "failed"
    assert "No space left on device" in row["error"]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_ctrl_c_while_waiting_for_a_child_kills_its_group(tmp_path: Path) -> None:
    # `capeval validate --graders` waits for the oracle and the grader in the
    # main thread: Ctrl-C there left both running (their own session never
    # saw the SIGINT) after capeval had exited 130.
    import signal
    import threading

    from capeval.proc import process
    from tests.runhelpers import alive, eventually

    assert threading.current_thread() is threading.main_thread()

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            process.run_process(
                ["bash", "-c", "sleep 60 & echo $! > pid; wait"], cwd=tmp_path, timeout_s=30
            )
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    child = int((tmp_path / "pid").read_text())
    try:
        assert eventually(lambda: not alive(child))
        assert process.live_groups() == []
    finally:
        if alive(child):
            with contextlib.suppress(ProcessLookupError):  # it may die meanwhile
                os.kill(child, signal.SIGKILL)
