"""The real Claude Code, Codex, opencode and Gemini CLI binaries, end to end, offline.

The pinned CLIs come from the npm registry (`python3 tests/agent_clis.py
install`, which `.ci/run` does); capeval's scripted model server on loopback
answers their model requests, and the CLIs really run the scripted tool calls
in the workdir: chained shell commands, an edit via `sed -i`, a write with
their own edit tool, and a curl of the hermetic HTTP page. When a CLI is not
installed these tests skip and say why; they never pass without it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from capeval.agents.base import AgentRequest
from capeval.agents.check import ENDPOINTS
from capeval.agents.modelserver import (
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    THOUGHT_TOKENS,
    ModelServer,
    Script,
)
from capeval.agents.registry import make_adapter
from capeval.core.agentconfig import AgentConfig
from capeval.runner.httpfixture import HttpFixture
from tests.agent_clis import find_cli, missing_reason
from tests.agentrun import agent_table, capeval_run
from tests.runhelpers import read_rows

pytestmark = [pytest.mark.slow, pytest.mark.realcli]

SETUP = "cd . && echo one > notes.txt && cat notes.txt | wc -l"  # 4 chain segments
SED = "sed -i 's/one/two/' notes.txt"
FETCH = "curl -s {{URL}}/token.txt > token.txt"

# One list per CLI, in its own tool vocabulary; each step is one model response.
SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "claude-code": [
        {"text": "Setting up.", "calls": [{"name": "Bash", "input": {"command": SETUP}}]},
        {"calls": [{"name": "Bash", "input": {"command": SED}}]},
        {
            "calls": [
                {
                    "name": "Write",
                    "input": {"file_path": "{{CWD}}/answer.txt", "content": "hello\n"},
                }
            ]
        },
        {
            "calls": [
                {
                    "name": "Edit",
                    "input": {
                        "file_path": "{{CWD}}/answer.txt",
                        "old_string": "hello",
                        "new_string": "world",
                    },
                }
            ]
        },
        {"calls": [{"name": "Bash", "input": {"command": FETCH}}]},
    ],
    "codex": [
        {"text": "Setting up.", "calls": [{"name": "exec_command", "input": {"cmd": SETUP}}]},
        {"calls": [{"name": "exec_command", "input": {"cmd": SED}}]},
        {
            "calls": [
                {
                    "name": "apply_patch",
                    "input": "*** Begin Patch\n*** Add File: answer.txt\n+world\n*** End Patch\n",
                }
            ]
        },
        {"calls": [{"name": "exec_command", "input": {"cmd": FETCH}}]},
    ],
    # opencode speaks the Anthropic Messages API here (its `anthropic` provider, re-aimed).
    "opencode": [
        {"text": "Setting up.", "calls": [{"name": "bash", "input": {"command": SETUP}}]},
        {"calls": [{"name": "bash", "input": {"command": SED}}]},
        {
            "calls": [
                {"name": "write", "input": {"filePath": "{{CWD}}/answer.txt", "content": "hello\n"}}
            ]
        },
        {
            "calls": [
                {
                    "name": "edit",
                    "input": {
                        "filePath": "{{CWD}}/answer.txt",
                        "oldString": "hello",
                        "newString": "world",
                    },
                }
            ]
        },
        {"calls": [{"name": "bash", "input": {"command": FETCH}}]},
    ],
    "gemini": [
        {
            "text": "Setting up.",
            "calls": [
                {"name": "run_shell_command", "input": {"command": SETUP, "description": "setup"}}
            ],
        },
        {"calls": [{"name": "run_shell_command", "input": {"command": SED, "description": "sed"}}]},
        {
            "calls": [
                {
                    "name": "write_file",
                    "input": {"file_path": "{{CWD}}/answer.txt", "content": "hello\n"},
                }
            ]
        },
        {
            "calls": [
                {
                    "name": "replace",
                    "input": {
                        "file_path": "{{CWD}}/answer.txt",
                        "instruction": "Say world instead of hello.",
                        "old_string": "hello",
                        "new_string": "world",
                    },
                }
            ]
        },
        {
            "calls": [
                {"name": "run_shell_command", "input": {"command": FETCH, "description": "fetch"}}
            ]
        },
    ],
}
CLIS = list(SCRIPTS)
# Model responses: the scripted steps plus the final "done".
TURNS = {name: len(steps) + 1 for name, steps in SCRIPTS.items()}
# Thinking tokens each CLI reports: the scripted server reports thoughts on
# Gemini's wire only, and Gemini CLI 0.61 shows them in its chat log alone.
THINKING = {name: THOUGHT_TOKENS * TURNS[name] if name == "gemini" else None for name in SCRIPTS}
# The provider/model each CLI is asked for: the ones `capeval agents check` aims at its
# scripted server, so tests and the check share one way of wiring each CLI.
MODELS = {name: (ENDPOINTS[name].provider, ENDPOINTS[name].model) for name in SCRIPTS}

VERIFY = textwrap.dedent(
    """\
    set -eu
    grep -qx two notes.txt
    grep -qx world answer.txt
    [ "$(cat token.txt)" = "$EVAL_HTTP_TOKEN" ]
    """
)


def cli_path(name: str) -> Path:
    path = find_cli(name)
    if path is None:
        pytest.skip(missing_reason(name))
    return path


def endpoint_env_args(name: str, url: str, scratch: Path) -> tuple[dict[str, str], tuple[str, ...]]:
    """What aims a CLI at the scripted server: the env and args `agents check` would add."""
    aimed = ENDPOINTS[name].configure(AgentConfig(name=name, type=name), url, scratch)
    return dict(aimed.env), tuple(aimed.args)


def assert_behaviors(b: dict[str, Any], name: str) -> None:
    assert b["shellCommandCount"] == 3
    assert b["chainSegmentCount"] == 6  # 4 + 1 + 1
    assert b["maxChainSegmentsPerCommand"] == 4
    assert b["editViaShellCount"] == 1
    assert b["networkCommandCount"] == 1
    assert b["envAssignmentCommandCount"] == 0
    assert b["webFetchToolCallCount"] == 0 and b["taskToolCallCount"] == 0
    # Every CLI's turns are timed: Codex stamps no times, so its lines' arrival does.
    assert b["maxTurnDurationMs"] > 0
    by_name = b["toolCallsByName"]
    assert (
        by_name
        == {
            "claude-code": {"Bash": 3, "Write": 1, "Edit": 1},
            "codex": {"command_execution": 3, "apply_patch": 1},
            "opencode": {"bash": 3, "write": 1, "edit": 1},
            "gemini": {"run_shell_command": 3, "write_file": 1, "replace": 1},
        }[name]
    )


@pytest.mark.parametrize("name", CLIS)
def test_adapter_runs_the_real_cli(name: str, tmp_path: Path) -> None:
    binary = cli_path(name)
    provider, model = MODELS[name]
    workdir, scratch_tmp = tmp_path / "work", tmp_path / "tmp"
    workdir.mkdir()
    scratch_tmp.mkdir()  # as the runner does: the CLI's temp files stay out of /tmp
    with ModelServer(Script.from_json(SCRIPTS[name])) as server, HttpFixture() as page:
        env, args = endpoint_env_args(name, server.url, tmp_path)
        config = AgentConfig(name=name, type=name, command=str(binary), env=env, args=args)
        request = AgentRequest(
            workdir=workdir,
            prompt=f"Follow the setup steps; the release page is {page.url}",
            provider=provider,
            model=model,
            case_dir=tmp_path,
            capture_dir=tmp_path / "capture",
            timeout_s=120,
            env={"TMPDIR": str(scratch_tmp)},
        )
        result = make_adapter(config).run(request)
        steps = [r.step for r in server.scripted_requests()]
        token = page.token
    assert result.status == "done" and result.exitCode == 0, result.error
    assert steps == sorted(steps) and len(steps) == TURNS[name]
    assert result.turnsUsed == TURNS[name]
    assert result.sessionId
    assert result.tokenUsage is not None
    assert result.tokenUsage.input == INPUT_TOKENS * TURNS[name]
    assert result.tokenUsage.output == OUTPUT_TOKENS * TURNS[name]
    if THINKING[name] is not None:
        assert result.tokenUsage.thinking == THINKING[name]
    assert (workdir / "notes.txt").read_text() == "two\n"
    assert (workdir / "answer.txt").read_text().strip() == "world"
    assert (workdir / "token.txt").read_text().strip() == token
    if name == "claude-code":
        assert result.model == model  # from init.model
    assert result.summary is not None
    from capeval.core.behaviors import derive_behaviors

    assert_behaviors(derive_behaviors(result.summary), name)


def fake_home(home: Path) -> Path:
    """A user's home with a Gemini CLI setup: an auth choice, history, registered projects."""
    gemini = home / ".gemini"
    (gemini / "history").mkdir(parents=True)
    (gemini / "settings.json").write_text(
        '{\n  // mine\n  "security": {"auth": {"selectedType": "gemini-api-key"}}\n}\n'
    )
    (gemini / "projects.json").write_text('{"projects": {}}\n')
    return home


def snapshot(root: Path) -> dict[str, tuple[bool, bytes]]:
    """Every path under `root`: is it a directory, and a file's content."""
    return {
        str(p.relative_to(root)): (p.is_dir(), b"" if p.is_dir() else p.read_bytes())
        for p in root.rglob("*")
    }


def make_workspace(root: Path, name: str, url: str, binary: Path) -> None:
    case = root / "evals" / "capability" / "cases" / "real-cli"
    case.mkdir(parents=True)
    (root / "fixture").mkdir()
    (root / "fixture" / "README.md").write_text("A tiny repo.\n")
    (case / "case.json").write_text(
        json.dumps(
            {
                "id": "real-cli",
                "tier": "simple",
                "title": "Real CLI end to end",
                "fixture": "fixture",
                "prompt": "Set up notes.txt and answer.txt and save the token from {{HTTP_URL}}",
                "maxTurns": TURNS[name],
                "httpFixture": True,
                "requireBehaviors": [{"metric": "networkCommandCount", "max": 1}],
            }
        )
    )
    (case / "verify.sh").write_text(VERIFY)
    env, args = endpoint_env_args(name, url, root.parent)
    (root / "capeval.toml").write_text(agent_table(name, name, binary, args=args, env=env))


@pytest.mark.parametrize("name", CLIS)
def test_capeval_run_with_the_real_cli(name: str, tmp_path: Path) -> None:
    binary = cli_path(name)
    provider, model = MODELS[name]
    root = tmp_path / "ws"
    rows_path = tmp_path / "rows.jsonl"
    home = fake_home(tmp_path / "home")
    before = snapshot(home)
    with ModelServer(Script.from_json(SCRIPTS[name])) as server:
        make_workspace(root, name, server.url, binary)
        matrix = f"{provider}:{model}@{name}"
        proc = capeval_run(root, matrix, rows_path, cwd=tmp_path, env={"HOME": str(home)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The run (and its version probe) kept to its own config home: the user's is as it
    # was. Only npm's download cache may grow (opencode fetches its provider packages
    # through it: a cache, not the user's history or config).
    after = {path: v for path, v in snapshot(home).items() if path.split(os.sep)[0] != ".npm"}
    assert after == before
    (row,) = read_rows(rows_path)
    assert row["passed"] is True, row.get("error")
    assert row["status"] == "done" and row["agentExitCode"] == 0 and row["verifyExitCode"] == 0
    assert row["turnsUsed"] == TURNS[name] and row["overBudget"] is False
    assert row["sessionId"]
    assert row["tokenUsage"]["input"] == INPUT_TOKENS * TURNS[name]
    assert row["tokenUsage"]["output"] == OUTPUT_TOKENS * TURNS[name]
    if THINKING[name] is not None:
        assert row["tokenUsage"]["thinking"] == THINKING[name]
    assert row["toolCallCount"] == (4 if name == "codex" else 5)
    assert row["model"] == model
    # Claude Code and opencode price the run themselves; the others say nothing.
    if name in ("claude-code", "opencode"):
        assert isinstance(row["costUsd"], float) and row["costUsd"] >= 0
    else:
        assert row["costUsd"] is None
    assert_behaviors(row["behaviors"], name)


def test_agents_check_stays_offline_whatever_provider_the_shell_picks(tmp_path: Path) -> None:
    # With CLAUDE_CODE_USE_BEDROCK=1 in the shell, the real Claude Code went to
    # Bedrock ("Could not load AWS credentials"): the check failed, and with
    # credentials it would have been a paid call. Empty values turn them off.
    binary = cli_path("claude-code")
    root = tmp_path / "ws"
    (root / "evals" / "capability" / "cases").mkdir(parents=True)
    (root / "capeval.toml").write_text(
        f'[agents.mine]\ntype = "claude-code"\ncommand = {json.dumps(str(binary))}\n'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "capeval", "agents", "check", "mine", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=180,
        env={
            **os.environ,
            "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
            "CLAUDE_CODE_USE_BEDROCK": "1",
            "CLAUDE_CODE_USE_VERTEX": "1",
            "AWS_REGION": "us-east-1",
            "ANTHROPIC_AUTH_TOKEN": "sk-users-own-token",
        },
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "headless run: exit 0, status done, 2 model request(s)" in proc.stdout


@pytest.mark.parametrize("name", CLIS)
def test_agents_check_against_the_real_cli(name: str, tmp_path: Path) -> None:
    binary = cli_path(name)
    root = tmp_path / "ws"
    (root / "evals" / "capability" / "cases").mkdir(parents=True)
    (root / "capeval.toml").write_text(
        f'[agents.mine]\ntype = "{name}"\ncommand = {json.dumps(str(binary))}\n'
    )
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "capeval",
            "agents",
            "check",
            "mine",
            "--root",
            str(root),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env={
            **os.environ,
            "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
            "TMPDIR": str(system_tmp),
        },
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The CLI's temp files (opencode unpacks a library on every run) went with the check.
    assert [p for p in system_tmp.rglob("*") if p.is_file()] == []
    report = json.loads(proc.stdout)
    assert report["ok"] is True
    assert [s["name"] for s in report["steps"]] == [
        "binary",
        "version",
        "headless run",
        "stream parsed",
        "behaviors",
    ]
    assert all(s["ok"] for s in report["steps"]), report
    version = next(s["detail"] for s in report["steps"] if s["name"] == "version")
    assert (
        version
        == {
            "claude-code": "2.1.332",
            "codex": "0.171.0",
            "opencode": "1.18.33",
            "gemini": "0.61.0",
        }[name]
    )
    assert report["behaviors"]["chainSegmentCount"] == 2


def run_scripted(
    name: str,
    steps: list[dict[str, Any]],
    tmp_path: Path,
    model: str | None = None,
    extra_args: tuple[str, ...] = (),
) -> tuple[Any, list[Any]]:
    """Run a real CLI through its adapter on `steps`: its result and the scripted requests."""
    binary = cli_path(name)
    provider, default_model = MODELS[name]
    model = model or default_model
    workdir = tmp_path / "work"
    workdir.mkdir()
    with ModelServer(Script.from_json(steps)) as server:
        env, args = endpoint_env_args(name, server.url, tmp_path)
        config = AgentConfig(
            name=name, type=name, command=str(binary), env=env, args=(*args, *extra_args)
        )
        request = AgentRequest(
            workdir=workdir,
            prompt="Go.",
            provider=provider,
            model=model,
            case_dir=tmp_path,
            capture_dir=tmp_path / "capture",
            timeout_s=120,
            env={"TMPDIR": str(tmp_path)},
        )
        result = make_adapter(config).run(request)
        return result, server.scripted_requests()


@pytest.mark.parametrize(
    ("name", "alias"),
    [
        ("claude-code", "sonnet"),
        ("claude-code", "opusplan"),
        ("gemini", "pro"),
        ("gemini", "flash"),
    ],
)
def test_a_family_alias_passes_the_provider_check(name: str, alias: str, tmp_path: Path) -> None:
    # The CLI resolves the alias itself and reports the concrete model it ran;
    # that model is what was asked for, not a fallback.
    from capeval.core.passrule import provider_mismatch

    provider, _ = MODELS[name]
    result, _ = run_scripted(name, [{"text": "done"}], tmp_path, model=alias)
    assert result.status == "done", result.error
    assert result.model and result.model != alias  # the CLI did resolve it
    assert provider_mismatch(provider, alias, result.provider, result.model) is None


def test_codex_counts_the_responses_its_stream_does_not_show(tmp_path: Path) -> None:
    # Codex 0.171's exec stream shows no item for write_stdin, view_image or
    # tool_search, and runs a patch and a command asked for together one after
    # the other; turnsUsed must still be the number of model responses.
    patch = "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\n"
    steps: list[dict[str, Any]] = [
        {"calls": [{"name": "apply_patch", "input": patch}, SCRIPTS["codex"][1]["calls"][0]]},
        {"calls": [{"name": "write_stdin", "input": {"session_id": 1, "chars": ""}}]},
        {"calls": [{"name": "tool_search", "input": {"query": "files"}}]},
        {"calls": [{"name": "exec_command", "input": {"cmd": "ls"}}]},
    ]
    result, served = run_scripted("codex", steps, tmp_path)
    requests = len(served)
    assert result.status == "done", result.error
    assert requests == len(steps) + 1
    assert result.turnsUsed == requests
    assert result.toolCallCount == 5
    assert result.summary is not None and result.summary.turnsUsed == requests
    # The turns behaviors are derived from hold the hidden calls too.
    assert [[c.name for c in t.toolCalls] for t in result.summary.turns] == [
        ["apply_patch", "command_execution"],
        ["write_stdin"],
        ["tool_search"],
        ["command_execution"],
        [],
    ]


SHELL_CALLS = {
    "claude-code": {"name": "Bash", "input": {"command": "echo hi", "description": "hi"}},
    "gemini": {"name": "run_shell_command", "input": {"command": "echo hi", "description": "hi"}},
}


@pytest.mark.parametrize("name", list(SHELL_CALLS))
def test_an_empty_response_still_counts_as_a_turn(name: str, tmp_path: Path) -> None:
    # An empty answer (no text, no call) prints nothing in Claude Code 2.1.332's
    # or Gemini CLI 0.61's stream (Claude nudges once and asks again), so
    # turnsUsed fell short of the responses; their session logs have them all.
    result, requests = run_scripted(name, [{"calls": [SHELL_CALLS[name]]}, {}], tmp_path)
    assert result.status == "done", result.error
    assert len(requests) >= 2
    assert result.turnsUsed == len(requests)
    assert result.toolCallCount == 1
    assert result.summary is not None and result.summary.turnsUsed == len(requests)


# What each pinned CLI offers the model, by kind: a rename would silently
# turn its calls into `other` (and e.g. taskToolCallCount into 0).
OFFERED_KINDS: dict[str, dict[str, str]] = {
    "claude-code": {"Bash": "shell", "Agent": "task", "Edit": "edit", "Write": "write"},
    "codex": {"exec_command": "shell", "apply_patch": "edit", "view_image": "read"},
    "gemini": {
        "run_shell_command": "shell",
        "invoke_agent": "task",
        "web_fetch": "web_fetch",
        "replace": "edit",
        "write_file": "write",
        "read_file": "read",
        "google_web_search": "search",
    },
    "opencode": {
        "bash": "shell",
        "task": "task",
        "webfetch": "web_fetch",
        "edit": "edit",
        "write": "write",
        "read": "read",
        "glob": "search",
    },
}


@pytest.mark.parametrize("name", CLIS)
def test_the_tools_a_real_cli_offers_have_their_kinds(name: str, tmp_path: Path) -> None:
    from capeval.core.toolkinds import tool_kind

    result, requests = run_scripted(name, [{"text": "done"}], tmp_path)
    assert result.status == "done", result.error
    offered = set(requests[0].tools)
    expected = OFFERED_KINDS[name]
    assert set(expected) <= offered
    assert {tool: tool_kind(tool) for tool in expected} == expected


def test_codex_mcp_calls_are_turns_named_for_their_server(
    tmp_path: Path, paperclip_derivative: Path
) -> None:
    # Codex 0.171 shows no item for a tool search or for the MCP tool it
    # found; its session log has both, named as the stream names MCP calls.
    from capeval.paperclip.derivative import load_derivative
    from capeval.paperclip.liveagents import AGENTS
    from capeval.paperclip.livecases import live_cases

    namespace = AGENTS["codex"].namespace

    case = live_cases(load_derivative(paperclip_derivative))[0]
    server = ["-m", "capeval.paperclip.mcpserver", "--case", case.row.id,
              "--journal", str(tmp_path / "journal.jsonl"),
              "--derivative", str(paperclip_derivative)]  # fmt: skip
    mcp = "mcp_servers.paperclip"
    extra = ("-c", f"{mcp}.command={json.dumps(sys.executable)}",
             "-c", f"{mcp}.args={json.dumps(server)}",
             "-c", f'{mcp}.default_tools_approval_mode="approve"',
             "-c", f"{mcp}.required=true", "-c", f'{mcp}.startup_readiness="catalog"',
             "-c", f"{mcp}.startup_timeout_sec=60")  # fmt: skip
    steps: list[dict[str, Any]] = [
        {"calls": [{"name": "tool_search", "input": {"query": "issue", "limit": 3}}]},
        {"calls": [{"name": "list_issues", "namespace": namespace, "input": {}}]},
    ]
    result, requests = run_scripted("codex", steps, tmp_path, extra_args=extra)
    assert result.status == "done", result.error
    assert result.turnsUsed == len(requests) == 3
    assert result.summary is not None
    assert [[c.name for c in t.toolCalls] for t in result.summary.turns] == [
        ["tool_search"],
        [f"{namespace}__list_issues"],
        [],
    ]
