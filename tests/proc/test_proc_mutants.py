"""Rules of the runner's process, workdir, grader and pass-rule parts that no
other test pinned: each test here failed on a one-line break of its rule
(a mutation audit) and passes on the real code. Real subprocesses, real git."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from capeval.core.passrule import provider_mismatch
from capeval.proc import process, strays
from capeval.proc.process import MAX_OUTPUT_BYTES, process_scope, run_process
from capeval.runner.httpfixture import HttpFixture
from capeval.runner.workdir import WorkdirCache, WorkdirError, prepare_workdir
from tests.runhelpers import alive, eventually
from tests.runner.test_graders import FETCHES_TOKEN, SOLVES, add_case, check

HAS_PROC = Path("/proc/self/environ").exists()


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    process.reset_shutdown()
    yield
    process.reset_shutdown()  # a test that shut down must not refuse the next file's children


# --- timeouts and kill escalation -------------------------------------------


def test_a_timed_out_child_gets_sigterm_and_the_default_grace_to_run_its_trap(
    tmp_path: Path,
) -> None:
    # Spec: on timeout SIGTERM, then SIGKILL 5 s later, exit code 124 (GNU
    # timeout's). A trap that needs 2 s to finish must get them: a SIGKILL
    # first, or a grace shorter than that, loses what the trap writes.
    ready, ran = tmp_path / "ready", tmp_path / "trap-ran"
    script = (
        f"trap 'sleep 2; echo ran > {ran}; exit 0' TERM; touch {ready}; "
        "while :; do sleep 0.05; done"
    )
    start = time.monotonic()
    r = run_process(["bash", "-c", script], cwd=tmp_path, timeout_s=2.0)
    elapsed = time.monotonic() - start
    assert ready.exists(), "bash did not set its trap within 2 s (overloaded host?)"
    assert r.timed_out and r.exit_code == 124
    assert ran.read_text() == "ran\n"
    assert elapsed < 2.0 + 4.5, elapsed  # it left when the trap ended, not after the grace


def test_cancelling_a_scope_kills_a_child_that_ignores_sigterm(tmp_path: Path) -> None:
    # An agent timeout cancels the repeat's scope: a CLI that traps SIGTERM
    # must still die, or the repeat (and the run) waits for it.
    ready = tmp_path / "ready"
    script = f"trap '' TERM; touch {ready}; while :; do sleep 0.05; done"
    results: list[process.ProcessResult] = []
    scopes: list[process.ProcessScope] = []

    def worker() -> None:
        with process_scope("repeat") as scope:
            scopes.append(scope)
            results.append(run_process(["bash", "-c", script], cwd=tmp_path, timeout_s=60))

    t = threading.Thread(target=worker)
    t.start()
    try:
        assert eventually(ready.exists, 30)
        scopes[0].cancel("agent timeout")
        t.join(10)
        assert not t.is_alive(), "the TERM-ignoring child outlived its scope's cancel"
        assert results[0].cancelled and results[0].exit_code == 128 + 9
    finally:
        process.shutdown("test cleanup")
        t.join(60)


def test_after_shutdown_no_new_repeat_can_start_a_child(tmp_path: Path) -> None:
    # Ctrl-C: repeats that start their scope afterwards, and the runner's own
    # checks (`is_shutting_down`), must see it too, not only the scopes alive then.
    process.shutdown("interrupted")
    assert process.is_shutting_down()
    with (
        process_scope("later repeat"),
        pytest.raises(process.ProcessCancelled, match="interrupted"),
    ):
        run_process(["true"], cwd=tmp_path)


def test_reopening_a_scope_after_an_agent_timeout_does_not_undo_a_shutdown(
    tmp_path: Path,
) -> None:
    # A repeat reopens its scope for the grader after the agent timed out; a
    # Ctrl-C in between must still refuse the grader.
    with process_scope("repeat") as scope:
        scope.cancel("agent timeout")
        process.shutdown("interrupted")
        scope.reopen()
        with pytest.raises(process.ProcessCancelled, match="interrupted"):
            run_process(["true"], cwd=tmp_path)


def test_the_default_output_cap_bounds_what_is_kept(tmp_path: Path) -> None:
    # A grader running `yes` until its timeout held every byte (about 50 GB):
    # callers rely on the default cap, not on passing one.
    extra = 1024 * 1024
    r = run_process(["bash", "-c", f"head -c {MAX_OUTPUT_BYTES + extra} /dev/zero"], cwd=tmp_path)
    assert r.exit_code == 0
    assert MAX_OUTPUT_BYTES <= len(r.stdout) < MAX_OUTPUT_BYTES + 200
    assert f"[capeval: {extra} bytes of output dropped here]".encode() in r.stdout


def test_a_child_never_reads_capevals_own_stdin(tmp_path: Path) -> None:
    # Started from a pipe (CI, `capeval run < file`), a child that reads its
    # stdin took capeval's input, or waited for it, instead of seeing EOF.
    probe = textwrap.dedent(
        f"""
        from capeval.proc.process import run_process
        r = run_process(["cat"], cwd={str(tmp_path)!r}, timeout_s=20)
        print(r.exit_code, r.stdout)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        input="capeval's own input\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == "0 b''", out.stdout + out.stderr


def test_git_location_variables_are_dropped_when_inherited_kept_when_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    show = ["bash", "-c", 'echo "${GIT_DIR-unset}"']
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "users-repo.git"))
    assert run_process(show, cwd=tmp_path).stdout == b"unset\n"
    assert run_process(show, cwd=tmp_path, env=dict(os.environ)).stdout == b"unset\n"
    # One the caller sets for this child (an agent's configured `env`) is its to keep.
    given = {**os.environ, "GIT_DIR": str(tmp_path / "agents.git")}
    assert run_process(show, cwd=tmp_path, env=given).stdout.decode().strip() == given["GIT_DIR"]


# --- strays and the reaper ---------------------------------------------------


@pytest.mark.skipif(not HAS_PROC, reason="reads /proc")
def test_a_process_carrying_the_mark_never_lists_itself(tmp_path: Path) -> None:
    # A capeval that itself carries a mark (run inside another capeval's
    # repeat) must find its strays, not itself: kill_marked would SIGTERM it.
    mark = strays.new_mark()
    probe = textwrap.dedent(
        """
        import os, subprocess, sys
        from capeval.proc import strays
        child = subprocess.Popen(["sleep", "30"])
        try:
            print(os.getpid(), child.pid, strays.marked_pids("CAPEVAL_TEST_MARK", sys.argv[1]))
        finally:
            child.kill()
            child.wait()
        """
    )
    env = {**os.environ, "CAPEVAL_TEST_MARK": mark}
    out = subprocess.run(
        [sys.executable, "-c", probe, mark], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    own, child, found = out.stdout.split(" ", 2)
    assert json.loads(found) == [int(child)] and int(own) not in json.loads(found)


# A "capeval" in a session of its own: a run temp dir and a tracked group, then
# a signal to its whole process group (a CI job cancelled, `kill -- -PGID`).
_GROUP_KILLED = textwrap.dedent(
    """
    import os, signal, subprocess, sys
    from pathlib import Path
    from capeval.proc import reaper

    out = Path(sys.argv[1])
    with reaper.running(), reaper.temp_dir("capeval-run-", out) as scratch:
        (scratch / "f").write_text("x")
        child = subprocess.Popen(["sleep", "60"], start_new_session=True)
        reaper.track_group(child.pid)
        (out / "pids").write_text(f"{child.pid} {reaper._ACTIVE._proc.pid}")
        os.killpg(0, signal.SIGTERM)  # capeval has no handler here: it dies at once
    """
)


@pytest.mark.skipif(not HAS_PROC, reason="reads /proc")
def test_a_signal_to_capevals_group_leaves_the_reaper_to_clean_up(tmp_path: Path) -> None:
    # The reaper runs in a session of its own; in capeval's group it died with
    # it and removed neither the run's temp dir nor the agent still running.
    script = tmp_path / "capeval_stub.py"
    script.write_text(_GROUP_KILLED)
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert proc.returncode == -15, proc.stderr
    child, watchman = (int(p) for p in (tmp_path / "pids").read_text().split())
    try:
        assert eventually(lambda: not alive(child), 10)
        assert eventually(lambda: not list(tmp_path.glob("capeval-run-*")), 10)
    finally:
        for pid in (child, watchman):
            if alive(pid):
                os.kill(pid, 9)


# --- the workdir ---------------------------------------------------------------


@dataclass
class FakeCase:
    id: str
    fixture: str


FIXTURE = "evals/capability/fixtures/demo"


def _fixture(root: Path, files: dict[str, str] | None = None, name: str = "demo") -> FakeCase:
    fx = root / "evals/capability/fixtures" / name
    fx.mkdir(parents=True)
    for rel, text in ({"README.md": "demo\n"} if files is None else files).items():
        (fx / rel).write_text(text)
    return FakeCase(name, f"evals/capability/fixtures/{name}")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_commit_has_fixed_dates_and_is_on_main(tmp_path: Path) -> None:
    # Two copies made a second apart must give the same commit id, on every
    # machine: the dates are fixed, not "now".
    wd = prepare_workdir(tmp_path, _fixture(tmp_path), dest=tmp_path / "w")
    assert _git(wd, "log", "--format=%at %ct") == "946684800 946684800"  # 2000-01-01Z
    assert _git(wd, "symbolic-ref", "--short", "HEAD") == "main"


def test_the_system_git_config_does_not_change_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = _fixture(tmp_path)
    plain = prepare_workdir(tmp_path, case, dest=tmp_path / "plain")
    system = tmp_path / "system-gitconfig"
    system.write_text("[i18n]\n\tcommitEncoding = ISO-8859-1\n")
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(system))
    configured = prepare_workdir(tmp_path, case, dest=tmp_path / "configured")
    assert _git(configured, "rev-parse", "HEAD") == _git(plain, "rev-parse", "HEAD")


def test_an_empty_fixture_still_gives_a_head(tmp_path: Path) -> None:
    wd = prepare_workdir(tmp_path, _fixture(tmp_path, {}), dest=tmp_path / "w")
    assert _git(wd, "log", "--format=%s") == "capeval fixture"


def test_an_existing_destination_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    case = _fixture(tmp_path)
    dest = tmp_path / "mine"
    dest.mkdir()
    (dest / "keep.txt").write_text("not capeval's\n")
    with pytest.raises(FileExistsError):
        prepare_workdir(tmp_path, case, dest=dest)
    assert (dest / "keep.txt").read_text() == "not capeval's\n"


def test_one_cache_holds_a_template_per_fixture(tmp_path: Path) -> None:
    first = _fixture(tmp_path, {"a.txt": "a\n"}, name="first")
    second = _fixture(tmp_path, {"b.txt": "b\n"}, name="second")
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
    case = _fixture(tmp_path)
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


# --- the grader contract (validate --graders) ------------------------------------


def test_the_grader_gets_the_http_url_as_in_a_run(tmp_path: Path) -> None:
    # A run passes EVAL_HTTP_URL and EVAL_HTTP_TOKEN to the grader; one that
    # fetches from the fixture itself failed here while passing in a run.
    verify = (
        'python3 -c "import sys, urllib.request as u; '
        "sys.exit(u.urlopen(sys.argv[1] + '/token.txt').read().decode().strip() != "
        'open(\'token.txt\').read().strip())" "$EVAL_HTTP_URL" || exit 1\n'
    )
    add_case(tmp_path, "web", verify=verify, oracle=FETCHES_TOKEN, httpFixture=True)
    assert check(tmp_path) == []


def test_the_oracle_gets_the_http_url_in_its_environment(tmp_path: Path) -> None:
    # As a run's agent does: a trajectory whose shell step reads
    # $EVAL_HTTP_URL must find it, or an honest case is reported as broken.
    fetch = (
        "python3 -c \"import os, urllib.request as u; print(u.urlopen(os.environ['EVAL_HTTP_URL']"
        " + '/token.txt').read().decode().strip())\" > token.txt"
    )
    oracle = {"turns": [{"toolCalls": [{"name": "run_shell", "arguments": {"command": fetch}}]}]}
    verify = 'grep -qx "$EVAL_HTTP_TOKEN" token.txt || { echo "no token"; exit 1; }\n'
    add_case(tmp_path, "web", verify=verify, oracle=oracle, httpFixture=True)
    assert check(tmp_path) == []


def test_an_oracle_that_exits_0_but_reports_failure_did_not_succeed(tmp_path: Path) -> None:
    # As in the pass rule: the agent's own status is the better witness
    # (Claude's error_max_turns comes with exit 0).
    add_case(tmp_path, "quiet", oracle={**SOLVES, "status": "failed", "error": "max turns"})
    (problem,) = check(tmp_path)
    assert "did not succeed (status failed, exit 0): max turns" in problem


def test_an_oracle_using_exactly_its_budget_is_within_it(tmp_path: Path) -> None:
    add_case(tmp_path, "exact", maxTurns=len(SOLVES["turns"]))
    assert check(tmp_path) == []


def test_a_failing_graders_output_is_reported_by_its_tail(tmp_path: Path) -> None:
    # Where a grader says why it failed: the end of its output.
    noisy = "for i in $(seq 200); do echo noise-$i; done; echo 'the real reason'; exit 3\n"
    add_case(tmp_path, "noisy", verify=noisy)
    (problem,) = check(tmp_path)
    assert problem.endswith("the real reason") and "noise-1\n" not in problem


# --- the pass rule's provider check ------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "resolved", "ok"),
    [
        ("claude-sonnet-4-5", "claude-sonnet-4-5-latest", True),
        # Same length, another model, then a date: not a snapshot of the request.
        ("claude-sonnet-4-5", "claude-sonnet-4-6-20250929", False),
        ("claude-sonnet-4-5", "claude-opus-4-5-x-20250929", False),
    ],
)
def test_a_snapshot_is_the_requested_model_plus_a_date_only(
    requested: str, resolved: str, ok: bool
) -> None:
    assert (provider_mismatch("anthropic", requested, None, resolved) is None) is ok


# --- the HTTP fixture ----------------------------------------------------------------


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return str(resp.read().decode())


def test_a_query_string_does_not_hide_a_page_and_text_is_served_as_text() -> None:
    with HttpFixture() as fx:
        with urllib.request.urlopen(fx.url + "/token.txt?cache=0", timeout=5) as resp:
            assert resp.read().decode() == fx.token + "\n"
            assert resp.headers["Content-Type"].startswith("text/plain")
            # A fetch tool's cache must not hand a later repeat (same port
            # again) an earlier repeat's token.
            assert resp.headers["Cache-Control"] == "no-store"
        with urllib.request.urlopen(fx.url + "/", timeout=5) as resp:
            assert resp.headers["Content-Type"].startswith("text/html")


def test_a_page_may_name_the_fixtures_own_url() -> None:
    with HttpFixture(pages={"/": 'see <a href="{url}/x">{url}</a>'}) as fx:
        body = _get(fx.url + "/")
    assert body == f'see <a href="{fx.url}/x">{fx.url}</a>'
