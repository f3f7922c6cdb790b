"""The launching half of the CLI adapters: flags, environment, verdicts.

A stand-in binary (a real subprocess) records the argv and environment it
got and prints a recorded stream. It stands in for the real CLIs so every
flag and failure path is checked fast and without npm; the real binaries
are driven end to end in tests/agents/test_real_cli_agents.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import textwrap
import time
from datetime import datetime
from pathlib import Path

import pytest

from capeval.agents import claude_code
from capeval.agents.base import AgentRequest
from capeval.agents.claude_code import ClaudeCodeAdapter
from capeval.agents.cliadapter import agent_environment, probe_version, resolve_binary
from capeval.agents.codex import CodexAdapter
from capeval.agents.gemini import GeminiAdapter
from capeval.agents.opencode import OpencodeAdapter
from capeval.agents.registry import make_adapter
from capeval.core.agentconfig import AgentConfig
from capeval.core.turns import TokenUsage
from tests.runhelpers import alive

DATA = Path(__file__).parents[1] / "data" / "streams"

FAKE_CLI = textwrap.dedent(
    f"""\
    #!{sys.executable}
    import json, os, sys, time
    if sys.argv[1:] == ["--version"]:
        print(os.environ.get("FAKE_VERSION", "1.2.3 (fake)"))
        sys.exit(0)
    with open(os.environ["FAKE_RECORD"], "w") as fh:
        json.dump({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}}, fh)
    time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
    stream = os.environ.get("FAKE_STREAM")
    if stream:
        sys.stdout.write(open(stream).read())
        sys.stdout.flush()
    time.sleep(float(os.environ.get("FAKE_HANG", "0")))  # a CLI stuck after printing
    sys.stderr.write(os.environ.get("FAKE_STDERR", "fake stderr line\\n"))
    sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
    """
)


@pytest.fixture
def fake_cli(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "fake-cli"
    path.parent.mkdir()
    path.write_text(FAKE_CLI)
    path.chmod(0o755)
    return path


def request(tmp_path: Path, stream: Path | None, **kw: object) -> AgentRequest:
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    env = {"FAKE_RECORD": str(tmp_path / "record.json"), "FAKE_STREAM": str(stream or "")}
    env.update(kw.pop("env", {}))  # type: ignore[arg-type]
    return AgentRequest(
        workdir=workdir,
        prompt="-starts with a dash; and 'quotes'",
        provider=str(kw.pop("provider", "anthropic")),
        model=str(kw.pop("model", "claude-sonnet-4-5")),
        case_dir=tmp_path,
        capture_dir=tmp_path / "capture",
        env=env,
        **kw,  # type: ignore[arg-type]
    )


def recorded(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "record.json").read_text())


def test_registry_maps_every_adapter_type() -> None:
    for kind, cls in [
        ("claude-code", ClaudeCodeAdapter),
        ("codex", CodexAdapter),
        ("gemini", GeminiAdapter),
        ("opencode", OpencodeAdapter),
    ]:
        assert isinstance(make_adapter(AgentConfig(name=kind, type=kind)), cls)
    assert type(make_adapter(AgentConfig(name="c", type="command", command="x"))).__name__ == (
        "CommandAdapter"
    )


def test_claude_flags_env_and_result(tmp_path: Path, fake_cli: Path, agent_streams: Path) -> None:
    cfg = AgentConfig(
        name="cc",
        type="claude-code",
        command=str(fake_cli),
        args=("--add-dir", "x"),
        env={"MY_VAR": "1"},
    )
    req = request(tmp_path, agent_streams / "claude-stream.jsonl")
    result = ClaudeCodeAdapter(cfg).run(req)
    rec = recorded(tmp_path)
    assert rec["argv"] == [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "claude-sonnet-4-5",
        "--dangerously-skip-permissions",
        "--add-dir",
        "x",
        "--",
        "-starts with a dash; and 'quotes'",
    ]
    assert Path(rec["cwd"]) == req.workdir.resolve()
    env = rec["env"]
    assert Path(env["CLAUDE_CONFIG_DIR"]).parent == req.capture_dir  # isolated, outside workdir
    assert env["MY_VAR"] == "1" and env["DISABLE_TELEMETRY"] == "1"
    assert "IS_SANDBOX" not in env  # not sandboxed: Claude Code is not told it is
    assert result.status == "done" and result.exitCode == 0 and result.error is None
    assert result.sessionId == "2cfd976e-e13e-4ec2-b4e2-e3a483a3d198"
    assert result.model == "claude-sonnet-4-5" and result.agentVersion == "2.1.332"
    assert result.turnsUsed == 2 and result.toolCallCount == 1
    assert result.durationMs == 363  # Claude's own duration_ms
    assert result.tokenUsage == TokenUsage(input=20, output=10)  # the result line's
    assert result.costUsd == 0.00021 and result.textPreview == "I'll create the file.done"
    assert result.summary is not None and result.summary.status == "done"
    started = datetime.fromisoformat(result.summary.startedAt or "")
    assert datetime.fromisoformat(result.summary.finishedAt or "") > started
    # The raw stream is kept outside the workdir.
    kept = (req.capture_dir / "claude-code-stream.jsonl").read_text()
    assert kept == (agent_streams / "claude-stream.jsonl").read_text()
    assert (req.capture_dir / "claude-code-stderr.log").read_text() == "fake stderr line\n"


def test_claude_ask_permissions_and_config_env_wins(
    tmp_path: Path, fake_cli: Path, agent_streams: Path
) -> None:
    own = str(tmp_path / "my-claude-config")
    cfg = AgentConfig(
        name="cc", type="claude-code", command=str(fake_cli), env={"CLAUDE_CONFIG_DIR": own}
    )
    ClaudeCodeAdapter(cfg).run(
        request(tmp_path, agent_streams / "claude-stream.jsonl", skip_permissions=False)
    )
    rec = recorded(tmp_path)
    assert "--dangerously-skip-permissions" not in rec["argv"]
    assert rec["argv"][rec["argv"].index("--permission-mode") + 1] == "default"
    assert "IS_SANDBOX" not in rec["env"] or os.environ.get("IS_SANDBOX")
    assert rec["env"]["CLAUDE_CONFIG_DIR"] == own


def test_the_agents_configured_env_wins_over_what_the_run_sets(tmp_path: Path) -> None:
    # The runner puts TMPDIR (and EVAL_HTTP_URL) in the request; a user who
    # sets TMPDIR (or a config home) in [agents.NAME] env must get theirs.
    config = AgentConfig(
        name="cc",
        type="claude-code",
        env={"TMPDIR": "/mine", "CLAUDE_CONFIG_DIR": str(tmp_path / "my-login")},
    )
    req = request(
        tmp_path, None, env={"TMPDIR": "/run", "CLAUDE_CONFIG_DIR": str(tmp_path / "request")}
    )
    env = agent_environment(config, req, {"TMPDIR": "/adapter"})
    assert env["TMPDIR"] == "/mine"
    # The session log is read from the home the CLI was really given.
    adapter = ClaudeCodeAdapter(config)
    assert adapter.environment(req)["CLAUDE_CONFIG_DIR"] == str(tmp_path / "my-login")
    assert adapter.home_of(req, "CLAUDE_CONFIG_DIR", "claude-config") == tmp_path / "my-login"


def test_is_sandbox_is_set_only_to_skip_permissions_as_root_in_a_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # IS_SANDBOX tells Claude Code it may skip permission prompts as root:
    # never set it for a run that asked to keep the prompts, nor as a user,
    # nor where nothing is sandboxed (isolation none, or no sandbox at all).
    from capeval.core.isolation import Isolation
    from capeval.isolation.backends import make_sandbox
    from capeval.isolation.sandbox import Confinement

    def box(backend: str) -> object:
        return make_sandbox(Isolation(backend=backend, image="i"), Confinement("t", ()))

    monkeypatch.delenv("IS_SANDBOX", raising=False)
    adapter = ClaudeCodeAdapter(AgentConfig(name="cc", type="claude-code"))
    monkeypatch.setattr(claude_code, "is_root", lambda: True)
    for backend in ("bwrap", "docker"):
        sandboxed = request(tmp_path, None, sandbox=box(backend))
        assert adapter.cli_env(sandboxed)["IS_SANDBOX"] == "1"
    asked = request(tmp_path, None, skip_permissions=False, sandbox=box("bwrap"))
    assert "IS_SANDBOX" not in adapter.cli_env(asked)
    assert "IS_SANDBOX" not in adapter.cli_env(request(tmp_path, None, sandbox=box("none")))
    assert "IS_SANDBOX" not in adapter.cli_env(request(tmp_path, None))
    monkeypatch.setattr(claude_code, "is_root", lambda: False)
    assert "IS_SANDBOX" not in adapter.cli_env(request(tmp_path, None, sandbox=box("bwrap")))


@pytest.mark.parametrize(
    ("exit_code", "drop_result", "status", "error_part"),
    [
        (1, False, "failed", "exit code 1"),  # good stream, bad exit
        (0, True, "failed", "without a `result`"),  # exit 0, stream cut short
    ],
)
def test_claude_verdict_needs_exit_and_result(
    tmp_path: Path,
    fake_cli: Path,
    agent_streams: Path,
    exit_code: int,
    drop_result: bool,
    status: str,
    error_part: str,
) -> None:
    stream = tmp_path / "s.jsonl"
    body = (agent_streams / "claude-stream.jsonl").read_text().splitlines()
    stream.write_text("\n".join(body[:-1] if drop_result else body) + "\n")
    env = {"FAKE_EXIT": str(exit_code)}
    cfg = AgentConfig(name="cc", type="claude-code", command=str(fake_cli))
    result = ClaudeCodeAdapter(cfg).run(request(tmp_path, stream, env=env))
    assert result.status == status and result.exitCode == exit_code
    assert error_part in (result.error or "")
    assert result.summary is not None and result.turnsUsed == 2  # what was seen is kept
    assert result.summary.status == status and result.summary.error == result.error


def test_codex_flags_and_isolated_home(tmp_path: Path, fake_cli: Path, agent_streams: Path) -> None:
    cfg = AgentConfig(name="cx", type="codex", command=str(fake_cli), args=("-c", "k=v"))
    req = request(
        tmp_path, agent_streams / "codex-script-stream.jsonl", provider="myprov", model="gpt-5.5"
    )
    result = CodexAdapter(cfg).run(req)
    rec = recorded(tmp_path)
    assert rec["argv"] == [
        "exec",
        "--json",
        "-m",
        "gpt-5.5",
        "-C",
        str(req.workdir),
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "-c",
        "model_provider=myprov",
        "-c",
        "k=v",
        "--",
        "-starts with a dash; and 'quotes'",
    ]
    assert Path(rec["env"]["CODEX_HOME"]).parent == req.capture_dir
    assert result.status == "done" and result.turnsUsed == 3
    assert result.model is None  # Codex does not say: the runner cannot be fooled by a guess
    assert result.durationMs is not None and result.durationMs > 0  # wall time

    CodexAdapter(cfg).run(
        request(tmp_path, agent_streams / "codex-stream.jsonl", skip_permissions=False)
    )
    assert "--dangerously-bypass-approvals-and-sandbox" not in recorded(tmp_path)["argv"]


def test_gemini_flags(tmp_path: Path, fake_cli: Path) -> None:
    cfg = AgentConfig(name="g", type="gemini", command=str(fake_cli))
    result = GeminiAdapter(cfg).run(
        request(tmp_path, DATA / "gemini-stream.jsonl", provider="google", model="gemini-2.5-pro")
    )
    assert recorded(tmp_path)["argv"] == [
        "-m",
        "gemini-2.5-pro",
        "--output-format",
        "stream-json",
        "--approval-mode",
        "yolo",
        "--prompt=-starts with a dash; and 'quotes'",
    ]
    assert result.status == "done" and result.model == "gemini-2.5-pro" and result.turnsUsed == 4
    # Each workdir is new: trusted, or Gemini CLI would drop yolo (the real
    # CLI, folder trust on, is in test_real_cli_agents).
    assert recorded(tmp_path)["env"]["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
    GeminiAdapter(cfg).run(request(tmp_path, DATA / "gemini-stream.jsonl", skip_permissions=False))
    argv = recorded(tmp_path)["argv"]
    assert argv[argv.index("--approval-mode") + 1] == "default"


def test_opencode_flags_and_exit_code_verdict(tmp_path: Path, fake_cli: Path) -> None:
    cfg = AgentConfig(name="o", type="opencode", command=str(fake_cli))
    req = request(
        tmp_path, DATA / "opencode-stream.jsonl", provider="xai/thegreataxios", model="grok-4.5"
    )
    result = OpencodeAdapter(cfg).run(req)
    assert recorded(tmp_path)["argv"][:6] == [
        "run",
        "--format",
        "json",
        "-m",
        "xai/thegreataxios/grok-4.5",
        "--dangerously-skip-permissions",
    ]
    assert result.status == "done" and result.turnsUsed == 3
    failed = OpencodeAdapter(cfg).run(
        request(tmp_path, DATA / "opencode-stream.jsonl", env={"FAKE_EXIT": "1"})
    )
    assert failed.status == "failed" and "fake stderr line" in (failed.error or "")


def test_a_binary_found_relative_to_here_runs_in_the_workdir(
    tmp_path: Path, fake_cli: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`PATH=.cache/...:$PATH` or `command = "./bin/x"`: found from here, run from the workdir."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PWD", str(tmp_path))
    cfg = AgentConfig(name="o", type="opencode", command=os.path.join(".", "bin", "fake-cli"))
    result = OpencodeAdapter(cfg).run(request(tmp_path, DATA / "opencode-stream.jsonl"))
    assert result.status == "done", result.error
    seen = recorded(tmp_path)
    assert seen["cwd"] == str(tmp_path / "work")
    assert seen["env"]["PWD"] == str(tmp_path / "work")  # not where capeval was started


def test_timeout_kills_and_reports(tmp_path: Path, fake_cli: Path, agent_streams: Path) -> None:
    cfg = AgentConfig(name="cc", type="claude-code", command=str(fake_cli))
    req = request(
        tmp_path, agent_streams / "claude-stream.jsonl", env={"FAKE_SLEEP": "30"}, timeout_s=0.5
    )
    result = ClaudeCodeAdapter(cfg).run(req)
    assert result.status == "timeout" and result.exitCode == 124
    assert "timed out" in (result.error or "")


@pytest.mark.slow
def test_timeout_names_the_last_error_the_stream_reported(tmp_path: Path, fake_cli: Path) -> None:
    stream = tmp_path / "retrying.jsonl"
    stream.write_text(
        '{"type":"thread.started","thread_id":"t1"}\n{"type":"turn.started"}\n'
        '{"type":"error","message":"Reconnecting... 5/5 (stream disconnected)"}\n'
        '{"type":"error","message":"Reconnecting... waiting for network"}\n'
    )
    cfg = AgentConfig(name="cx", type="codex", command=str(fake_cli))
    # Long enough for a loaded CI host to start the fake CLI and print its stream.
    req = request(tmp_path, stream, env={"FAKE_HANG": "30"}, timeout_s=3.0)
    result = CodexAdapter(cfg).run(req)
    assert result.status == "timeout"
    assert result.error == (
        "agent timed out after 3 s; the last error in its stream: "
        "codex: Reconnecting... waiting for network"
    )


def test_no_stream_means_no_summary(tmp_path: Path, fake_cli: Path) -> None:
    cfg = AgentConfig(name="cc", type="claude-code", command=str(fake_cli))
    result = ClaudeCodeAdapter(cfg).run(request(tmp_path, None, env={"FAKE_EXIT": "1"}))
    assert result.status == "failed"
    assert result.summary is None and result.turnsUsed is None  # behaviors null, not zeros


def test_a_captured_stream_without_turns_is_a_summary_of_no_turns(
    tmp_path: Path, fake_cli: Path
) -> None:
    # Claude printed its session and a failed result but no response: the
    # stream was captured, so the run really had 0 turns (not unknown ones).
    stream = tmp_path / "s.jsonl"
    stream.write_text(
        '{"type":"system","subtype":"init","session_id":"s1","model":"m"}\n'
        '{"type":"result","subtype":"error_during_execution","is_error":true,"session_id":"s1"}\n'
    )
    cfg = AgentConfig(name="cc", type="claude-code", command=str(fake_cli))
    result = ClaudeCodeAdapter(cfg).run(request(tmp_path, stream))
    assert result.status == "failed" and result.sessionId == "s1"
    assert result.summary is not None and result.summary.turns == ()
    assert (result.turnsUsed, result.toolCallCount) == (0, 0)


def test_missing_binary_names_the_config_fix(tmp_path: Path) -> None:
    cfg = AgentConfig(name="mycodex", type="codex", command=str(tmp_path / "nope" / "codex"))
    result = CodexAdapter(cfg).run(request(tmp_path, None))
    assert result.status == "failed" and result.exitCode is None
    assert "[agents.mycodex]" in (result.error or "")
    assert CodexAdapter(cfg).version() is None


def test_a_file_that_is_not_executable_is_no_binary(tmp_path: Path) -> None:
    # `agents list` said "found" for a script without its x bit; the run then
    # failed with a bare OSError instead of "not found: fix `command`".
    script = tmp_path / "agent"
    script.write_text("#!/bin/sh\necho 1.0.0\n")
    script.chmod(0o644)
    assert resolve_binary(str(script)) is None
    script.chmod(0o755)
    assert resolve_binary(str(script)) == str(script)


def test_version_is_read_from_the_binary(tmp_path: Path, fake_cli: Path) -> None:
    # The probe runs in a run's environment: the entry's env reaches it, capeval's does not.
    said = {"FAKE_VERSION": "2.1.332 (Claude Code)"}
    cfg = AgentConfig(name="cc", type="claude-code", command=str(fake_cli), env=said)
    assert ClaudeCodeAdapter(cfg).version() == "2.1.332"
    said = {"FAKE_VERSION": "codex-cli 0.171.0"}
    codex = AgentConfig(name="c", type="codex", command=str(fake_cli), env=said)
    assert CodexAdapter(codex).version() == "0.171.0"


def test_a_version_printed_by_a_failing_command_is_no_version(tmp_path: Path) -> None:
    # `agent --version` exiting 1 with "error: node 18.2.0 is too old" is not
    # the agent's version 18.2.0; rows would record it as agentVersion.
    cli = tmp_path / "agent"
    cli.write_text(
        f"#!{sys.executable}\nimport sys\nprint('error: node 18.2.0 too old')\nsys.exit(1)\n"
    )
    cli.chmod(0o755)
    assert probe_version(str(cli), cwd=tmp_path) is None


ESCAPING_CLI = textwrap.dedent(
    f"""\
    #!{sys.executable}
    import os, subprocess, sys, time
    # A tool call run the way Gemini CLI and opencode run them: in a session of its own.
    quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    child = subprocess.Popen(["sleep", "300"], start_new_session=True, **quiet)
    with open(os.environ["FAKE_PIDFILE"], "w") as fh:
        fh.write(str(child.pid))
    time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
    """
)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
@pytest.mark.parametrize(
    "sleep, status", [("0", "done"), pytest.param("30", "timeout", marks=pytest.mark.slow)]
)
def test_what_the_cli_started_in_its_own_session_dies_with_it(
    tmp_path: Path, sleep: str, status: str
) -> None:
    """An agent timeout (or the CLI's exit) kills its whole tree, not only its process group."""
    cli = tmp_path / "escaping-cli"
    cli.write_text(ESCAPING_CLI)
    cli.chmod(0o755)
    pidfile = tmp_path / "child.pid"
    cfg = AgentConfig(name="g", type="gemini", command=str(cli))
    req = request(tmp_path, None, env={"FAKE_PIDFILE": str(pidfile), "FAKE_SLEEP": sleep})
    req = dataclasses.replace(req, timeout_s=3.0)  # time to write the pid file, even loaded
    result = GeminiAdapter(cfg).run(req)
    child = int(pidfile.read_text())
    try:
        assert result.status == ("failed" if status == "done" else "timeout")
        assert not alive(child), "the tool process outlived the agent"
    finally:
        if alive(child):
            os.kill(child, 9)


def test_a_crash_mid_stream_says_what_stderr_said(tmp_path: Path, fake_cli: Path) -> None:
    """A CLI killed mid-run: the row's error gives its stderr, not only the cut-off stream."""
    stream = tmp_path / "cut.jsonl"
    stream.write_text('{"type":"thread.started","thread_id":"t1"}\n{"type":"turn.started"}\n')
    cfg = AgentConfig(name="cx", type="codex", command=str(fake_cli))
    env = {"FAKE_EXIT": "139", "FAKE_STDERR": "thread 'main' panicked at codex-rs/core\nnote: x\n"}
    result = CodexAdapter(cfg).run(request(tmp_path, stream, env=env))
    assert result.status == "failed" and result.exitCode == 139
    assert result.error == (
        "codex: stream ended without `turn.completed`; stderr: thread 'main' panicked at codex-rs/core"
    )


def test_a_failure_names_the_stderr_line_with_the_error(tmp_path: Path, fake_cli: Path) -> None:
    """opencode's failed migration ends with `params:`; the cause is the coloured Error line."""
    stderr = "\x1b[91m\x1b[1mError: \x1b[0mUnexpected error\n\nFailed query:\n  CREATE TABLE x\nparams: \n"
    cfg = AgentConfig(name="o", type="opencode", command=str(fake_cli))
    env = {"FAKE_EXIT": "1", "FAKE_STDERR": stderr}
    result = OpencodeAdapter(cfg).run(request(tmp_path, None, env=env))
    assert result.status == "failed"
    assert result.error == "opencode exit code 1: Error: Unexpected error"


def test_codex_turns_are_timed_in_whole_milliseconds(agent_streams: Path) -> None:
    """Codex turns are timed by arrival clock readings; their fractions are not reported."""
    lines = (agent_streams / "codex-stream.jsonl").read_text().splitlines()
    arrivals = [1_800_000_000_000.0 + 97.3 * i + 0.123456 for i in range(len(lines))]
    parsed = CodexAdapter.parse_timed(list(zip(lines, arrivals, strict=True)))
    durations = [t.durationMs for t in parsed.summary.turns]
    assert durations and all(d is not None and float(d).is_integer() for d in durations)
    from capeval.core.behaviors import derive_behaviors

    assert isinstance(derive_behaviors(parsed.summary)["maxTurnDurationMs"], int)


def test_opencode_sessions_and_snapshots_stay_in_the_repeat(tmp_path: Path, fake_cli: Path) -> None:
    """opencode's data and state (sessions, database, project snapshots) are per repeat."""
    cfg = AgentConfig(name="o", type="opencode", command=str(fake_cli))
    OpencodeAdapter(cfg).run(request(tmp_path, DATA / "opencode-stream.jsonl"))
    env = recorded(tmp_path)["env"]
    capture = tmp_path / "capture"
    assert Path(env["XDG_DATA_HOME"]).parent == capture
    assert Path(env["XDG_STATE_HOME"]).parent == capture
    # The user's own setting still wins.
    cfg = AgentConfig(name="o", type="opencode", command=str(fake_cli), env={"XDG_DATA_HOME": "/x"})
    OpencodeAdapter(cfg).run(request(tmp_path, DATA / "opencode-stream.jsonl"))
    assert recorded(tmp_path)["env"]["XDG_DATA_HOME"] == "/x"


def test_opencode_ask_permissions_really_asks(tmp_path: Path, fake_cli: Path) -> None:
    """opencode allows every tool by default: --ask-permissions must set its permissions to ask."""
    cfg = AgentConfig(name="o", type="opencode", command=str(fake_cli))
    req = request(tmp_path, DATA / "opencode-stream.jsonl", skip_permissions=False)
    OpencodeAdapter(cfg).run(req)
    seen = recorded(tmp_path)
    assert "--dangerously-skip-permissions" not in seen["argv"]
    assert json.loads(seen["env"]["OPENCODE_PERMISSION"]) == {
        "edit": "ask",
        "bash": "ask",
        "webfetch": "ask",
    }
    OpencodeAdapter(cfg).run(request(tmp_path, DATA / "opencode-stream.jsonl"))
    assert "OPENCODE_PERMISSION" not in recorded(tmp_path)["env"]


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_strays_get_sigterm_first_so_their_exit_traps_run(tmp_path: Path) -> None:
    """A stray shell's trap (pyenv's rehash lock, say) runs: SIGTERM before SIGKILL."""
    import subprocess

    from capeval.agents.cliadapter import AGENT_MARK_VAR
    from capeval.proc import strays

    mark, done, ready = strays.new_mark(), tmp_path / "trap-ran", tmp_path / "trap-set"
    # The shell carries the mark from exec on, before it has read its `trap`: wait
    # until it says the trap is set. Builtin redirections, not `touch`, so a slow
    # host's fork cannot outlast the grace.
    script = f"trap ': > {done}; exit 0' TERM; : > {ready}; while :; do sleep 0.05; done"
    child = subprocess.Popen(
        ["bash", "-c", script], env={**os.environ, AGENT_MARK_VAR: mark}, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 10
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert strays.kill_marked(AGENT_MARK_VAR, mark) >= 1
        child.wait(5)
        assert done.exists()
        assert strays.marked_pids(AGENT_MARK_VAR, mark) == []
    finally:
        child.kill()


def test_claude_env_quiets_side_traffic(tmp_path: Path) -> None:
    config = AgentConfig(name="cc", type="claude-code")
    env = ClaudeCodeAdapter(config).cli_env(request(tmp_path, None))
    assert env["DISABLE_TELEMETRY"] == "1"
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"


def test_codex_provider_args_define_a_responses_provider() -> None:
    from capeval.agents.codex import provider_args

    args = provider_args("mock", "http://127.0.0.1:9/v1", "MOCK_KEY")
    assert args == [
        "-c", 'model_providers.mock.name="mock"',
        "-c", 'model_providers.mock.base_url="http://127.0.0.1:9/v1"',
        "-c", 'model_providers.mock.wire_api="responses"',
        "-c", 'model_providers.mock.env_key="MOCK_KEY"',
    ]  # fmt: skip


def test_stderr_tail_gives_the_last_line_naming_an_error() -> None:
    from capeval.agents.cliadapter import stderr_tail

    stderr = "Error: retrying request\nnote: detail\nfatal: no credentials found\nbye\n"
    assert stderr_tail(stderr) == "fatal: no credentials found"
    assert stderr_tail("first\nlast\n") == "last"
    assert stderr_tail("\n\n") is None
