"""`capeval agents check`: is an agent wired up, without spending a token?

Each check walks the path a real repeat takes: the binary is found, it says
its version, one headless run against capeval's scripted model server on
loopback (Claude Code, Codex, opencode and Gemini CLI all accept a custom
endpoint) really executes a chained shell command in a scratch workdir, the
stream is parsed into turns, and behavior metrics are derived from them. A
failing step names what to fix; agents with no custom endpoint (command
agents) get the first two steps and say so instead of pretending.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.agents.base import AgentRequest, AgentResult
from capeval.agents.cliadapter import is_root, resolve_binary, unresolved_reason
from capeval.agents.modelserver import ModelServer, Script, ScriptedCall, ScriptStep
from capeval.core.agentconfig import AgentConfig

CHECK_COMMAND = "echo capeval-check > check.txt && cat check.txt"
CHECK_FILE = "check.txt"
CHECK_KEY_VAR = "CAPEVAL_CHECK_API_KEY"
DEFAULT_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class CheckStep:
    name: str
    ok: bool | None  # None: not applicable / skipped
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass
class CheckReport:
    agent: str
    type: str
    steps: list[CheckStep] = field(default_factory=list)
    behaviors: Mapping[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return all(step.ok is not False for step in self.steps)

    def add(self, name: str, ok: bool | None, detail: str) -> bool:
        self.steps.append(CheckStep(name, ok, detail))
        return ok is not False

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "type": self.type,
            "ok": self.ok,
            "steps": [s.to_json() for s in self.steps],
            "behaviors": dict(self.behaviors) if self.behaviors is not None else None,
        }

    def text(self) -> str:
        mark = {True: "ok  ", False: "FAIL", None: "skip"}
        lines = [f"{self.agent} ({self.type})"]
        lines += [f"  {mark[s.ok]} {s.name}: {s.detail}" for s in self.steps]
        lines.append(f"  => {'ok' if self.ok else 'FAILED'}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Endpoint:
    """How to aim one CLI at the scripted server, and what to ask it."""

    script: Script
    provider: str
    model: str

    def configure(self, config: AgentConfig, url: str, scratch: Path) -> AgentConfig:
        """The agent's config aimed at the server at `url`; `scratch` is the check's own directory."""
        raise NotImplementedError


class _ClaudeEndpoint(Endpoint):
    def configure(self, config: AgentConfig, url: str, scratch: Path) -> AgentConfig:
        # Into config.env, which wins over everything else the adapter sets,
        # the user's shell included. A shell (or agent table) that sends
        # Claude Code to Bedrock, Vertex, Foundry or a gateway
        # (CLAUDE_CODE_USE_*) made the "offline" check call that provider, and
        # a token of theirs (ANTHROPIC_AUTH_TOKEN, preferred to the key) was
        # its credential. An empty value is unset for the CLI: the environment
        # is merged, so a variable cannot be removed from it here.
        switches = {k for k in (*os.environ, *config.env) if k.startswith("CLAUDE_CODE_USE_")}
        env = {
            **config.env,
            **dict.fromkeys(sorted(switches), ""),
            "ANTHROPIC_AUTH_TOKEN": "",
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "capeval-check",
        }
        if is_root():
            # As root Claude Code skips permission prompts only when told it is
            # sandboxed. Here capeval's own script is the model: the one tool
            # call it makes writes check.txt in the check's scratch folder.
            env["IS_SANDBOX"] = "1"
        return dataclasses.replace(config, env=env)


class _CodexEndpoint(Endpoint):
    def configure(self, config: AgentConfig, url: str, scratch: Path) -> AgentConfig:
        from capeval.agents.codex import provider_args

        args = (*config.args, *provider_args(self.provider, f"{url}/v1", CHECK_KEY_VAR))
        env = {**config.env, CHECK_KEY_VAR: "capeval-check"}
        return dataclasses.replace(config, args=args, env=env)


class _OpencodeEndpoint(Endpoint):
    def configure(self, config: AgentConfig, url: str, scratch: Path) -> AgentConfig:
        from capeval.agents.opencode import scripted_env

        env = {**config.env, **scripted_env(url, scratch / "opencode-home", "capeval-check")}
        return dataclasses.replace(config, env=env)


class _GeminiEndpoint(Endpoint):
    def configure(self, config: AgentConfig, url: str, scratch: Path) -> AgentConfig:
        from capeval.agents.gemini import scripted_env

        env = {**config.env, **scripted_env(url, "capeval-check")}
        return dataclasses.replace(config, env=env)


def _one_shell_step(tool: str, field_name: str, extra: Mapping[str, Any]) -> Script:
    call = ScriptedCall(tool, {field_name: CHECK_COMMAND, **extra})
    return Script((ScriptStep("Checking the wiring.", (call,)),))


ENDPOINTS: dict[str, Endpoint] = {
    "claude-code": _ClaudeEndpoint(
        _one_shell_step("Bash", "command", {"description": "capeval check"}),
        provider="anthropic",
        model="claude-sonnet-4-5",
    ),
    "codex": _CodexEndpoint(
        _one_shell_step("exec_command", "cmd", {}),
        provider="capeval-check",
        model="gpt-5.5",
    ),
    "opencode": _OpencodeEndpoint(
        _one_shell_step("bash", "command", {}),
        provider="anthropic",
        model="claude-sonnet-4-5",
    ),
    "gemini": _GeminiEndpoint(
        _one_shell_step("run_shell_command", "command", {"description": "capeval check"}),
        provider="google",
        model="gemini-2.5-pro",
    ),
}


def binary_of(config: AgentConfig) -> str | None:
    """The executable an agent runs (the template's first word for `command` agents)."""
    from capeval.agents.registry import make_adapter

    if config.type == "scripted":
        return None
    if config.type == "command":
        try:
            words = shlex.split(config.command or "")
        except ValueError:
            return config.command
        return words[0] if words else None
    return getattr(make_adapter(config), "binary", config.command)


def list_agents(agents: Mapping[str, AgentConfig]) -> list[dict[str, Any]]:
    """Every configured agent with its binary and whether it is found (no process started)."""
    out = []
    for name, config in sorted(agents.items()):
        binary = binary_of(config)
        found = resolve_binary(binary) if binary else None
        out.append(
            {
                "name": name,
                "type": config.type,
                "binary": binary,
                "path": found,
                "found": config.type == "scripted" or found is not None,
            }
        )
    return out


def _template_problem(config: AgentConfig) -> str | None:
    """Why a command agent's template names no binary at all, with the fix.

    An unclosed quote was reported as the whole template "not found" (install
    it), and a blank one as "None not found"; `capeval run` refuses both.
    """
    if config.type != "command":
        return None
    fix = f"fix `command` in [agents.{config.name}]"
    try:
        words = shlex.split(config.command or "")
    except ValueError as exc:
        return f"command template {config.command!r} does not split: {exc}; {fix}"
    return None if words else f"command template is empty; {fix}"


def _binary_problem(binary: str, name: str) -> str:
    reason = unresolved_reason(binary)
    if reason.startswith("exists"):
        return f"{binary!r} {reason}"  # the fix is the chmod it names
    return f"{binary!r} {reason}: install it or set `command` in [agents.{name}]"


def check_agent(config: AgentConfig, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> CheckReport:
    """Run the checks for one agent; never raises for an agent problem."""
    from capeval.agents.registry import make_adapter

    report = CheckReport(agent=config.name, type=config.type)
    if config.type == "scripted":
        report.add("binary", None, "built in: plays reference trajectories, no binary")
        return report
    unusable = _template_problem(config)
    if unusable is not None:
        report.add("binary", False, unusable)
        return report
    binary = binary_of(config)
    path = resolve_binary(binary) if binary else None
    if not report.add(
        "binary",
        path is not None,
        f"{path}" if path else _binary_problem(binary or "", config.name),
    ):
        return report
    adapter = make_adapter(config)
    version = adapter.version()
    report.add("version", version is not None, version or f"`{binary} --version` printed none")

    endpoint = ENDPOINTS.get(config.type)
    if endpoint is None:
        report.add(
            "headless run",
            None,
            f"{config.type} has no custom model endpoint capeval can point at a scripted "
            "server; verify it with a real `capeval run --case <id>`",
        )
        return report
    with (
        ModelServer(endpoint.script) as server,
        tempfile.TemporaryDirectory(prefix="capeval-check-") as tmp,
    ):
        workdir, capture, scratch_tmp = (Path(tmp) / d for d in ("work", "capture", "tmp"))
        workdir.mkdir()
        scratch_tmp.mkdir()  # the CLI's temp files go with the check, as in a run
        request = AgentRequest(
            workdir=workdir,
            prompt="capeval agents check: run the scripted command.",
            provider=endpoint.provider,
            model=endpoint.model,
            case_dir=workdir,
            capture_dir=capture,
            timeout_s=timeout_s,
            env={"TMPDIR": str(scratch_tmp)},
        )
        result = make_adapter(endpoint.configure(config, server.url, Path(tmp))).run(request)
        _judge_run(report, result, workdir, len(server.scripted_requests()))
    return report


def _judge_run(report: CheckReport, result: AgentResult, workdir: Path, requests: int) -> None:
    made = workdir / CHECK_FILE
    ran = result.status == "done" and made.is_file()
    detail = (
        f"exit {result.exitCode}, status {result.status}, {requests} model request(s), "
        f"{CHECK_FILE} {'written' if made.is_file() else 'missing'}"
    )
    if not ran and result.error:
        detail += f": {result.error}"
    if not report.add("headless run", ran, detail):
        return
    summary = result.summary
    parsed = (
        summary is not None
        and result.turnsUsed == 2
        and result.toolCallCount == 1
        and result.sessionId is not None
    )
    report.add(
        "stream parsed",
        parsed,
        f"session {result.sessionId}, {result.turnsUsed} turn(s), {result.toolCallCount} tool call(s)"
        + ("" if parsed else " (expected 2 turns, 1 tool call and a session id)"),
    )
    if summary is None:
        return
    from capeval.core.behaviors import derive_behaviors

    behaviors = derive_behaviors(summary)
    report.behaviors = behaviors
    good = behaviors.get("shellCommandCount") == 1 and behaviors.get("chainSegmentCount") == 2
    report.add(
        "behaviors",
        good,
        f"shellCommandCount {behaviors.get('shellCommandCount')}, "
        f"chainSegmentCount {behaviors.get('chainSegmentCount')}"
        + ("" if good else " (expected 1 and 2)"),
    )
