"""Kill and resume, timeouts, concurrency and clean interrupts, end to end."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from capeval.results.jsonl import read_jsonl
from tests.runhelpers import (
    capeval,
    eventually,
    group_gone,
    interrupt_when,
    read_rows,
    shell,
    start_capeval,
    wait_until,
    write_case,
    write_done,
)

pytestmark = pytest.mark.slow


def _refuses(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
        except ConnectionRefusedError:
            return True
    return False


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.fixture
def own_tmpdir(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """$TMPDIR for a capeval that may be killed: whatever it leaves stays in pytest's tmp."""
    return {"TMPDIR": str(tmp_path_factory.mktemp("tmpdir"))}


def test_sigkill_mid_run_then_resume_gives_one_row_per_triple(
    tmp_path: Path, own_tmpdir: dict[str, str]
) -> None:
    write_case(tmp_path, "slow", trajectories={"oracle": [shell("sleep 0.2"), write_done()]})
    write_case(tmp_path, "fast")
    stream = tmp_path / "rows.jsonl"
    proc = start_capeval(
        tmp_path,
        "--matrix",
        "a=scripted:oracle,b=scripted:oracle",
        "--repeats",
        "3",
        "--jsonl",
        str(stream),
        "-q",
        env=own_tmpdir,
    )
    try:
        assert eventually(lambda: _lines(stream) >= 3, within=30)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # SIGKILL may land mid-write: the reader sets a torn last line aside.
    before, _warnings = read_jsonl(stream)
    assert 3 <= len(before) < 12
    run_id = before[0]["runId"]

    resumed = capeval(tmp_path, "--resume", str(stream), "--json", env=own_tmpdir)
    assert resumed.returncode == 0, resumed.stderr
    rows = read_rows(stream)
    triples = [(r["variantId"], r["id"], r["repeat"]) for r in rows]
    assert len(triples) == len(set(triples)) == 12
    assert {r["runId"] for r in rows} == {run_id}
    assert rows[: len(before)] == before  # finished rows are never rewritten

    again = capeval(tmp_path, "--resume", str(stream), env=own_tmpdir)
    assert again.returncode == 0 and len(read_rows(stream)) == 12  # nothing left to do


def test_sigkill_of_capeval_stops_the_agent_group_and_removes_temp_dirs(
    tmp_path: Path, own_tmpdir: dict[str, str]
) -> None:
    # A CI job timeout SIGKILLs capeval: none of its handlers run, yet a hung
    # agent must not run on unsupervised, and no temp dir may stay in $TMPDIR.
    tmpdir = Path(own_tmpdir["TMPDIR"])
    pgid_file, workdir_file = tmp_path / "agent.pgid", tmp_path / "agent.workdir"
    hang = (
        f"pwd > {workdir_file}; ps -o pgid= $$ > {pgid_file}.part; "
        f"mv {pgid_file}.part {pgid_file}; sleep 60"
    )
    write_case(tmp_path, "hang", trajectories={"oracle": [shell(hang)]})
    proc = start_capeval(tmp_path, "-q", env=own_tmpdir)
    pgid: int | None = None
    gone = False
    try:
        assert eventually(pgid_file.is_file, within=30)
        pgid = int(pgid_file.read_text())
        workdir = Path(workdir_file.read_text().strip())
        assert workdir.is_dir() and workdir.resolve().is_relative_to(tmpdir.resolve())
        assert not group_gone(pgid, within=0)  # the agent is running

        proc.send_signal(signal.SIGKILL)
        proc.wait()
        gone = group_gone(pgid, within=5)
        assert gone
        assert eventually(lambda: not workdir.exists(), within=5)
        assert eventually(lambda: not any(tmpdir.iterdir()), within=5)  # templates too
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)
        if pgid is not None and not gone:  # a failure must not leave `sleep 60` behind
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)


def _release(proc: subprocess.Popen[str], fifo: Path) -> None:
    """Give a repeat blocked reading `fifo` its line (once it has opened it), unless the run ended."""
    fd: list[int] = []

    def reader_there() -> bool:
        try:
            fd.append(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # ENXIO: no reader yet
            return proc.poll() is not None
        return True

    assert eventually(reader_there, within=600)
    for f in fd:
        os.write(f, b"go\n")
        os.close(f)


def test_a_second_run_on_a_stream_being_written_is_refused(tmp_path: Path) -> None:
    # Two runs started on one --jsonl both find it empty; the stream's lock
    # refuses the second instead of interleaving two runs' rows. The first
    # run's first repeat waits on a FIFO until the test has checked, so the
    # first run holds the lock and has written no row yet, however slow the
    # second capeval is to start.
    started, released, gate = tmp_path / "started", tmp_path / "released", tmp_path / "gate"
    os.mkfifo(gate)
    wait = shell(f"test -e {released} || {{ touch {started}; read _ < {gate}; }}")
    write_case(tmp_path, "slow", trajectories={"oracle": [wait, write_done()]})
    stream = tmp_path / "rows.jsonl"
    first = start_capeval(tmp_path, "--repeats", "3", "--concurrency", "1", "--jsonl", str(stream))
    try:
        wait_until(first, started.exists)
        plan = (tmp_path / "rows.jsonl.plan.json").read_text()
        second = capeval(tmp_path, "--repeats", "2", "--jsonl", str(stream))
        assert second.returncode == 2
        assert "rows.jsonl: is being written by another capeval run" in second.stderr
        assert (tmp_path / "rows.jsonl.plan.json").read_text() == plan  # untouched
        resumed = capeval(tmp_path, "--resume", str(stream))  # --resume waits its turn too
        assert resumed.returncode == 2 and "another capeval run" in resumed.stderr
        assert read_rows(stream) == []
    finally:
        released.touch()  # the later repeats go straight on
        _release(first, gate)
        _out, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    rows = read_rows(stream)
    assert len(rows) == 3 and len({r["runId"] for r in rows}) == 1


def test_hanging_agent_is_killed_on_time_with_its_group(tmp_path: Path) -> None:
    pgid_file = tmp_path / "agent.pgid"
    write_case(
        tmp_path,
        "hang",
        trajectories={"oracle": [shell(f"ps -o pgid= $$ > {pgid_file}; sleep 60")]},
    )
    start = time.monotonic()
    proc = capeval(tmp_path, "--agent-timeout", "1", "--json")
    elapsed = time.monotonic() - start
    row = json.loads(proc.stdout)["rows"][0]
    assert proc.returncode == 1
    assert elapsed < 12, elapsed
    assert row["status"] == "timeout" and row["passed"] is False
    assert group_gone(int(pgid_file.read_text()))


def test_hanging_grader_is_killed_on_time_with_exit_124(tmp_path: Path) -> None:
    pgid_file = tmp_path / "grader.pgid"
    write_case(tmp_path, "hang", verify=f"ps -o pgid= $$ > {pgid_file}; sleep 60\n")
    start = time.monotonic()
    proc = capeval(tmp_path, "--verify-timeout", "1", "--json")
    elapsed = time.monotonic() - start
    row = json.loads(proc.stdout)["rows"][0]
    assert elapsed < 12, elapsed
    assert row["verifyExitCode"] == 124 and "grader timed out" in row["error"]
    assert 900 <= row["verifyDurationMs"] < 7000
    assert group_gone(int(pgid_file.read_text()))


def test_repeats_overlap_under_concurrency(tmp_path: Path) -> None:
    for name in ("c1", "c2", "c3", "c4"):
        write_case(tmp_path, name, trajectories={"oracle": [shell("sleep 1"), write_done()]})
    start = time.monotonic()
    proc = capeval(tmp_path, "--concurrency", "4", "--json")
    elapsed = time.monotonic() - start
    rows = json.loads(proc.stdout)["rows"]
    assert proc.returncode == 0, [r["error"] for r in rows]
    latest_start = max(r["startedAt"] for r in rows)
    earliest_end = min(r["finishedAt"] for r in rows)
    assert latest_start < earliest_end  # all four were running at the same moment
    assert elapsed < 4 + 3, elapsed  # serial would be over 4 s of sleeping alone


def test_sigint_stops_cleanly_keeps_rows_and_frees_everything(tmp_path: Path) -> None:
    url_file, pgid_file = tmp_path / "url", tmp_path / "agent.pgid"
    write_case(tmp_path, "done-first")
    write_case(
        tmp_path,
        "web-hang",
        httpFixture=True,
        prompt="read {{HTTP_URL}}",
        trajectories={
            "oracle": [
                shell(f"ps -o pgid= $$ > {pgid_file}; echo {{{{HTTP_URL}}}} > {url_file}; sleep 60")
            ]
        },
    )
    stream = tmp_path / "rows.jsonl"
    proc = start_capeval(tmp_path, "--jsonl", str(stream))
    err = interrupt_when(proc, lambda: url_file.exists() and url_file.read_text().strip() != "")
    port = int(url_file.read_text().strip().rsplit(":", 1)[1])
    assert proc.returncode == 130, err
    assert "capeval run --resume rows.jsonl" in err  # relative: the run's cwd holds it
    assert _refuses(port)
    assert group_gone(int(pgid_file.read_text()))
    rows = read_rows(stream)
    assert [r["id"] for r in rows] == ["done-first"]  # finished kept, interrupted not recorded


def _keep_first_row(stream: Path) -> None:
    stream.write_text(stream.read_text().splitlines(keepends=True)[0])


def test_resume_finishes_the_run_that_was_started_not_the_workspace_of_today(
    tmp_path: Path,
) -> None:
    # An unflagged run takes its matrix, agents and cases from the workspace.
    # Editing either before a resume must not mix two plans in one stream.
    write_case(tmp_path, "alpha", trajectories={"sloppy": [write_done("sloppy")]})
    stream = tmp_path / "rows.jsonl"
    first = capeval(tmp_path, "--jsonl", str(stream), "--repeats", "2")
    assert first.returncode == 0, first.stderr
    _keep_first_row(stream)  # as if interrupted after one repeat

    write_case(tmp_path, "beta")  # a case added since: not part of this run
    resumed = capeval(tmp_path, "--resume", str(stream))
    assert resumed.returncode == 0, resumed.stderr
    assert [(r["id"], r["repeat"]) for r in read_rows(stream)] == [("alpha", 0), ("alpha", 1)]

    _keep_first_row(stream)
    (tmp_path / "capeval.toml").write_text(
        'agent = "build"\n[agents.build]\ntype = "scripted"\ntrajectory = "sloppy"\n'
    )
    changed = capeval(tmp_path, "--resume", str(stream))
    assert changed.returncode == 2
    assert "variant 'scripted:oracle' is gone (now: 'scripted:sloppy')" in changed.stderr
    assert len(read_rows(stream)) == 1  # nothing ran on the changed plan

    (tmp_path / "capeval.toml").write_text(
        'matrix = ["scripted:oracle@build"]\n[agents.build]\ntype = "scripted"\n'
    )
    swapped = capeval(tmp_path, "--resume", str(stream)).stderr
    assert "variant 'scripted:oracle' agent changed from 'scripted' to 'build'" in swapped

    (tmp_path / "capeval.toml").write_text("[timeouts]\nagent = 7\n")
    assert "agentTimeoutS changed" in capeval(tmp_path, "--resume", str(stream)).stderr

    (tmp_path / "capeval.toml").unlink()
    shutil.rmtree(tmp_path / "evals/capability/cases/alpha")
    gone = capeval(tmp_path, "--resume", str(stream))
    assert gone.returncode == 2 and "case 'alpha' of this run is no longer" in gone.stderr


def test_resume_needs_no_root_from_another_directory(tmp_path: Path) -> None:
    import subprocess
    import sys

    ws = tmp_path / "ws"
    write_case(ws, "alpha")
    stream = tmp_path / "rows.jsonl"
    assert capeval(ws, "--jsonl", str(stream), "--repeats", "2").returncode == 0
    _keep_first_row(stream)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    resumed = subprocess.run(
        [sys.executable, "-m", "capeval.cli", "run", "--resume", str(stream)],
        cwd=elsewhere, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr  # was: no evals/capability/cases/ here
    assert [(r["id"], r["repeat"]) for r in read_rows(stream)] == [("alpha", 0), ("alpha", 1)]


def test_resume_of_a_torn_stream_says_so_in_plain_words(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    stream = tmp_path / "rows.jsonl"
    assert capeval(tmp_path, "--jsonl", str(stream), "--repeats", "3").returncode == 0
    lines = stream.read_bytes().splitlines(keepends=True)
    stream.write_bytes(lines[0] + lines[1][:40])  # killed while writing the second row

    plan = capeval(tmp_path, "--resume", str(stream), "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert "(2 to run" in plan.stdout
    assert "capeval run: warning: " in plan.stderr and "torn last line" in plan.stderr

    resumed = capeval(tmp_path, "--resume", str(stream), "-q")
    assert resumed.returncode == 0, resumed.stderr
    # A user-facing line, not a Python warning quoting capeval's source.
    assert "capeval run: warning: " in resumed.stderr
    assert "moved to rows.jsonl.torn" in resumed.stderr
    assert "ResultFileWarning" not in resumed.stderr and "_repair_tail" not in resumed.stderr
    assert sorted(r["repeat"] for r in read_rows(stream)) == [0, 1, 2]
    assert (tmp_path / "rows.jsonl.torn").read_bytes() == lines[1][:40] + b"\n"


def test_resume_without_its_plan_needs_the_runs_flags(tmp_path: Path) -> None:
    # Without `<stream>.plan.json` the run's shape is unknown: resuming on
    # today's defaults ran other cases and repeat counts into the stream.
    write_case(tmp_path, "alpha")
    write_case(tmp_path, "beta")
    stream = tmp_path / "rows.jsonl"
    first = capeval(tmp_path, "--jsonl", str(stream), "--case", "alpha", "--repeats", "3")
    assert first.returncode == 0, first.stderr
    _keep_first_row(stream)
    (tmp_path / "rows.jsonl.plan.json").unlink()
    before = stream.read_text()

    refused = capeval(tmp_path, "--resume", str(stream))
    assert refused.returncode == 2
    assert "rows.jsonl.plan.json" in refused.stderr and "--repeats" in refused.stderr
    assert stream.read_text() == before

    resumed = capeval(tmp_path, "--resume", str(stream), "--case", "alpha", "--repeats", "3")
    assert resumed.returncode == 0, resumed.stderr
    assert [(r["id"], r["repeat"]) for r in read_rows(stream)] == [
        ("alpha", 0), ("alpha", 1), ("alpha", 2),
    ]  # fmt: skip


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_run_stopped_while_asking_the_agents_version_leaves_nothing_running(
    tmp_path: Path, own_tmpdir: dict[str, str], sig: signal.Signals
) -> None:
    # A wrapper that does not answer `--version` (README's bin/myagent.sh)
    # runs for the probe's whole timeout; stopped then, capeval left it, its
    # children and its temp dir behind: the probe ran before any handler or
    # reaper watched.
    tmpdir = Path(own_tmpdir["TMPDIR"])
    pgid_file = tmp_path / "probe.pgid"
    agent = tmp_path / "stubborn.sh"
    agent.write_text(
        "#!/bin/sh\ntrap '' TERM\n"
        f'if [ "$1" = --version ]; then ps -o pgid= $$ > {pgid_file}.part; '
        f"mv {pgid_file}.part {pgid_file}; sleep 60 & sleep 60; fi\nexit 1\n"
    )
    agent.chmod(0o755)
    (tmp_path / "capeval.toml").write_text(
        f'[agents.stubborn]\ntype = "command"\ncommand = "{agent} {{workdir}} {{prompt}}"\n'
    )
    write_case(tmp_path, "alpha")
    stream = tmp_path / "rows.jsonl"
    proc = start_capeval(
        tmp_path, "--matrix", "x:y@stubborn", "--jsonl", str(stream), env=own_tmpdir
    )
    pgid: int | None = None
    gone = False
    try:
        assert eventually(pgid_file.is_file, within=30)
        pgid = int(pgid_file.read_text())
        assert any(p.name.startswith("capeval-version-") for p in tmpdir.iterdir())
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=20)
        gone = group_gone(pgid, within=5)
        assert gone
        assert eventually(lambda: not any(tmpdir.iterdir()), within=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
        if pgid is not None and not gone:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
    if sig == signal.SIGTERM:
        assert proc.returncode == 143, err
        # The plan is stored before the probe: the hint it prints works.
        assert "finish with: capeval run --resume" in err
        resumed = capeval(tmp_path, "--resume", str(stream), "--dry-run")
        assert resumed.returncode == 0, resumed.stderr
