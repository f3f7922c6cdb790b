"""A repeat that measured nothing (outcome `error`) is run again; a resume runs it again too.

`--retries N` retries within the run, each attempt from scratch; `capeval run
--resume PATH --retry-errors` appends a new row for each repeat whose last
row is an `error`, which supersedes it, and never a second row for a repeat
that has one that stands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from capeval.results.load import read_rows
from capeval.runner import retry
from capeval.runner.repeat import RepeatCancelled
from capeval.runner.retry import RetryPolicy, run_with_retries
from tests.casefactory import write_case
from tests.runhelpers import capeval, interrupt_when, start_capeval


class _Job:
    prior_attempts = 0
    triple = ("v", "c", 0)


class _Settings:
    artifacts_dir = None


def _attempts(monkeypatch: pytest.MonkeyPatch, outcomes: list[str]) -> list[int]:
    made: list[int] = []

    def fake(job: Any, adapter: Any, settings: Any, *, attempt: int) -> dict[str, Any]:
        made.append(attempt)
        outcome = outcomes[len(made) - 1]
        return {"outcome": outcome, "passed": outcome == "passed", "attempts": attempt,
                "errorKind": "rate_limit" if outcome == "error" else None}  # fmt: skip

    monkeypatch.setattr(retry, "run_repeat", fake)
    return made


def test_an_error_is_retried_until_it_measures(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _attempts(monkeypatch, ["error", "error", "passed"])
    waits: list[float] = []
    row = run_with_retries(
        _Job(), None, _Settings(), RetryPolicy(retries=2, wait_s=0),  # type: ignore[arg-type]
        on_retry=lambda row, wait: waits.append(wait),
    )  # fmt: skip
    assert made == [1, 2, 3] and row["outcome"] == "passed" and row["attempts"] == 3
    assert len(waits) == 2


def test_out_of_retries_the_last_error_row_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _attempts(monkeypatch, ["error", "error", "passed"])
    row = run_with_retries(_Job(), None, _Settings(), RetryPolicy(retries=1, wait_s=0))  # type: ignore[arg-type]
    assert made == [1, 2] and row["outcome"] == "error" and row["attempts"] == 2


def test_a_failed_repeat_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _attempts(monkeypatch, ["failed", "passed"])
    row = run_with_retries(_Job(), None, _Settings(), RetryPolicy(retries=2, wait_s=0))  # type: ignore[arg-type]
    assert made == [1] and row["outcome"] == "failed"


def test_a_stop_during_the_wait_leaves_no_row(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    _attempts(monkeypatch, ["error", "passed"])
    stop = threading.Event()
    with pytest.raises(RepeatCancelled):
        run_with_retries(
            _Job(), None, _Settings(), RetryPolicy(retries=2, wait_s=60),  # type: ignore[arg-type]
            stop=stop, on_retry=lambda row, wait: stop.set(),
        )  # fmt: skip


def _flaky_workspace(tmp_path: Path) -> tuple[Path, Path]:
    """A command agent that cannot start while `down` exists (a provider outage), and
    whose repeats after the first hang while `hang` exists."""
    down = tmp_path / "down"
    agent = tmp_path / "agent.sh"
    agent.write_text(
        f"#!/bin/sh\nif [ -e {down} ]; then echo 'connection refused' >&2; exit 3; fi\n"
        f'if [ "$1" != --version ] && [ -e {tmp_path}/hang ] && ! mkdir {tmp_path}/first; then\n'
        f"  touch {tmp_path}/hanging; sleep 60\nfi\n"
    )
    agent.chmod(0o755)
    root = tmp_path / "ws"
    write_case(root, "alpha", verify="exit 0\n")
    (root / "capeval.toml").write_text(
        f'[agents.flaky]\ntype = "command"\ncommand = "{agent} {{prompt}}"\n'
    )
    return root, down


@pytest.mark.slow  # four runs of capeval
def test_resume_with_retry_errors_supersedes_and_never_doubles(tmp_path: Path) -> None:
    root, down = _flaky_workspace(tmp_path)
    stream = tmp_path / "rows.jsonl"
    down.touch()
    args = ("--matrix", "x:y@flaky", "--repeats", "2", "--jsonl", str(stream), "--quiet")
    first = capeval(root, *args, "--retries", "0")
    rows = read_rows(stream)
    assert [r["outcome"] for r in rows] == ["error", "error"], first.stderr
    assert rows[0]["errorKind"] == "network" and rows[0]["attempts"] == 1
    assert "--retry-errors" in first.stderr  # the command that runs them again

    # Still down: a plain resume has nothing to fill; --retry-errors runs them again.
    capeval(root, "--resume", str(stream), "--quiet")
    assert len(stream.read_text().splitlines()) == 2
    down.unlink()
    again = capeval(root, "--resume", str(stream), "--retry-errors", "--quiet")
    assert again.returncode == 0, again.stderr
    lines = [json.loads(line) for line in stream.read_text().splitlines()]
    assert [r["outcome"] for r in lines] == ["error", "error", "passed", "passed"]
    rows = read_rows(stream)  # the error rows are superseded
    assert sorted((r["repeat"], r["outcome"], r["attempts"]) for r in rows) == [
        (0, "passed", 2),
        (1, "passed", 2),
    ]
    # Nothing errored stands: another --retry-errors resume adds no row.
    assert capeval(root, "--resume", str(stream), "--retry-errors", "--quiet").returncode == 0
    assert len(stream.read_text().splitlines()) == 4


def test_retry_errors_needs_a_stream_to_resume(tmp_path: Path) -> None:
    root, _ = _flaky_workspace(tmp_path)
    done = capeval(root, "--matrix", "x:y@flaky", "--retry-errors")
    assert done.returncode == 2 and "--resume PATH" in done.stderr


def test_a_retry_errors_resume_killed_midway_and_resumed_never_doubles(tmp_path: Path) -> None:
    root, down = _flaky_workspace(tmp_path)
    stream = tmp_path / "rows.jsonl"
    down.touch()
    args = ("--matrix", "x:y@flaky", "--repeats", "2", "--jsonl", str(stream), "--quiet")
    capeval(root, *args, "--retries", "0")
    assert len(stream.read_text().splitlines()) == 2
    down.unlink()
    (tmp_path / "hang").touch()
    # The first error repeat runs again and passes; the second hangs: stop the run there.
    proc = start_capeval(root, "--resume", str(stream), "--retry-errors", "--quiet")
    interrupt_when(
        proc,
        lambda: (tmp_path / "hanging").exists() and len(stream.read_text().splitlines()) == 3,
    )
    (tmp_path / "hang").unlink()
    again = capeval(root, "--resume", str(stream), "--retry-errors", "--quiet")
    assert again.returncode == 0, again.stderr
    lines = [json.loads(line) for line in stream.read_text().splitlines()]
    assert [r["outcome"] for r in lines] == ["error", "error", "passed", "passed"]
    assert sorted(r["repeat"] for r in lines[2:]) == [0, 1]  # each repeat once more
    assert sorted((r["repeat"], r["outcome"]) for r in read_rows(stream)) == [
        (0, "passed"),
        (1, "passed"),
    ]
