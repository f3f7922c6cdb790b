"""`capeval agents list` / `capeval agents check`, without the real CLIs.

The real Claude Code, Codex, opencode and Gemini CLI are checked in
tests/agents/test_real_cli_agents.py; here stand-in binaries cover the paths that
must not depend on npm: a missing binary, an agent with no custom endpoint
(a `command` agent), a CLI whose run fails, the scripted agent, bad names
and the JSON shape; and, without any binary, how the check aims each CLI at
the scripted model server and judges the run it got.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from capeval.agents.check import check_agent, list_agents
from capeval.cli import main
from capeval.core.agentconfig import AgentConfig

STAND_IN = f"#!{sys.executable}\nimport sys\nprint('9.8.7 (stand-in)')\n"


@pytest.fixture
def stand_in(tmp_path: Path) -> Path:
    path = tmp_path / "stand-in"
    path.write_text(STAND_IN)
    path.chmod(0o755)
    return path


@pytest.fixture
def workspace(tmp_path: Path, stand_in: Path) -> Path:
    root = tmp_path / "ws"
    (root / "evals" / "capability" / "cases").mkdir(parents=True)
    (root / "capeval.toml").write_text(
        'agent = "gem"\n'
        f'[agents.gem]\ntype = "command"\ncommand = "{stand_in} {{prompt}}"\n'
        f'[agents.broken-claude]\ntype = "claude-code"\ncommand = "{stand_in}"\n'
        '[agents.gone]\ntype = "codex"\ncommand = "/nonexistent/codex"\n'
        '[agents.corbits]\ntype = "command"\ncommand = "no-such-corbits exec {prompt}"\n'
    )
    return root


def test_list_shows_every_agent_and_whether_it_is_found(workspace: Path, stand_in: Path) -> None:
    out = CliRunner().invoke(main, ["agents", "list", "--root", str(workspace), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["default"] == "gem"
    rows = {r["name"]: r for r in data["agents"]}
    assert rows["gem"]["found"] is True and rows["gem"]["path"] == str(stand_in)
    assert rows["gone"]["found"] is False
    assert rows["corbits"]["binary"] == "no-such-corbits" and rows["corbits"]["found"] is False
    assert rows["scripted"]["found"] is True  # built in
    text = CliRunner().invoke(main, ["agents", "list", "--root", str(workspace)])
    assert "* gem" in text.output and "NOT FOUND" in text.output


def test_check_without_custom_endpoint_says_so_and_passes(workspace: Path) -> None:
    out = CliRunner().invoke(main, ["agents", "check", "--root", str(workspace), "--json"])
    assert out.exit_code == 0, out.output  # NAME defaults to the configured agent
    report = json.loads(out.output)
    assert report["agent"] == "gem" and report["ok"] is True
    steps = {s["name"]: s for s in report["steps"]}
    assert steps["binary"]["ok"] is True
    assert steps["version"] == {"name": "version", "ok": True, "detail": "9.8.7"}
    assert steps["headless run"]["ok"] is None
    assert "no custom model endpoint" in steps["headless run"]["detail"]


def test_check_fails_when_the_headless_run_fails(workspace: Path) -> None:
    out = CliRunner().invoke(
        main, ["agents", "check", "broken-claude", "--root", str(workspace), "--timeout", "20"]
    )
    assert out.exit_code == 1, out.output
    assert "FAIL headless run" in out.output and "status failed" in out.output
    assert out.output.rstrip().endswith("=> FAILED")


def test_check_missing_binary_names_the_fix(workspace: Path) -> None:
    out = CliRunner().invoke(main, ["agents", "check", "gone", "--root", str(workspace)])
    assert out.exit_code == 1
    assert "[agents.gone]" in out.output


def test_check_unknown_agent_is_a_usage_error(workspace: Path) -> None:
    out = CliRunner().invoke(main, ["agents", "check", "nope", "--root", str(workspace)])
    assert out.exit_code == 2
    assert "unknown agent 'nope'" in out.output and "gem" in out.output


def test_check_outside_a_workspace_uses_the_builtin_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, ["agents", "check", "scripted", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["steps"][0]["detail"].startswith("built in")
    listed = CliRunner().invoke(main, ["agents", "list", "--json"])
    names = {r["name"] for r in json.loads(listed.output)["agents"]}
    assert {"scripted", "claude-code", "codex", "gemini", "opencode"} <= names


def test_python_api_matches_the_command(stand_in: Path) -> None:
    config = AgentConfig(name="g", type="command", command=f"{stand_in} {{prompt}}")
    report = check_agent(config)
    assert report.ok and [s.name for s in report.steps] == ["binary", "version", "headless run"]
    (row,) = list_agents({"g": config})
    assert row == {
        "name": "g",
        "type": "command",
        "binary": str(stand_in),
        "path": str(stand_in),
        "found": True,
    }


def test_agents_check_defaults_to_the_agent_run_defaults_to(tmp_path: Path) -> None:
    from tests.clirun import capeval

    # Outside a workspace (no configured default), run plays `scripted`; so does check.
    done = capeval("agents", "check", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("scripted (scripted)")
    listed = capeval("agents", "list", cwd=tmp_path)
    assert "* scripted" in listed.stdout


def test_check_defaults_to_the_agent_the_configured_matrix_plays(
    tmp_path: Path, stand_in: Path
) -> None:
    # `matrix = ["local:v1@mine"]` with no `agent` runs only `mine`; a bare
    # `capeval agents check` checked the built-in `scripted` and said "ok".
    (tmp_path / "evals" / "capability" / "cases").mkdir(parents=True)
    (tmp_path / "capeval.toml").write_text(
        'matrix = ["local:v1@mine"]\n[agents.mine]\ntype = "command"\n'
        'command = "/nonexistent/mine {prompt}"\n'
    )
    out = CliRunner().invoke(main, ["agents", "check", "--root", str(tmp_path)])
    assert out.exit_code == 1, out.output
    assert out.output.startswith("mine (command)") and "[agents.mine]" in out.output


@pytest.mark.parametrize(
    ("command", "template"),
    [("sh -c 'echo {prompt}", "does not split: No closing quotation"), ("   ", "is empty")],
)
def test_check_of_an_unusable_template_says_what_is_wrong(command: str, template: str) -> None:
    # An unclosed quote read as the whole template "not found: install it",
    # a blank one as "None not found".
    report = check_agent(AgentConfig(name="x", type="command", command=command))
    assert not report.ok
    (step,) = report.steps
    assert template in step.detail and "fix `command` in [agents.x]" in step.detail
    assert "not found" not in step.detail


@pytest.mark.parametrize(
    "args",
    [
        ["agents", "list", "--json"],
        ["agents", "check", "--json"],
        ["agents", "check", "nope", "--json"],
    ],
)
def test_agents_json_errors_are_json(tmp_path: Path, args: list[str]) -> None:
    # `capeval agents list --json | jq` read nothing from a broken capeval.toml.
    (tmp_path / "evals" / "capability" / "cases").mkdir(parents=True)
    broken = "nope" not in args
    (tmp_path / "capeval.toml").write_text("repeat = 3\n" if broken else "")
    out = CliRunner().invoke(main, [*args, "--root", str(tmp_path)])
    assert out.exit_code == 2
    doc = json.loads(out.stdout)
    assert doc["exitCode"] == 2
    assert ("repeat: unknown field" if broken else "unknown agent 'nope'") in doc["errors"][0]


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
