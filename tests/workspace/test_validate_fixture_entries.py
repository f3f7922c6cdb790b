"""Special files (FIFOs, sockets) in a fixture: reported by validate, never a traceback."""

from __future__ import annotations

import errno
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from capeval.core.case import Case, case_from_dict
from capeval.runner.graders import check_case
from capeval.runner.validate import validate_workspace
from capeval.runner.workdir import WorkdirError, prepare_workdir
from tests.casefactory import CASES, FIXTURES, case_fields, write_case


def _fifo_case(root: Path, case_id: str = "fifo") -> Path:
    write_case(root, case_id, verify="test -f done.txt\n", fixture={"README.md": "x\n"})
    os.mkfifo(root / FIXTURES / case_id / "p")
    return root / FIXTURES / case_id / "p"


def _validate(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "capeval", "validate", "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("graders", [(), ("--graders", "--case", "fifo")])
def test_a_named_pipe_in_a_fixture_is_a_problem_naming_it_and_the_fix(
    tmp_path: Path, graders: tuple[str, ...]
) -> None:
    _fifo_case(tmp_path)
    proc = _validate(tmp_path, *graders)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out
    assert f'{CASES}/fifo/case.json: fixture: "{FIXTURES}/fifo": p: is a named pipe' in out
    assert "remove it from the fixture" in out


def test_a_socket_deep_in_a_fixture_is_reported(tmp_path: Path) -> None:
    write_case(tmp_path, "sock")
    sub = tmp_path / FIXTURES / "sock" / "run"
    sub.mkdir()
    # A short path of its own: a socket path is limited to about 100 bytes.
    short = Path(tempfile.gettempdir()) / f"capeval-sock-{os.getpid()}"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(short))
        try:
            os.rename(short, sub / "agent.sock")
        finally:
            short.unlink(missing_ok=True)
    result = validate_workspace(tmp_path)
    assert [str(p) for p in result.problems] == [
        f'{CASES}/sock/case.json: fixture: "{FIXTURES}/sock": run/agent.sock: is a socket; '
        "a workdir copy can hold only files, folders and symlinks: remove it from the fixture "
        "(if the task needs it, have the task or the grader create it)"
    ]


def test_prepare_workdir_refuses_a_named_pipe_by_name(tmp_path: Path) -> None:
    _fifo_case(tmp_path)
    case = case_from_dict(
        case_fields("fifo"), dir=tmp_path / CASES / "fifo", file=tmp_path / CASES / "fifo/case.json"
    )
    with pytest.raises(WorkdirError, match=f"fixture {FIXTURES}/fifo/p: is a named pipe"):
        prepare_workdir(tmp_path, case, dest=tmp_path / "wd")
    assert not (tmp_path / "wd").exists()


def _case(root: Path, case_id: str) -> Case:
    return case_from_dict(
        case_fields(case_id), dir=root / CASES / case_id, file=root / CASES / case_id / "case.json"
    )


def test_the_grader_check_reports_a_named_pipe_instead_of_raising(tmp_path: Path) -> None:
    _fifo_case(tmp_path)
    problems = check_case(tmp_path, _case(tmp_path, "fifo"))
    assert [(p.field, "p: is a named pipe" in p.message) for p in problems] == [("fixture", True)]


def test_the_grader_check_reports_a_fixture_it_cannot_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk (or an unreadable file) while copying is a problem, not a traceback."""
    write_case(tmp_path, "full", fixture={"a.txt": "a\n"})

    def disk_full(src: str, dst: str, **_: object) -> None:
        # What copytree raises when a file cannot be written: its list of failures.
        why = str(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
        raise shutil.Error([(f"{src}/a.txt", f"{dst}/a.txt", why)])

    monkeypatch.setattr(shutil, "copytree", disk_full)
    problems = check_case(tmp_path, _case(tmp_path, "full"))
    assert len(problems) == 1
    assert problems[0].field == "fixture"
    assert "the workdir could not be made" in problems[0].message
    assert os.strerror(errno.ENOSPC) in problems[0].message


def test_a_named_pipe_inside_the_fixtures_git_folder_is_not_copied_so_not_reported(
    tmp_path: Path,
) -> None:
    write_case(tmp_path, "withgit")
    (tmp_path / FIXTURES / "withgit" / ".git").mkdir()
    os.mkfifo(tmp_path / FIXTURES / "withgit" / ".git" / "p")
    assert validate_workspace(tmp_path).problems == []
    case = _case(tmp_path, "withgit")
    prepare_workdir(tmp_path, case, dest=tmp_path / "wd")
    assert not (tmp_path / "wd" / ".git" / "p").exists()
