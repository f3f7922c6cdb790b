"""Executors (capeval.runner.executor) and the run's single writer that takes their rows."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from capeval.core.row import Row, triple
from capeval.runner import run as run_module
from capeval.runner.executor import Deliver, LocalExecutor
from capeval.runner.options import RunOptions, RunPlan
from capeval.runner.repeat import RepeatJob
from capeval.runner.run import execute
from tests.runhelpers import read_rows, write_case


def _options(root: Path, **changes: object) -> RunOptions:
    fields: dict[str, object] = {
        "root": root,
        "repeats": 2,
        "concurrency": 2,
        "handle_signals": False,
        **changes,
    }
    return RunOptions(**fields)  # type: ignore[arg-type]


def test_local_rows_say_where_they_ran(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    outcome = execute(_options(tmp_path))
    rows = read_rows(outcome.jsonl_path)
    assert len(rows) == 2
    for row in rows:
        assert row["provenance"]["executor"] == "local"
        assert row["provenance"]["host"] == socket.gethostname()
        assert row["provenance"]["node"] is None
        assert row["provenance"]["shard"] is None


class _Twice(LocalExecutor):
    """Hands every row back twice, as a retried remote task could."""

    def run(
        self, plan: RunPlan, jobs: list[RepeatJob], deliver: Deliver, stop: threading.Event
    ) -> list[str]:
        def both(row: Row) -> None:
            deliver(dict(row))
            deliver(dict(row))

        return super().run(plan, jobs, both, stop)


class _LosesFirst(LocalExecutor):
    """Cannot run the first repeat (a node lost more often than retried)."""

    def run(
        self, plan: RunPlan, jobs: list[RepeatJob], deliver: Deliver, stop: threading.Event
    ) -> list[str]:
        lost, *rest = jobs
        super().run(plan, rest, deliver, stop)
        return [f"{lost.variant.id} {lost.case.id} #{lost.repeat}: node died"]


def test_a_repeat_handed_back_twice_is_written_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_case(tmp_path, "alpha")
    monkeypatch.setattr(run_module, "make_executor", lambda _options: _Twice())
    outcome = execute(_options(tmp_path, repeats=3))
    rows = read_rows(outcome.jsonl_path)
    assert sorted(triple(r) for r in rows) == sorted(j.triple for j in outcome.plan.jobs)
    assert outcome.exit_code == 0 and len(outcome.rows) == 3


def test_a_lost_repeat_has_no_row_fails_the_run_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_case(tmp_path, "alpha")
    with monkeypatch.context() as patched:
        patched.setattr(run_module, "make_executor", lambda _options: _LosesFirst())
        outcome = execute(_options(tmp_path))
    assert outcome.exit_code == 1
    assert len(outcome.lost) == 1 and outcome.lost[0].endswith("#0: node died")
    assert [triple(r)[2] for r in read_rows(outcome.jsonl_path)] == [1]
    resumed = execute(_options(tmp_path, resume=outcome.jsonl_path, repeats=None))
    assert resumed.exit_code == 0 and resumed.new_rows == 1
    assert sorted(triple(r)[2] for r in read_rows(outcome.jsonl_path)) == [0, 1]
