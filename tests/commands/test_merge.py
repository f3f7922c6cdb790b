"""`capeval merge`: its exit codes, what it says, and the files it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capeval.runner.options import RunOptions
from capeval.runner.run import execute
from tests.clirun import capeval
from tests.runhelpers import read_rows, write_case

# Each test runs shards and then capeval in several fresh processes.
pytestmark = pytest.mark.slow


def _shards(root: Path, count: int, **changes: object) -> list[Path]:
    write_case(root, "alpha")
    write_case(root, "beta")
    paths = []
    for i in range(1, count + 1):
        options = RunOptions(
            root=root,
            repeats=2,
            concurrency=2,
            shard=f"{i}/{count}",
            run_id="ci-7",
            handle_signals=False,
            **changes,  # type: ignore[arg-type]
        )
        paths.append(execute(options).jsonl_path)
    return paths


def test_a_complete_merge_exits_0_and_writes_the_stream_its_plan_and_v3(tmp_path: Path) -> None:
    shards = _shards(tmp_path, 2)
    out = tmp_path / "run.jsonl"
    done = capeval("merge", *shards, "-o", out, "--out", tmp_path / "run.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "merged 2 of 2 shards of run ci-7: 4 of 4 repeats -> run.jsonl" in done.stdout
    assert len(read_rows(out)) == 4
    assert (tmp_path / "run.jsonl.plan.json").is_file()
    v3 = json.loads((tmp_path / "run.json").read_text())
    assert v3["version"] == 3 and len(v3["cases"]) == 4 and v3["repeats"] == 2
    gate = capeval("gate", "--baseline", tmp_path / "run.json", "--candidate", out, cwd=tmp_path)
    assert gate.returncode == 0, gate.stdout + gate.stderr


def test_missing_shards_and_repeats_exit_1_and_name_them(tmp_path: Path) -> None:
    shards = _shards(tmp_path, 3)
    lines = shards[0].read_text().splitlines(keepends=True)
    shards[0].write_text(lines[0])
    done = capeval("merge", shards[0], "-o", tmp_path / "run.jsonl", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "capeval merge: shard 2/3 is missing: no file given (1 repeat)" in done.stderr
    assert "capeval merge: shard 3/3 is missing" in done.stderr
    assert "shard 1/3 (" in done.stderr and "1 of 2 repeats missing" in done.stderr
    assert (
        "merged 1 of 3 shards of run ci-7: 1 of 4 repeats -> run.jsonl; run the missing ones "
        "with: capeval run --resume run.jsonl" in done.stderr
    )
    assert len(read_rows(tmp_path / "run.jsonl")) == 1
    resumed = capeval("run", "--resume", "run.jsonl", "-q", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert len(read_rows(tmp_path / "run.jsonl")) == 4


def test_refusals_exit_2(tmp_path: Path) -> None:
    shards = _shards(tmp_path, 2)
    out = tmp_path / "run.jsonl"
    twice = capeval("merge", shards[0], shards[0], "-o", out, cwd=tmp_path)
    assert twice.returncode == 2 and "shard 1/2 is given twice" in twice.stderr
    onto = capeval("merge", *shards, "-o", shards[0], cwd=tmp_path)
    assert onto.returncode == 2 and "is one of the shards" in onto.stderr
    out.write_text("{}\n")
    exists = capeval("merge", *shards, "-o", out, cwd=tmp_path)
    assert exists.returncode == 2 and f"-o {out} exists" in exists.stderr
    assert not out.with_name("run.jsonl.plan.json").exists()


def test_a_merge_holding_error_repeats_says_the_gate_will_not_judge_them(tmp_path: Path) -> None:
    shards = _shards(tmp_path, 2)
    lines = shards[1].read_text().splitlines(keepends=True)
    row = json.loads(lines[0])
    row.update(passed=False, outcome="error", errorKind="rate_limit", providerStatus=429)
    shards[1].write_text(json.dumps(row) + "\n" + "".join(lines[1:]))
    done = capeval("merge", *shards, "-o", tmp_path / "run.jsonl", cwd=tmp_path)
    # Every triple is held, so the merge is complete; but one measured nothing.
    assert done.returncode == 0, done.stderr
    assert (
        "capeval merge: 1 repeat measured nothing (outcome error); the gate will not judge "
        "their cells: run them again with capeval run --resume run.jsonl --retry-errors"
    ) in done.stderr


def test_a_shard_run_with_baseline_is_refused_before_any_repeat(tmp_path: Path) -> None:
    # Gated alone a shard would be judged on its slice of the run; the gate's
    # own refusal then named --allow-partial, which `capeval run` does not take.
    write_case(tmp_path, "alpha")
    base = tmp_path / "base.jsonl"
    base.write_text("")
    done = capeval("run", "--shard", "1/2", "--baseline", base, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--baseline gates a whole run, and a --shard is a slice of one" in done.stderr
    assert not (tmp_path / "evals" / "capability" / "results").exists()
