"""`capeval run` options refused before any agent starts (plan_run, no repeat runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from capeval.runner.options import RunError, RunOptions
from capeval.runner.plan import plan_run
from tests.runhelpers import interrupt_when, shell, start_capeval, write_case


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1e300])
@pytest.mark.parametrize("name", ["agent_timeout_s", "verify_timeout_s"])
def test_a_non_finite_or_astronomical_timeout_flag_is_refused(
    tmp_path: Path, name: str, value: float
) -> None:
    # nan timed every agent out before it started (every repeat failed);
    # inf and 1e300 crashed the run mid-way with a timer OverflowError.
    write_case(tmp_path, "alpha")
    options = RunOptions(root=tmp_path, jsonl=tmp_path / "r.jsonl", **{name: value})
    with pytest.raises(RunError) as info:
        plan_run(options)
    flag = "--agent-timeout" if name == "agent_timeout_s" else "--verify-timeout"
    assert str(info.value).startswith(f"{flag} {value}: expected a number of seconds > 0")


def test_a_bad_configured_timeout_names_the_file_and_key(tmp_path: Path) -> None:
    from capeval.core.problems import ProblemsError

    write_case(tmp_path, "alpha")
    (tmp_path / "capeval.toml").write_text("[timeouts]\nagent = inf\nverify = nan\n")
    with pytest.raises(ProblemsError) as info:
        plan_run(RunOptions(root=tmp_path, jsonl=tmp_path / "r.jsonl"))
    fields = [(p.file, p.field) for p in info.value.problems]
    assert fields == [("capeval.toml", "timeouts.agent"), ("capeval.toml", "timeouts.verify")]


def test_a_reasonable_timeout_is_kept(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    plan = plan_run(RunOptions(root=tmp_path, jsonl=tmp_path / "r.jsonl", agent_timeout_s=7200.0))
    assert plan.settings.agent_timeout_s == 7200.0


@pytest.mark.parametrize("target", ["r.jsonl", "r.jsonl.plan.json", "./sub/../r.jsonl"])
def test_out_may_not_overwrite_the_row_stream_or_its_plan(tmp_path: Path, target: str) -> None:
    # The v3 export used to replace the stream at the end of the run; --resume
    # then refused the file ("this is a v3 results file").
    write_case(tmp_path, "alpha")
    (tmp_path / "sub").mkdir()
    options = RunOptions(root=tmp_path, jsonl=tmp_path / "r.jsonl", out=tmp_path / target)
    with pytest.raises(RunError) as info:
        plan_run(options)
    assert str(info.value).startswith("--out ") and "row stream" in str(info.value)


@pytest.mark.parametrize("kind", ["rows", "plan beside it", "torn first row"])
def test_out_may_not_replace_another_runs_row_stream(tmp_path: Path, kind: str) -> None:
    # `run --out runs/sloppy.jsonl` (another run's stream) silently replaced
    # those rows with this run's v3 export; its plan and artifacts then
    # pointed at nothing.
    write_case(tmp_path, "alpha")
    other = tmp_path / "sloppy.jsonl"
    row = '{"resultKey": "v::alpha", "id": "alpha", "passed": false, "repeat": 0}'
    if kind == "plan beside it":
        other.write_text("")
        (tmp_path / "sloppy.jsonl.plan.json").write_text("{}")
    else:
        other.write_text(row[:30] if kind == "torn first row" else row + "\n")
    options = RunOptions(root=tmp_path, jsonl=tmp_path / "r.jsonl", out=other)
    if kind == "torn first row":
        # No plan and no readable row: nothing says it is a stream, so --out may write.
        plan_run(options)
        return
    with pytest.raises(RunError) as info:
        plan_run(options)
    assert str(info.value).startswith(f"--out {other}: holds another run's row stream")
    assert other.read_text() == ("" if kind == "plan beside it" else row + "\n")


@pytest.mark.parametrize(
    "content",
    ['{\n  "version": 3,\n  "cases": []\n}\n', '{"version": 3, "cases": []}', "", "notes\n"],
)
def test_out_may_replace_an_earlier_export_or_a_file_that_holds_no_rows(
    tmp_path: Path, content: str
) -> None:
    # The README's loop re-runs with one --out (cand.json) every time.
    write_case(tmp_path, "alpha")
    (tmp_path / "cand.json").write_text(content)
    plan_run(RunOptions(root=tmp_path, jsonl=tmp_path / "r.jsonl", out=tmp_path / "cand.json"))


def test_out_may_not_replace_the_configured_frozen_baseline(tmp_path: Path) -> None:
    # Without --baseline, `--out` at the baseline capeval.toml names replaced
    # it with a one-case run, unchecked by what `baseline freeze` guards.
    write_case(tmp_path, "alpha")
    (tmp_path / "capeval.toml").write_text('baseline = "results/baseline.json"\n')
    (tmp_path / "results").mkdir()
    options = RunOptions(
        root=tmp_path,
        jsonl=tmp_path / "r.jsonl",
        out=tmp_path / "sub" / ".." / "results" / "baseline.json",
    )
    (tmp_path / "sub").mkdir()
    with pytest.raises(RunError) as info:
        plan_run(options)
    message = str(info.value)
    assert "is the frozen baseline (capeval.toml: baseline)" in message
    assert "capeval baseline freeze" in message
    # Another --out is fine.
    plan_run(RunOptions(root=tmp_path, jsonl=tmp_path / "r.jsonl", out=tmp_path / "x.json"))


@pytest.mark.slow
def test_an_interrupted_run_says_how_to_finish_it_with_its_out_and_baseline(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The hint was a bare `--resume`: --out and --baseline are not in the stored
    # plan, so following it never wrote the v3 file nor ran the gate asked for.
    write_case(tmp_path, "first")
    write_case(tmp_path, "hang", trajectories={"oracle": [shell("sleep 60")]})
    stream, out, baseline = tmp_path / "rows.jsonl", tmp_path / "run.json", tmp_path / "b.json"
    baseline.write_text('{"version": 3, "cases": []}\n')
    proc = start_capeval(
        tmp_path,
        *("--jsonl", str(stream), "--out", str(out), "--baseline", str(baseline), "-q"),
        env={"TMPDIR": str(tmp_path_factory.mktemp("tmpdir"))},
    )
    err = interrupt_when(proc, lambda: stream.is_file() and stream.stat().st_size > 0)
    assert proc.returncode == 130, err
    # Paths under the working directory as the user would type them (relative).
    assert f"capeval run --resume {stream.name} --out {out.name} --baseline {baseline.name}" in err


def test_a_resume_counts_rows_another_run_appended_after_it_planned(tmp_path: Path) -> None:
    # The stream was read at planning, the lock taken only later (after the
    # agents' version probes): repeats the run still holding the stream
    # finished in between were run again, two rows for one repeat.
    from capeval.core.row import triple
    from capeval.results.jsonl import read_jsonl
    from capeval.runner.run import execute

    write_case(tmp_path, "alpha")
    stream = tmp_path / "rows.jsonl"
    first = execute(RunOptions(root=tmp_path, jsonl=stream, repeats=2, handle_signals=False))
    finished = stream.read_text().splitlines(keepends=True)
    assert len(finished) == 2 and first.exit_code == 0
    stream.write_text("")  # as if interrupted before any row landed

    resume = RunOptions(resume=stream, handle_signals=False)
    plan = plan_run(resume)
    assert len(plan.todo) == 2
    with stream.open("a") as handle:  # the other run lands a repeat meanwhile
        handle.write(finished[0])
    outcome = execute(resume, plan)
    rows, _ = read_jsonl(stream)
    assert sorted(triple(r) for r in rows) == [
        ("scripted:oracle", "alpha", 0),
        ("scripted:oracle", "alpha", 1),
    ]
    assert outcome.new_rows == 1 and len(outcome.rows) == 2


def test_an_unplayable_trajectory_is_refused_before_any_agent(tmp_path: Path) -> None:
    # Only a missing file was refused; a trajectory with a typo failed every
    # repeat of its cell instead, which the gate reads as a regression.
    case_dir = write_case(tmp_path, "alpha")
    (case_dir / "trajectories" / "oracle.json").write_text('{"turns": [{"text": 5}]}')
    write_case(tmp_path, "beta")
    with pytest.raises(RunError) as info:
        plan_run(RunOptions(root=tmp_path, jsonl=tmp_path / "r.jsonl"))
    message = str(info.value)
    assert "evals/capability/cases/alpha/trajectories/oracle.json: turns[0].text" in message
    assert "beta" not in message and not (tmp_path / "r.jsonl").exists()


def test_a_resume_reads_the_config_file_the_run_was_started_with(tmp_path: Path) -> None:
    # --config is not a shape flag: a bare --resume read capeval.toml instead and
    # refused the run, saying the configuration had changed.
    from capeval.runner.run import execute

    write_case(tmp_path, "alpha")
    write_case(tmp_path, "beta")
    other = tmp_path / "configs" / "other.toml"
    other.parent.mkdir()
    other.write_text('matrix = ["mine=scripted:oracle"]\n[timeouts]\nagent = 99\n')
    stream = tmp_path / "runs" / "rows.jsonl"
    execute(RunOptions(root=tmp_path, config=other, jsonl=stream, handle_signals=False))
    stream.write_text(stream.read_text().splitlines(keepends=True)[0])

    plan = plan_run(RunOptions(resume=stream))
    assert [v.id for v in plan.variants] == ["mine"]
    assert plan.settings.agent_timeout_s == 99
    assert [j.triple for j in plan.todo] == [("mine", "beta", 0)]


def test_a_missing_or_broken_baseline_is_refused_before_any_agent(tmp_path: Path) -> None:
    # It was read only by the gate after the whole matrix had run.
    from tests.runhelpers import capeval

    write_case(tmp_path, "alpha")
    broken = tmp_path / "broken.json"
    broken.write_text('{"version": 2, "cases": []}\n')
    stream = tmp_path / "r.jsonl"
    for baseline, words in [
        (tmp_path / "missing.json", "cannot read"),
        (broken, "version 3 files only"),
    ]:
        proc = capeval(tmp_path, "--jsonl", str(stream), "--baseline", str(baseline))
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith(f"capeval run: --baseline {baseline}: "), proc.stderr
        assert words in proc.stderr and "nothing was run" in proc.stderr
        assert not stream.exists()


@pytest.mark.slow
def test_agent_and_grader_see_the_workdirs_repository_whatever_git_variables_say(
    tmp_path: Path,
) -> None:
    # GIT_DIR & co. (git exports them to hooks, e.g. a pre-push hook running the
    # gate; CI sets them) were inherited by agents and graders: `git log` in the
    # workdir read, and `git commit` would write, the user's real repository.
    # The runner's own commit also wrote its objects where GIT_OBJECT_DIRECTORY said.
    import subprocess

    from tests.runhelpers import PASSING_GRADER, capeval, read_rows, write_done

    other = tmp_path / "other"
    other.mkdir()
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "not the fixture"]):
        subprocess.run(
            ["git", "-c", "user.name=x", "-c", "user.email=x@x", *args], cwd=other, check=True
        )
    seen = 'test "$(cat seen.txt)" = "capeval fixture" || exit 4\n'
    grader = 'test "$(git log -1 --format=%s)" = "capeval fixture" || exit 3\n' + seen
    agent = [shell("git log -1 --format=%s > seen.txt"), write_done()]
    write_case(tmp_path, "alpha", verify=grader + PASSING_GRADER, trajectories={"oracle": agent})
    env = {
        "GIT_DIR": str(other / ".git"),
        "GIT_WORK_TREE": str(other),
        "GIT_OBJECT_DIRECTORY": str(other / ".git" / "objects"),
    }
    stream = tmp_path / "r.jsonl"
    proc = capeval(tmp_path, "--jsonl", str(stream), "-q", env=env)
    (row,) = read_rows(stream)
    assert proc.returncode == 0 and row["passed"] is True, row["error"]


def test_out_may_not_overwrite_the_baseline_the_run_is_gated_against(tmp_path: Path) -> None:
    # The v3 export replaced the baseline before the gate read it: the run was
    # compared with itself (always clean) and the baseline was gone.
    from tests.runhelpers import capeval

    write_case(tmp_path, "alpha")
    baseline = tmp_path / "baseline.json"
    baseline.write_text('{"version": 3, "cases": []}\n')
    proc = capeval(
        tmp_path,
        "--jsonl",
        str(tmp_path / "r.jsonl"),
        "--baseline",
        str(baseline),
        "--out",
        str(tmp_path / "sub" / ".." / "baseline.json"),
    )
    assert proc.returncode == 2, proc.stderr
    assert "is the --baseline file" in proc.stderr
    assert baseline.read_text() == '{"version": 3, "cases": []}\n'
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize(
    ("agent", "binary"),
    [
        ("type = 'claude-code'\ncommand = 'no-such-claude'", "no-such-claude"),
        ("type = 'command'\ncommand = 'no-such-agent --prompt {prompt}'", "no-such-agent"),
    ],
)
def test_an_agent_whose_binary_is_missing_is_refused_before_any_repeat(
    tmp_path: Path, agent: str, binary: str
) -> None:
    # Every repeat used to fail with "not found" in its row's `error` alone:
    # the screen showed a run of failures and the gate a regression.
    write_case(tmp_path, "alpha")
    (tmp_path / "capeval.toml").write_text(f"[agents.mine]\n{agent}\n")
    options = RunOptions(root=tmp_path, jsonl=tmp_path / "r.jsonl", matrix=("p:m@mine",))
    with pytest.raises(RunError) as info:
        plan_run(options)
    assert f"{binary!r} (agent 'mine')" in str(info.value)
    assert "[agents.mine]" in str(info.value)
    assert not (tmp_path / "r.jsonl").exists()
    # A dry run shows the plan, with the problem as a warning.
    plan = plan_run(RunOptions(**{**options.__dict__, "dry_run": True}))
    assert any(binary in w for w in plan.warnings)


def test_an_agent_found_on_path_is_not_refused(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    (tmp_path / "capeval.toml").write_text("[agents.mine]\ntype = 'codex'\ncommand = 'sh'\n")
    plan = plan_run(RunOptions(root=tmp_path, jsonl=tmp_path / "r.jsonl", matrix=("p:m@mine",)))
    assert [j.agent.name for j in plan.todo] == ["mine"]


@pytest.mark.parametrize(
    ("flag", "value"),
    [("repeats", 1), ("tiers", ("complex",)), ("cases", ("alpha",)), ("ask_permissions", True)],
)
def test_a_resume_flag_that_contradicts_the_stored_plan_is_refused(
    tmp_path: Path, flag: str, value: object
) -> None:
    # `--resume S --repeats 1` on a run of 2 (or `--tier`) quietly replaced the
    # plan: the stream's other rows left the table, the exit code and --out,
    # and the rewritten plan forgot them for every later resume.
    from capeval.runner.options import plan_path
    from capeval.runner.run import execute

    write_case(tmp_path, "alpha", verify="exit 1\n")
    write_case(tmp_path, "beta")
    stream = tmp_path / "rows.jsonl"
    first = execute(RunOptions(root=tmp_path, jsonl=stream, repeats=2, handle_signals=False))
    assert len(first.rows) == 4 and first.exit_code == 1
    stored = plan_path(stream).read_text()

    with pytest.raises(RunError) as info:
        plan_run(RunOptions(resume=stream, **{flag: value}))  # type: ignore[arg-type]
    message = str(info.value)
    # The plan named as the stream is, folder and all (it may be any of many runs).
    assert message.startswith(f"--resume {stream}: --") and f"({plan_path(stream)}: " in message
    assert "drop --" in message
    assert plan_path(stream).read_text() == stored

    # Saying again what the plan says is fine.
    same = plan_run(RunOptions(resume=stream, repeats=2))
    assert len(same.jobs) == 4 and same.todo == []
