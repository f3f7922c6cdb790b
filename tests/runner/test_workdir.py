"""prepare_workdir: a deterministic committed copy; unsafe fixtures are refused."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from capeval.runner.workdir import WorkdirCache, WorkdirError, prepare_workdir
from tests.casefactory import FIXTURES, write_case


@dataclass
class FakeCase:
    """Only the two fields prepare_workdir reads; the real Case has many more."""

    id: str
    fixture: str


def _fixture(root: Path) -> Path:
    fx = root / "evals/capability/fixtures/demo"
    (fx / "src").mkdir(parents=True)
    (fx / "src/app.py").write_text("print('hi')\n")
    (fx / "README.md").write_text("demo\n")
    return fx


def _fixture_case(root: Path, files: dict[str, str] | None = None, name: str = "demo") -> FakeCase:
    """A fixture folder holding `files` (a README by default), and a case naming it."""
    fx = root / "evals/capability/fixtures" / name
    fx.mkdir(parents=True)
    for rel, text in ({"README.md": "demo\n"} if files is None else files).items():
        (fx / rel).write_text(text)
    return FakeCase(name, f"evals/capability/fixtures/{name}")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_copy_is_committed_with_a_fixed_identity(tmp_path: Path) -> None:
    _fixture(tmp_path)
    case = FakeCase("demo", "evals/capability/fixtures/demo")
    a = prepare_workdir(tmp_path, case, dest=tmp_path / "a")
    b = prepare_workdir(tmp_path, case, dest=tmp_path / "b")
    assert (a / "src/app.py").read_text() == "print('hi')\n"
    assert _git(a, "status", "--porcelain") == ""
    assert (
        _git(a, "log", "--format=%an <%ae> %cn %ad")
        .strip()
        .startswith("capeval <capeval@localhost> capeval")
    )
    # Deterministic: the same fixture gives the same commit id everywhere.
    assert _git(a, "rev-parse", "HEAD") == _git(b, "rev-parse", "HEAD")


def test_default_dest_is_a_fresh_temp_dir(tmp_path: Path) -> None:
    _fixture(tmp_path)
    case = FakeCase("demo", "evals/capability/fixtures/demo")
    a = prepare_workdir(tmp_path, case)
    b = prepare_workdir(tmp_path, case)
    try:
        assert a != b and not a.is_relative_to(tmp_path)
    finally:
        import shutil

        shutil.rmtree(a)
        shutil.rmtree(b)


def test_user_hooks_and_signing_are_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fixture(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[commit]\n\tgpgsign = true\n[user]\n\tsigningkey = NOPE\n")
    monkeypatch.setenv("HOME", str(home))
    wd = prepare_workdir(
        tmp_path, FakeCase("demo", "evals/capability/fixtures/demo"), dest=tmp_path / "w"
    )
    assert _git(wd, "rev-parse", "HEAD").strip()


def test_internal_symlink_is_copied_as_a_link(tmp_path: Path) -> None:
    fx = _fixture(tmp_path)
    os.symlink("src/app.py", fx / "link.py")
    wd = prepare_workdir(
        tmp_path, FakeCase("demo", "evals/capability/fixtures/demo"), dest=tmp_path / "w"
    )
    assert (wd / "link.py").is_symlink() and os.readlink(wd / "link.py") == "src/app.py"


@pytest.mark.parametrize("target", ["../../../../etc/passwd", "/etc/passwd", "../../sibling/x"])
def test_symlink_leaving_the_fixture_is_refused(tmp_path: Path, target: str) -> None:
    fx = _fixture(tmp_path)
    os.symlink(target, fx / "src/bad")
    with pytest.raises(WorkdirError, match=r"src/bad: symlink target"):
        prepare_workdir(
            tmp_path, FakeCase("demo", "evals/capability/fixtures/demo"), dest=tmp_path / "w"
        )
    assert not (tmp_path / "w").exists()


def test_fixture_outside_the_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    with pytest.raises(
        WorkdirError, match=r"fixture: '\.\./outside' resolves outside the workspace root"
    ):
        prepare_workdir(root, FakeCase("demo", "../outside"), dest=tmp_path / "w")


def test_missing_fixture_names_the_case_and_field(tmp_path: Path) -> None:
    with pytest.raises(WorkdirError, match="case demo: fixture: 'nope' is not a directory"):
        prepare_workdir(tmp_path, FakeCase("demo", "nope"), dest=tmp_path / "w")


def test_cached_template_gives_the_same_repository(tmp_path: Path) -> None:
    from capeval.runner.workdir import WorkdirCache

    fx = _fixture(tmp_path)
    os.symlink("src/app.py", fx / "link.py")
    case = FakeCase("demo", "evals/capability/fixtures/demo")
    fresh = prepare_workdir(tmp_path, case, dest=tmp_path / "fresh")
    with WorkdirCache(tmp_path) as cache:
        a = prepare_workdir(tmp_path, case, dest=tmp_path / "a", cache=cache)
        (a / "src/app.py").write_text("changed\n")  # one repeat's edits stay in its copy
        b = prepare_workdir(tmp_path, case, dest=tmp_path / "b", cache=cache)
        assert _git(b, "rev-parse", "HEAD") == _git(fresh, "rev-parse", "HEAD")
        assert _git(b, "status", "--porcelain") == ""
        assert _git(a, "status", "--porcelain").strip() == "M src/app.py"
        assert os.readlink(b / "link.py") == "src/app.py"
        templates = list(cache._dir.iterdir())
        assert len(templates) == 1  # built once per fixture
    assert not templates[0].exists()  # removed with the cache


def test_cached_template_still_refuses_unsafe_symlinks(tmp_path: Path) -> None:
    from capeval.runner.workdir import WorkdirCache

    fx = _fixture(tmp_path)
    os.symlink("/etc/passwd", fx / "bad")
    with WorkdirCache(tmp_path) as cache, pytest.raises(WorkdirError, match="absolute"):
        prepare_workdir(tmp_path, FakeCase("demo", "evals/capability/fixtures/demo"), cache=cache)


def test_a_users_global_ignore_file_leaves_no_fixture_file_out_of_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # git reads $XDG_CONFIG_HOME/git/ignore even with no global config: a user
    # who ignores *.log would get a commit without the fixture's log files
    # (another commit id, and a grader's `git diff` would not see them change).
    fx = _fixture(tmp_path)
    (fx / "run.log").write_text("fixture data\n")
    xdg = tmp_path / "xdg"
    (xdg / "git").mkdir(parents=True)
    (xdg / "git/ignore").write_text("*.log\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    wd = prepare_workdir(
        tmp_path, FakeCase("demo", "evals/capability/fixtures/demo"), dest=tmp_path / "w"
    )
    assert "run.log" in _git(wd, "ls-files").split()


def test_files_the_fixtures_own_gitignore_names_are_in_the_baseline_commit(
    tmp_path: Path,
) -> None:
    write_case(tmp_path, "wordfreq", fixture={".gitignore": "*.py\n", "wordfreq.py": "print(1)\n"})

    class _Case:
        id = "wordfreq"
        fixture = f"{FIXTURES}/wordfreq"

    wd = prepare_workdir(tmp_path, _Case(), dest=tmp_path / "w")
    assert "wordfreq.py" in _git(wd, "ls-files").split()
    (wd / "wordfreq.py").write_text("print(2)\n")
    assert "wordfreq.py" in _git(wd, "status", "--porcelain")
    assert "+print(2)" in _git(wd, "diff")


def test_a_users_global_config_does_not_change_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fixture(tmp_path)
    case = FakeCase("demo", "evals/capability/fixtures/demo")
    plain = prepare_workdir(tmp_path, case, dest=tmp_path / "plain")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[i18n]\n\tcommitEncoding = ISO-8859-1\n")
    monkeypatch.setenv("HOME", str(home))
    configured = prepare_workdir(tmp_path, case, dest=tmp_path / "configured")
    assert _git(configured, "rev-parse", "HEAD") == _git(plain, "rev-parse", "HEAD")


def test_a_fixture_holding_a_git_folder_still_gives_one_commit(tmp_path: Path) -> None:
    fx = _fixture(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=fx, check=True)
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@x",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "fixture history",
        ],
        cwd=fx,
        check=True,
    )
    wd = prepare_workdir(
        tmp_path, FakeCase("demo", "evals/capability/fixtures/demo"), dest=tmp_path / "w"
    )
    assert _git(wd, "log", "--format=%s").split("\n") == ["capeval fixture"]


def test_a_failed_commit_leaves_no_half_made_workdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import capeval.runner.workdir as workdir

    def failing(dest: Path, case: object) -> None:
        raise WorkdirError("git commit failed")

    monkeypatch.setattr(workdir, "_commit", failing)
    _fixture(tmp_path)
    with pytest.raises(WorkdirError):
        prepare_workdir(
            tmp_path, FakeCase("demo", "evals/capability/fixtures/demo"), dest=tmp_path / "w"
        )
    assert not (tmp_path / "w").exists()


def test_the_runners_git_never_reads_dev_null(tmp_path: Path) -> None:
    # A /dev/null replaced by a regular file (a root process renaming over it)
    # must not reach the commit of every repeat: git's global config, ignore
    # rules and hooks point into the repository instead, at files never made.
    from capeval.runner.workdir import git_env, git_flags

    settings = " ".join([*git_flags(tmp_path), *git_env(tmp_path, {}).values()])
    assert os.devnull not in settings
    assert str(tmp_path / ".git" / "capeval-none") in settings
    assert not (tmp_path / ".git" / "capeval-none").exists()


def test_the_commit_has_fixed_dates_and_is_on_main(tmp_path: Path) -> None:
    # Two copies made a second apart must give the same commit id, on every
    # machine: the dates are fixed, not "now".
    wd = prepare_workdir(tmp_path, _fixture_case(tmp_path), dest=tmp_path / "w")
    assert _git(wd, "log", "--format=%at %ct") == "946684800 946684800"  # 2000-01-01Z
    assert _git(wd, "symbolic-ref", "--short", "HEAD") == "main"


def test_the_system_git_config_does_not_change_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = _fixture_case(tmp_path)
    plain = prepare_workdir(tmp_path, case, dest=tmp_path / "plain")
    system = tmp_path / "system-gitconfig"
    system.write_text("[i18n]\n\tcommitEncoding = ISO-8859-1\n")
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(system))
    configured = prepare_workdir(tmp_path, case, dest=tmp_path / "configured")
    assert _git(configured, "rev-parse", "HEAD") == _git(plain, "rev-parse", "HEAD")


def test_an_empty_fixture_still_gives_a_head(tmp_path: Path) -> None:
    wd = prepare_workdir(tmp_path, _fixture_case(tmp_path, {}), dest=tmp_path / "w")
    assert _git(wd, "log", "--format=%s") == "capeval fixture"


def test_an_existing_destination_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    case = _fixture_case(tmp_path)
    dest = tmp_path / "mine"
    dest.mkdir()
    (dest / "keep.txt").write_text("not capeval's\n")
    with pytest.raises(FileExistsError):
        prepare_workdir(tmp_path, case, dest=dest)
    assert (dest / "keep.txt").read_text() == "not capeval's\n"


def test_one_cache_holds_a_template_per_fixture(tmp_path: Path) -> None:
    first = _fixture_case(tmp_path, {"a.txt": "a\n"}, name="first")
    second = _fixture_case(tmp_path, {"b.txt": "b\n"}, name="second")
    with WorkdirCache(tmp_path) as cache:
        a = prepare_workdir(tmp_path, first, dest=tmp_path / "a", cache=cache)
        b = prepare_workdir(tmp_path, second, dest=tmp_path / "b", cache=cache)
        again = prepare_workdir(tmp_path, first, dest=tmp_path / "again", cache=cache)
    assert _git(a, "ls-files") == "a.txt" and _git(again, "ls-files") == "a.txt"
    assert _git(b, "ls-files") == "b.txt"


def test_a_failing_git_is_a_workdir_error_saying_what_git_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A repeat without its commit has no HEAD for the agent or the grader:
    # it must fail as a setup error, not run on in a half-made repository.
    case = _fixture_case(tmp_path)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text(
        '#!/bin/sh\ncase " $* " in *" commit "*) echo "disk quota exceeded" >&2; exit 128;; esac\n'
        'exec "$REAL_GIT" "$@"\n'
    )
    (fake / "git").chmod(0o755)
    real = shutil.which("git")
    assert real is not None
    monkeypatch.setenv("REAL_GIT", real)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(WorkdirError, match=r"git commit failed .*: disk quota exceeded"):
        prepare_workdir(tmp_path, case, dest=tmp_path / "w")
    assert not (tmp_path / "w").exists()
