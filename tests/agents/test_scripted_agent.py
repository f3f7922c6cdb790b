"""The scripted agent: every tool call runs for real, turns are timed, and the
adapter goes through a real subprocess like any agent CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from capeval.agents.base import AgentRequest
from capeval.agents.scripted import ScriptedAdapter
from capeval.agents.scripted_player import estimate_tokens, play
from capeval.agents.trajectory import parse_trajectory
from capeval.core.agentconfig import AgentConfig
from capeval.core.turns import RunSummary
from capeval.runner.httpfixture import HttpFixture
from tests.casefactory import write_case


def call(name: str, id: str | None = None, **arguments: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "arguments": arguments}
    if id is not None:
        out["id"] = id
    return out


def run(
    tmp_path: Path, *turns: dict[str, Any], http_url: str | None = None, **top: Any
) -> RunSummary:
    trajectory = parse_trajectory({"turns": list(turns), **top}, "t")
    return play(trajectory, workdir=tmp_path, prompt="do it", http_url=http_url, env=os.environ)


def results(summary: RunSummary) -> dict[str, str | None]:
    return {c.id: c.result for t in summary.turns for c in t.toolCalls}


# --- each tool kind, for real --------------------------------------------------


def test_run_shell_runs_bash_in_the_workdir(tmp_path: Path) -> None:
    s = run(tmp_path, {"toolCalls": [call("run_shell", "a", command="echo hi > f.txt; pwd")]})
    assert (tmp_path / "f.txt").read_text() == "hi\n"
    assert results(s)["a"] == f"{tmp_path.resolve()}\n"


def test_run_shell_failure_is_an_error_result_and_the_run_goes_on(tmp_path: Path) -> None:
    s = run(
        tmp_path,
        {"toolCalls": [call("run_shell", "bad", command="echo out; echo err >&2; exit 3")]},
        {"toolCalls": [call("run_shell", "next", command="echo next")]},
    )
    assert results(s)["bad"] == "error: out\nerr\n\n(exit code 3)"
    assert results(s)["next"] == "next\n"
    assert s.status == "done"


def test_run_shell_does_not_wait_for_background_jobs(tmp_path: Path) -> None:
    start = time.monotonic()
    run(tmp_path, {"toolCalls": [call("run_shell", command="sleep 3 &")]})
    assert time.monotonic() - start < 2


def test_run_shell_timeout(tmp_path: Path) -> None:
    s = run(tmp_path, {"toolCalls": [call("run_shell", "a", command="sleep 5", timeoutMs=200)]})
    assert "timed out after 0.2 s" in (results(s)["a"] or "")


def test_file_tools(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.py").write_text("alpha\nbeta\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("beta\n")
    s = run(
        tmp_path,
        {
            "toolCalls": [
                call("read_file", "r", path="sub/x.py"),
                call("write_file", "w", path="new/deep/y.txt", content="beta gamma\n"),
                call("edit_file", "e", path="sub/x.py", old="alpha\n", new="ALPHA\nalpha2\n"),
                call("grep", "g", pattern="^be"),
                call("grep", "g2", pattern="a", glob="*.py"),
                call("list_dir", "l"),
                call("list_dir", "l2", path="sub"),
            ]
        },
    )
    r = results(s)
    assert r["r"] == "alpha\nbeta\n"
    assert (tmp_path / "new" / "deep" / "y.txt").read_text() == "beta gamma\n"
    assert (tmp_path / "sub" / "x.py").read_text() == "ALPHA\nalpha2\nbeta\n"
    assert r["g"] == "new/deep/y.txt:1:beta gamma\nsub/x.py:3:beta"  # .git is skipped
    assert r["g2"] == "sub/x.py:2:alpha2\nsub/x.py:3:beta"
    assert r["l"] == "new/\nsub/"
    assert r["l2"] == "x.py"


@pytest.mark.parametrize(("content", "count"), [("x\n", 0), ("old old\n", 2)])
def test_edit_file_needs_exactly_one_occurrence(tmp_path: Path, content: str, count: int) -> None:
    (tmp_path / "f").write_text(content)
    s = run(tmp_path, {"toolCalls": [call("edit_file", "e", path="f", old="old", new="new")]})
    assert (
        results(s)["e"]
        == f"error: the old text occurs {count} times in f; it must occur exactly once"
    )
    assert (tmp_path / "f").read_text() == content


def test_file_tools_refuse_paths_outside_the_workdir(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    s = run(work, {"toolCalls": [call("write_file", "w", path="../escape.txt", content="x")]})
    assert "outside the workdir" in (results(s)["w"] or "")
    assert not (tmp_path / "escape.txt").exists()


def test_web_fetch_is_a_real_get_and_templates_carry_the_token(tmp_path: Path) -> None:
    with HttpFixture() as http:
        s = run(
            tmp_path,
            {"toolCalls": [call("web_fetch", "page", url="{{HTTP_URL}}/")]},
            {
                "toolCalls": [
                    call(
                        "write_file",
                        path="token.txt",
                        content='{{result:page|re:id="token">([0-9a-f]+)<}}',
                    )
                ]
            },
            http_url=http.url,
        )
        assert http.requests == ["/"]
        assert (tmp_path / "token.txt").read_text() == http.token
    fetch = s.turns[0].toolCalls[0]
    assert fetch.arguments == {"url": f"{http.url}/"}  # recorded as sent
    assert http.token in (fetch.result or "")


def test_web_fetch_http_error_and_non_loopback(tmp_path: Path) -> None:
    with HttpFixture() as http:
        s = run(
            tmp_path,
            {
                "toolCalls": [
                    call("web_fetch", "missing", url=f"{http.url}/nope"),
                    call("web_fetch", "far", url="http://example.com/"),
                ]
            },
        )
    assert results(s)["missing"] == f"error: HTTP 404 for {http.url}/nope"
    assert "only fetches from loopback" in (results(s)["far"] or "")


def test_a_failed_template_skips_the_call(tmp_path: Path) -> None:
    s = run(
        tmp_path,
        {"toolCalls": [call("run_shell", "a", command="echo nothing here")]},
        {"toolCalls": [call("write_file", "w", path="x", content="{{result:a|re:token=(\\w+)}}")]},
    )
    assert not (tmp_path / "x").exists()
    assert "no match in the result of 'a'" in (results(s)["w"] or "")


def test_task_runs_its_calls_and_reports_them(tmp_path: Path) -> None:
    nested = [call("write_file", path="a.txt", content="A"), call("read_file", path="a.txt")]
    s = run(
        tmp_path,
        {"toolCalls": [call("task", "sub", description="write then read", calls=nested)]},
        {"toolCalls": [call("run_shell", "use", command="echo '{{result:sub.1}}'")]},
    )
    assert results(s)["sub"] == "[sub.0] wrote 1 bytes to a.txt\n[sub.1] A"
    assert results(s)["use"] == "A\n"
    # The sub-agent's calls are its own stream: the parent records one call.
    assert [c.name for c in s.turns[0].toolCalls] == ["task"]


# --- timing ---------------------------------------------------------------------


def test_turn_duration_covers_think_time_and_tool_time(tmp_path: Path) -> None:
    s = run(
        tmp_path,
        {"text": "think", "thinkMs": 200},
        {"toolCalls": [call("run_shell", command="sleep 0.3")]},
        {"text": "quick"},
    )
    durations = [t.durationMs or 0 for t in s.turns]
    assert 200 <= durations[0] < 1000
    assert 300 <= durations[1] < 1500
    assert durations[2] < 100
    assert s.durationMs is not None and s.durationMs >= sum(durations)


def test_a_background_task_is_charged_only_to_the_turn_that_waits(tmp_path: Path) -> None:
    job = call(
        "task",
        "job",
        description="slow",
        background=True,
        calls=[call("run_shell", command="sleep 0.6; echo built")],
    )
    s = run(
        tmp_path,
        {"toolCalls": [job]},
        {"text": "meanwhile", "thinkMs": 200},
        {"toolCalls": [call("write_file", path="out", content="{{result:job|re:built}}")]},
    )
    durations = [t.durationMs or 0 for t in s.turns]
    assert durations[0] < 500  # started, not waited for (the job takes 600 ms)
    assert 200 <= durations[1] < 600
    assert durations[2] >= 150  # waited for the rest of the job
    assert (tmp_path / "out").read_text() == "built"
    # The stream shows what the agent saw when it dispatched the job.
    assert results(s)["job"] == "task job started in the background"


def test_the_run_waits_for_unfinished_background_tasks(tmp_path: Path) -> None:
    job = call(
        "task",
        description="d",
        background=True,
        calls=[call("run_shell", command="sleep 0.3; echo done > late.txt")],
    )
    run(tmp_path, {"toolCalls": [job]})
    assert (tmp_path / "late.txt").read_text() == "done\n"


# --- the summary ----------------------------------------------------------------


def test_summary_has_the_corbits_shape(tmp_path: Path) -> None:
    s = run(
        tmp_path,
        {"text": "look", "toolCalls": [call("list_dir"), call("list_dir", path=".")]},
        {"text": "done"},
        exitCode=0,
    )
    obj = s.to_json()
    assert obj["status"] == "done" and obj["turnsUsed"] == 2 and obj["toolCallCount"] == 2
    assert obj["startedAt"].endswith("Z") and obj["finishedAt"] >= obj["startedAt"]
    turn = obj["turns"][0]
    assert turn["turnIndex"] == 0
    assert turn["assistantTurn"] == {"content": [{"type": "text", "text": "look"}]}
    assert [c["id"] for c in turn["toolCalls"]] == ["t0c0", "t0c1"]
    assert obj["turns"][1]["toolCalls"] == []


def test_token_estimate_is_deterministic_chars_over_four() -> None:
    t = parse_trajectory(
        {
            "turns": [
                {"text": "abcd", "toolCalls": [call("web_fetch", url="{{HTTP_URL}}")]},
                {"text": "efgh"},
            ]
        },
        "t",
    )
    usage = estimate_tokens(t, "p" * 10)
    args_chars = len(json.dumps({"url": "{{HTTP_URL}}"}, sort_keys=True))
    assert usage.input == 3 * 2  # ceil(10 / 4) per turn
    assert usage.output == -(-(8 + args_chars) // 4)
    assert usage.cacheRead == usage.cacheWrite == usage.thinking == 0


# --- the player process ---------------------------------------------------------


def player_argv(traj: Path, summary: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-P",
        "-m",
        "capeval.agents.scripted_player",
        "--trajectory",
        str(traj),
        "--summary",
        str(summary),
        *extra,
    ]


def test_player_process_writes_the_summary_and_exits_with_the_trajectory_code(
    tmp_path: Path,
) -> None:
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    out.mkdir()
    traj = out / "t.json"
    traj.write_text(json.dumps({"turns": [{"text": "gave up"}], "exitCode": 3, "error": "nope"}))
    proc = subprocess.run(player_argv(traj, out / "s.json"), cwd=work, capture_output=True)
    assert proc.returncode == 3
    summary = json.loads((out / "s.json").read_text())
    assert summary["status"] == "failed" and summary["error"] == "nope"
    assert list(work.iterdir()) == []  # nothing of the agent's own lands in the workdir


def test_player_stopped_by_sigterm_records_the_turns_so_far(tmp_path: Path) -> None:
    traj = tmp_path / "t.json"
    traj.write_text(
        json.dumps(
            {
                "turns": [
                    {"text": "first", "toolCalls": [call("run_shell", command="echo 1 > one")]},
                    {"toolCalls": [call("run_shell", command="sleep 20; echo 2 > two")]},
                ]
            }
        )
    )
    summary = tmp_path / "s.json"
    proc = subprocess.Popen(player_argv(traj, summary), cwd=tmp_path, start_new_session=True)
    deadline = time.monotonic() + 10
    while not (tmp_path / "one").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(10) == 128 + signal.SIGTERM
    obj = json.loads(summary.read_text())
    assert obj["status"] == "cancelled" and obj["turnsUsed"] == 1
    assert "SIGTERM" in obj["error"]
    assert not (tmp_path / "two").exists()
    # Tokens of the turn it played, not of the turn it never got to.
    written = len("first") + len(json.dumps({"command": "echo 1 > one"}, sort_keys=True))
    assert obj["tokenUsage"]["output"] == -(-written // 4)
    played = parse_trajectory(json.loads(traj.read_text()), "t")
    assert obj["tokenUsage"] == estimate_tokens(played, "", 1).to_json()


# --- the adapter ----------------------------------------------------------------


def make_case(tmp_path: Path, trajectories: dict[str, Any]) -> tuple[Path, Path, Path]:
    case_dir, work, capture = tmp_path / "case", tmp_path / "work", tmp_path / "capture"
    (case_dir / "trajectories").mkdir(parents=True)
    work.mkdir()
    for name, obj in trajectories.items():
        text = obj if isinstance(obj, str) else json.dumps(obj)
        (case_dir / "trajectories" / f"{name}.json").write_text(text)
    return case_dir, work, capture


def request(case_dir: Path, work: Path, capture: Path, **kw: Any) -> AgentRequest:
    fields: dict[str, Any] = {
        "workdir": work,
        "prompt": "p" * 40,
        "provider": "scripted",
        "model": "oracle",
        "case_dir": case_dir,
        "capture_dir": capture,
        "timeout_s": 30.0,
    }
    fields.update(kw)
    return AgentRequest(**fields)


def adapter(trajectory: str | None = None) -> ScriptedAdapter:
    return ScriptedAdapter(AgentConfig(name="scripted", type="scripted", trajectory=trajectory))


ORACLE = {
    "turns": [
        {"text": "writing", "toolCalls": [call("write_file", path="x.txt", content="x")]},
        {"toolCalls": [call("run_shell", command="cat x.txt")]},
        {"text": "All done: x.txt written."},
    ]
}


def test_adapter_plays_the_model_named_trajectory_in_a_subprocess(tmp_path: Path) -> None:
    case_dir, work, capture = make_case(tmp_path, {"oracle": ORACLE})
    result = adapter().run(request(case_dir, work, capture))
    assert result.error is None
    assert (result.status, result.exitCode) == ("done", 0)
    assert (result.provider, result.model) == ("scripted", "oracle")
    assert uuid.UUID(result.sessionId or "")
    assert (result.turnsUsed, result.toolCallCount) == (3, 2)
    assert result.tokenUsage is not None and result.tokenUsage.input == 10 * 3
    assert result.textPreview == "All done: x.txt written."
    assert result.durationMs is not None and result.durationMs > 0
    assert result.summary is not None and len(result.summary.turns) == 3
    assert result.agentVersion and result.agentVersion.startswith("scripted-")
    assert (work / "x.txt").read_text() == "x"
    # The capture lives outside the workdir: the grader cannot see it.
    assert sorted(p.name for p in work.iterdir()) == ["x.txt"]
    assert (capture / "scripted-summary.json").is_file()


def test_agent_entry_trajectory_wins_over_the_model(tmp_path: Path) -> None:
    sloppy = {"turns": [{"toolCalls": [call("write_file", path="who", content="sloppy")]}]}
    case_dir, work, capture = make_case(tmp_path, {"oracle": ORACLE, "sloppy": sloppy})
    req = request(case_dir, work, capture, provider="anthropic", model="claude-x")
    result = adapter("sloppy").run(req)
    assert result.status == "done"
    assert (work / "who").read_text() == "sloppy"
    # It stands in for an agent build on the requested model: no provider mismatch.
    assert (result.provider, result.model) == ("anthropic", "claude-x")


def test_missing_trajectory_fails_with_a_clear_error(tmp_path: Path) -> None:
    case_dir, work, capture = make_case(tmp_path, {"oracle": ORACLE})
    result = adapter().run(request(case_dir, work, capture, model="nope"))
    assert result.status == "failed" and result.summary is None
    assert "trajectories/nope.json" in (result.error or "")
    assert "does not exist" in (result.error or "")
    assert list(work.iterdir()) == []


def test_the_scripted_agent_plays_nothing_outside_trajectories(tmp_path: Path) -> None:
    # `../../x` played `cases/x.json`, a file the case never shipped as a trajectory.
    case_dir = write_case(tmp_path, "alpha")
    outside = case_dir.parent / "x.json"
    call = {"name": "write_file", "arguments": {"path": "played.txt", "content": "x"}}
    outside.write_text(json.dumps({"turns": [{"toolCalls": [call]}]}))
    work = tmp_path / "work"
    work.mkdir()
    request = AgentRequest(
        workdir=work,
        prompt="p",
        provider="scripted",
        model="oracle",
        case_dir=case_dir,
        capture_dir=tmp_path / "capture",
        timeout_s=30.0,
    )
    config = AgentConfig(name="s", type="scripted", trajectory="../../x")
    result = ScriptedAdapter(config).run(request)
    assert result.status == "failed"
    assert "trajectory name '../../x' must be a file name" in (result.error or "")
    assert not (work / "played.txt").exists()


def test_ill_formed_trajectory_fails_naming_the_field(tmp_path: Path) -> None:
    bad = {"turns": [{"toolCalls": [{"name": "run_shell", "arguments": {}}]}]}
    case_dir, work, capture = make_case(tmp_path, {"oracle": bad})
    result = adapter().run(request(case_dir, work, capture))
    assert result.status == "failed"
    assert "turns[0].toolCalls[0].arguments.command: missing" in (result.error or "")


def test_failing_trajectory_reports_its_exit_code_and_status(tmp_path: Path) -> None:
    failing = {"turns": [{"text": "cannot"}], "exitCode": 1, "error": "model refused"}
    case_dir, work, capture = make_case(tmp_path, {"oracle": failing})
    result = adapter().run(request(case_dir, work, capture))
    assert (result.status, result.exitCode, result.error) == ("failed", 1, "model refused")


@pytest.mark.slow
def test_timeout_kills_the_player_and_its_shells(tmp_path: Path) -> None:
    slow = {
        "turns": [
            {"toolCalls": [call("run_shell", command="sleep 0.2; echo started > a")]},
            {"toolCalls": [call("run_shell", command="sleep 30; echo late > b")]},
        ]
    }
    case_dir, work, capture = make_case(tmp_path, {"oracle": slow})
    start = time.monotonic()
    result = adapter().run(request(case_dir, work, capture, timeout_s=3.0))
    assert time.monotonic() - start < 10
    assert result.status == "timeout" and "timed out" in (result.error or "")
    assert (work / "a").exists() and not (work / "b").exists()
    # SIGTERM let the player record the turns it had played.
    assert result.summary is not None and result.turnsUsed == 1


def test_the_http_token_is_not_passed_to_the_agent(tmp_path: Path) -> None:
    traj = {"turns": [{"toolCalls": [call("run_shell", command="env > env.txt")]}]}
    case_dir, work, capture = make_case(tmp_path, {"oracle": traj})
    env = {"EVAL_HTTP_URL": "http://127.0.0.1:1", "EVAL_HTTP_TOKEN": "s3cret"}
    result = adapter().run(request(case_dir, work, capture, env=env))
    assert result.status == "done"
    seen = (work / "env.txt").read_text()
    assert "EVAL_HTTP_URL=http://127.0.0.1:1" in seen and "s3cret" not in seen


def test_workdir_modules_cannot_shadow_the_player(tmp_path: Path) -> None:
    case_dir, work, capture = make_case(tmp_path, {"oracle": ORACLE})
    (work / "json.py").write_text("raise SystemExit('shadowed')\n")
    (work / "capeval").mkdir()
    (work / "capeval" / "__init__.py").write_text("raise SystemExit('shadowed')\n")
    result = adapter().run(request(case_dir, work, capture))
    assert (result.status, result.error) == ("done", None)
