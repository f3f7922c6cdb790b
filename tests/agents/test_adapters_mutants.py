"""Adapter rules a mutation audit found no test for: each test here failed on a one-line break.

Environment precedence (the user's agent config wins over what a run sets),
what counts as a runnable binary and a version, root-only sandbox flags,
Gemini's Vertex choice, how `agents check` aims a CLI at the scripted server
and judges its run, and how that server counts a multi-call step.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from capeval.agents import claude_code
from capeval.agents.base import AgentRequest
from capeval.agents.claude_code import ClaudeCodeAdapter
from capeval.agents.cliadapter import agent_environment, probe_version, resolve_binary
from capeval.agents.modelserver import Script, ScriptedCall, ScriptStep
from capeval.core.agentconfig import AgentConfig


def make_request(tmp_path: Path, **kw: object) -> AgentRequest:
    return AgentRequest(
        workdir=tmp_path / "work",
        prompt="go",
        provider="anthropic",
        model="claude-sonnet-4-5",
        case_dir=tmp_path,
        capture_dir=tmp_path / "capture",
        **kw,  # type: ignore[arg-type]
    )


def test_the_agents_configured_env_wins_over_what_the_run_sets(tmp_path: Path) -> None:
    # The runner puts TMPDIR (and EVAL_HTTP_URL) in the request; a user who
    # sets TMPDIR (or a config home) in [agents.NAME] env must get theirs.
    config = AgentConfig(
        name="cc",
        type="claude-code",
        env={"TMPDIR": "/mine", "CLAUDE_CONFIG_DIR": str(tmp_path / "my-login")},
    )
    request = make_request(
        tmp_path, env={"TMPDIR": "/run", "CLAUDE_CONFIG_DIR": str(tmp_path / "request")}
    )
    env = agent_environment(config, request, {"TMPDIR": "/adapter"})
    assert env["TMPDIR"] == "/mine"
    # The session log is read from the home the CLI was really given.
    adapter = ClaudeCodeAdapter(config)
    assert adapter.environment(request)["CLAUDE_CONFIG_DIR"] == str(tmp_path / "my-login")
    assert adapter.home_of(request, "CLAUDE_CONFIG_DIR", "claude-config") == tmp_path / "my-login"


def test_a_file_that_is_not_executable_is_no_binary(tmp_path: Path) -> None:
    # `agents list` said "found" for a script without its x bit; the run then
    # failed with a bare OSError instead of "not found: fix `command`".
    script = tmp_path / "agent"
    script.write_text("#!/bin/sh\necho 1.0.0\n")
    script.chmod(0o644)
    assert resolve_binary(str(script)) is None
    script.chmod(0o755)
    assert resolve_binary(str(script)) == str(script)


def test_a_version_printed_by_a_failing_command_is_no_version(tmp_path: Path) -> None:
    # `agent --version` exiting 1 with "error: node 18.2.0 is too old" is not
    # the agent's version 18.2.0; rows would record it as agentVersion.
    cli = tmp_path / "agent"
    cli.write_text(
        f"#!{sys.executable}\nimport sys\nprint('error: node 18.2.0 too old')\nsys.exit(1)\n"
    )
    cli.chmod(0o755)
    assert probe_version(str(cli), cwd=tmp_path) is None


def test_is_sandbox_is_set_only_to_skip_permissions_as_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # IS_SANDBOX tells Claude Code it may skip permission prompts as root:
    # never set it for a run that asked to keep the prompts, nor as a user.
    monkeypatch.delenv("IS_SANDBOX", raising=False)
    adapter = ClaudeCodeAdapter(AgentConfig(name="cc", type="claude-code"))
    monkeypatch.setattr(claude_code, "is_root", lambda: True)
    assert adapter.cli_env(make_request(tmp_path))["IS_SANDBOX"] == "1"
    assert "IS_SANDBOX" not in adapter.cli_env(make_request(tmp_path, skip_permissions=False))
    monkeypatch.setattr(claude_code, "is_root", lambda: False)
    assert "IS_SANDBOX" not in adapter.cli_env(make_request(tmp_path))


def test_a_step_with_parallel_calls_takes_as_many_results_as_calls() -> None:
    # The step answered is the count of tool results so far: a step of two
    # parallel calls needs both results before the next step is due.
    two = ScriptStep("both", (ScriptedCall("Bash", {}), ScriptedCall("Read", {})))
    one = ScriptStep("one", (ScriptedCall("Bash", {}),))
    script = Script((one, two, ScriptStep("last")))
    assert [script.step_for(n).text for n in (0, 1, 3, 4)] == ["one", "both", "last", "done"]


def test_an_env_that_asks_for_vertex_gets_vertex_even_beside_an_api_key(tmp_path: Path) -> None:
    # Gemini's own precedence: GOOGLE_GENAI_USE_VERTEXAI=true picks Vertex AI
    # over a GEMINI_API_KEY that is also set (a shell often has both).
    from capeval.agents.gemini import auth_type

    env = {"HOME": str(tmp_path), "GEMINI_API_KEY": "k", "GOOGLE_GENAI_USE_VERTEXAI": "true"}
    assert auth_type({}, env) == "vertex-ai"
    assert (
        auth_type({"GOOGLE_GENAI_USE_VERTEXAI": "true", "GEMINI_API_KEY": "k"}, {}) == "vertex-ai"
    )


def test_agents_check_aims_a_vertex_configured_gemini_at_the_scripted_server(
    tmp_path: Path,
) -> None:
    # An [agents.NAME] env choosing Vertex AI would send the check's requests
    # to Google instead of the loopback server: the check switches it off.
    from capeval.agents.check import ENDPOINTS
    from capeval.agents.gemini import auth_type

    config = AgentConfig(name="g", type="gemini", env={"GOOGLE_GENAI_USE_VERTEXAI": "true"})
    aimed = ENDPOINTS["gemini"].configure(config, "http://127.0.0.1:9", tmp_path)
    assert aimed.env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:9"
    assert auth_type(aimed.env, {"HOME": str(tmp_path)}) == "gemini-api-key"


def _check_result(command: str, turns: int) -> Any:
    from capeval.agents.base import AgentResult
    from capeval.agents.streams import make_call
    from capeval.core.turns import RunSummary, Turn

    shown = [Turn(0, ("Checking.",), (make_call("c1", "Bash", {"command": command}),))]
    shown += [Turn(i, ("done",)) for i in range(1, turns)]
    summary = RunSummary(turnsUsed=turns, toolCallCount=1, turns=tuple(shown))
    return AgentResult(
        exitCode=0, status="done", sessionId="s1", turnsUsed=turns, toolCallCount=1, summary=summary
    )


@pytest.mark.parametrize(
    ("command", "turns", "written", "failing"),
    [
        ("echo capeval-check > check.txt && cat check.txt", 2, True, None),
        # The scripted model answered twice: a parser that saw one response is broken.
        ("echo capeval-check > check.txt && cat check.txt", 1, True, "stream parsed"),
        # The stream claims success but the command never ran in the workdir.
        ("echo capeval-check > check.txt && cat check.txt", 2, False, "headless run"),
        # The chained command was parsed as one segment: behaviors are wrong.
        ("echo capeval-check", 2, True, "behaviors"),
    ],
)
def test_agents_check_fails_the_step_that_went_wrong(
    tmp_path: Path, command: str, turns: int, written: bool, failing: str | None
) -> None:
    from capeval.agents.check import CHECK_FILE, CheckReport, _judge_run

    if written:
        (tmp_path / CHECK_FILE).write_text("capeval-check\n")
    report = CheckReport(agent="a", type="claude-code")
    _judge_run(report, _check_result(command, turns), tmp_path, requests=turns)
    assert [s.name for s in report.steps if s.ok is False] == ([failing] if failing else [])
    assert report.ok is (failing is None)


def test_agents_check_sends_claude_no_token_of_the_users(tmp_path: Path) -> None:
    # Claude Code prefers ANTHROPIC_AUTH_TOKEN to the API key: a user's token
    # from [agents.NAME] env would be the credential the check's run sends.
    from capeval.agents.check import ENDPOINTS

    config = AgentConfig(name="c", type="claude-code", env={"ANTHROPIC_AUTH_TOKEN": "sk-mine"})
    aimed = ENDPOINTS["claude-code"].configure(config, "http://127.0.0.1:9", tmp_path)
    assert aimed.env["ANTHROPIC_AUTH_TOKEN"] == ""  # over the shell's, too
    assert aimed.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert aimed.env["ANTHROPIC_API_KEY"] == "capeval-check"


def test_url_placeholder_skips_the_model_servers_own_address() -> None:
    # A CLI that names its endpoint in the prompt must not have its scripted
    # curl aimed back at the model server instead of the HTTP fixture.
    from capeval.agents.modelserver import _find_url

    texts = ["base http://127.0.0.1:5000/v1/messages then http://127.0.0.1:6000/page."]
    assert _find_url(iter(texts), "http://127.0.0.1:5000") == "http://127.0.0.1:6000/page"


def test_agents_check_turns_off_the_users_claude_provider_switches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CLAUDE_CODE_USE_BEDROCK=1 in the user's shell sent the offline check to
    # Bedrock (the real CLI: "Could not load AWS credentials", or a paid call).
    from capeval.agents.check import ENDPOINTS

    monkeypatch.setenv("CLAUDE_CODE_USE_BEDROCK", "1")
    config = AgentConfig(name="c", type="claude-code", env={"CLAUDE_CODE_USE_FOUNDRY": "1"})
    aimed = ENDPOINTS["claude-code"].configure(config, "http://127.0.0.1:9", tmp_path)
    assert aimed.env["CLAUDE_CODE_USE_BEDROCK"] == ""
    assert aimed.env["CLAUDE_CODE_USE_FOUNDRY"] == ""
