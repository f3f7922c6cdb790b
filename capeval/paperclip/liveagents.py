"""The agent CLIs the live matrix drives: Codex and Claude Code, each with the control plane
attached as its `paperclip` MCP server.

Each CLI is started headless in a scratch directory with the MCP server in
its own configuration only (nothing in the user's configuration changes),
the server's tools approved up front (the control plane decides every call)
and, for Claude Code, no built-in tools at all. What differs per CLI lives
here: how it is told about the server, how a scripted turn is spelled in its
tool vocabulary, how it is pointed at the scripted model server, and what its
own output says about the turn (which model answered, whether the model
could be reached at all, which calls it refused itself because the control
plane had not listed the tool).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capeval.core.paperclip.catalog import CATALOG
from capeval.paperclip.mcpserver import SERVER_NAME

CODEX = "codex"
CLAUDE_CODE = "claude-code"
MCP_STARTUP_TIMEOUT_S = 60  # Codex's default is 10 s; Claude Code's MCP_TIMEOUT is in ms
SCRIPTED_KEY = "capeval-live"


class LiveSkipped(Exception):
    """An agent CLI cannot take a live turn here; the message says why and what to do."""


@dataclass(frozen=True)
class TurnReport:
    """What a CLI's own output says about a turn."""

    model: str | None = None
    infra_error: str | None = None  # the turn could not be measured (model unreachable, crash)
    cli_refused: tuple[str, ...] = ()  # paperclip operations called but never sent on
    error_kind: str | None = None  # with infra_error: a capeval.core.outcome.ERROR_KINDS kind
    provider_status: int | None = None  # the provider's HTTP status, when the CLI said it
    # What the CLI last complained of in its stream (Codex without a network retries
    # until the timeout, saying so there), for a turn the timeout ended.
    last_error: str | None = None


class LiveAgent:
    """One agent CLI; subclasses say how to drive it."""

    name: str = ""
    binary: str = ""  # the default binary name on PATH
    flag: str = ""  # the option that names its binary
    install: str = ""
    scripted_model: str = ""
    namespace = f"mcp__{SERVER_NAME}"

    def check_configured(self, env: Mapping[str, str], config: Sequence[str]) -> None:
        raise NotImplementedError

    def argv(
        self,
        binary: str,
        prompt: str,
        server: Sequence[str],
        workdir: Path,
        model: str | None,
        extra: Sequence[str],
    ) -> list[str]:
        """The command line of one turn, with `extra` argument words of the caller's."""
        raise NotImplementedError

    def env(self, home: Path) -> dict[str, str]:
        """Variables every turn gets (beyond the caller's environment)."""
        return {}

    def scripted(self, url: str, home: Path) -> tuple[list[str], dict[str, str]]:
        """Extra arguments and variables that point the CLI at the scripted model server."""
        raise NotImplementedError

    def render(self, calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Scripted calls (`{"operation", "arguments"}`) as the model server's script."""
        raise NotImplementedError

    def report(self, stdout: str, stderr: str, exit_code: int | None) -> TurnReport:
        raise NotImplementedError


def _paperclip_operation(name: str, prefix: str) -> str | None:
    """The operation a tool name the agent used stands for, or None when it is not one
    of the control plane's (a prefixed name always is: it was meant for the server)."""
    if name.startswith(prefix):
        return name[len(prefix) :].lstrip("_") or None
    return name if CATALOG.get(name) is not None else None


class CodexAgent(LiveAgent):
    name = CODEX
    binary = "codex"
    flag = "--codex"
    install = "npm install -g @openai/codex"
    scripted_model = "gpt-5.5"
    _key_vars = ("OPENAI_API_KEY", "CODEX_API_KEY")
    # Codex logs a call to a tool it does not have on stderr, and nowhere else.
    _unsupported = re.compile(r"unsupported call: (\S+)")

    def check_configured(self, env: Mapping[str, str], config: Sequence[str]) -> None:
        if any(env.get(k) for k in self._key_vars):
            return
        configured_home = env.get("CODEX_HOME")
        home = Path(configured_home) if configured_home else Path.home() / ".codex"
        if (home / "auth.json").is_file():
            return
        shown = home / "auth.json" if configured_home else "~/.codex/auth.json"
        if any(c.split("=", 1)[0].strip() == "model_provider" for c in config):
            return
        raise LiveSkipped(
            "live matrix skipped: Codex is installed but not configured: set OPENAI_API_KEY, "
            f"run `codex login` (looked for {shown}), or pass a provider with "
            "-c model_provider=... and its -c model_providers.<id>.* settings"
        )

    def argv(
        self,
        binary: str,
        prompt: str,
        server: Sequence[str],
        workdir: Path,
        model: str | None,
        extra: Sequence[str],
    ) -> list[str]:
        """`codex exec` with the control plane attached as the `paperclip` MCP server.

        Values are TOML; JSON's strings and arrays of strings are valid TOML.
        MCP tools ask for approval by default, which `exec` can never give: the
        server's tools are approved up front (the control plane decides instead).
        Codex starts MCP servers beside the first model request; on a loaded
        machine the scripted model answered before the server had listed its
        tools, and the turn failed with nothing wrong in the control plane. The
        server is therefore `required`, ready once its tool catalog is known,
        with a start-up allowance beyond Codex's 10 s.
        """
        mcp = f"mcp_servers.{SERVER_NAME}"
        argv = [
            binary, "exec", "--json", "--skip-git-repo-check", "-C", str(workdir),
            "-c", f"{mcp}.command={json.dumps(server[0])}",
            "-c", f"{mcp}.args={json.dumps(list(server[1:]))}",
            "-c", f'{mcp}.default_tools_approval_mode="approve"',
            "-c", f"{mcp}.startup_timeout_sec={MCP_STARTUP_TIMEOUT_S}",
            "-c", f"{mcp}.required=true",
            "-c", f'{mcp}.startup_readiness="catalog"',
        ]  # fmt: skip
        if model:
            argv += ["-m", model]
        return [*argv, *extra, prompt]

    def scripted(self, url: str, home: Path) -> tuple[list[str], dict[str, str]]:
        from capeval.agents.codex import provider_args

        provider, key_var = "capeval-live", "CAPEVAL_LIVE_API_KEY"
        args = [*provider_args(provider, f"{url}/v1", key_var), "-c", f"model_provider={provider}"]
        return args, {key_var: SCRIPTED_KEY, "CODEX_HOME": str(home)}

    def render(self, calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Each new operation is found with `tool_search` first, as Codex requires for MCP tools."""
        script: list[dict[str, Any]] = []
        searched: set[str] = set()
        for call in calls:
            op = str(call["operation"])
            if op not in searched:
                searched.add(op)
                query = {"query": f"{op} {op.replace('_', ' ')}", "limit": 3}
                script.append({"calls": [{"name": "tool_search", "input": query}]})
            step = {"name": op, "namespace": self.namespace, "input": dict(call["arguments"])}
            script.append({"calls": [step]})
        return script

    def report(self, stdout: str, stderr: str, exit_code: int | None) -> TurnReport:
        from capeval.agents.codex import parse_codex_stream

        parsed = parse_codex_stream(stdout.splitlines())
        refused = []
        for match in self._unsupported.finditer(stderr):
            op = _paperclip_operation(match.group(1), self.namespace)
            if op is not None:
                refused.append(op)
        # Codex names no model in its stream. Whether a failed turn measured nothing is
        # read as capability runs read it (`parse_codex_stream`: turn.failed's words, a
        # stream cut off); a refusal such as a 400 is the turn's own failure.
        return _report(parsed, tuple(refused))


class ClaudeCodeAgent(LiveAgent):
    name = CLAUDE_CODE
    binary = "claude"
    flag = "--claude"
    install = "npm install -g @anthropic-ai/claude-code"
    scripted_model = "claude-sonnet-4-5"
    _key_vars = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")
    _clouds = ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX")

    def check_configured(self, env: Mapping[str, str], config: Sequence[str]) -> None:
        if any(env.get(k) for k in (*self._key_vars, *self._clouds)):
            return
        configured = env.get("CLAUDE_CONFIG_DIR")
        home = Path(configured) if configured else Path.home() / ".claude"
        if (home / ".credentials.json").is_file():
            return
        shown = home / ".credentials.json" if configured else "~/.claude/.credentials.json"
        raise LiveSkipped(
            "live matrix skipped: Claude Code is installed but not configured: set "
            f"ANTHROPIC_API_KEY, or run `claude` and log in (looked for {shown})"
        )

    def argv(
        self,
        binary: str,
        prompt: str,
        server: Sequence[str],
        workdir: Path,
        model: str | None,
        extra: Sequence[str],
    ) -> list[str]:
        """`claude -p` with only the `paperclip` MCP server and no built-in tools.

        `--strict-mcp-config` ignores every other MCP server the user has;
        `--tools ""` leaves no shell or file tool; the server's tools are
        allowed up front (`--allowedTools mcp__paperclip`) and anything else is
        refused without asking (`dontAsk`), so no permission bypass (which
        root may not use) is needed.
        """
        mcp = {"mcpServers": {SERVER_NAME: {"command": server[0], "args": list(server[1:])}}}
        argv = [
            binary, "-p", prompt, "--output-format", "stream-json", "--verbose",
            "--mcp-config", json.dumps(mcp), "--strict-mcp-config",
            "--tools", "", "--allowedTools", self.namespace, "--permission-mode", "dontAsk",
        ]  # fmt: skip
        if model:
            argv += ["--model", model]
        return [*argv, *extra]

    def env(self, home: Path) -> dict[str, str]:
        return {
            "MCP_TIMEOUT": str(MCP_STARTUP_TIMEOUT_S * 1000),
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }

    def scripted(self, url: str, home: Path) -> tuple[list[str], dict[str, str]]:
        return [], {
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": SCRIPTED_KEY,
            "ANTHROPIC_AUTH_TOKEN": "",
            "CLAUDE_CONFIG_DIR": str(home),
        }

    def render(self, calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [
            {
                "calls": [
                    {"name": f"{self.namespace}__{c['operation']}", "input": dict(c["arguments"])}
                ]
            }
            for c in calls
        ]

    def report(self, stdout: str, stderr: str, exit_code: int | None) -> TurnReport:
        from capeval.agents.claude_code import parse_claude_stream

        events = []
        for line in stdout.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                events.append(event)
        asked: dict[str, str] = {}  # tool_use id -> operation
        refused = []
        for event in events:
            message = event.get("message")
            content = message.get("content") if isinstance(message, Mapping) else None
            for block in content if isinstance(content, list) else ():
                if not isinstance(block, Mapping):
                    continue
                if block.get("type") == "tool_use":
                    op = _paperclip_operation(str(block.get("name")), self.namespace)
                    if op is not None:
                        asked[str(block.get("id"))] = op
                elif block.get("type") == "tool_result" and block.get("is_error"):
                    op = asked.get(str(block.get("tool_use_id")))
                    if op is not None and "No such tool available" in json.dumps(
                        block.get("content")
                    ):
                        refused.append(op)
        # The `result` event says whether the API failed (`parse_claude_stream`, as for
        # capability runs); a stream without one broke off.
        return _report(parse_claude_stream(stdout.splitlines()), tuple(refused))


def _report(parsed: Any, refused: tuple[str, ...]) -> TurnReport:
    """A parsed stream's verdict on the turn: an outage (`parsed.infra`) measured nothing."""
    from capeval.agents.streams import reported_error

    last = reported_error(parsed)
    infra = parsed.infra
    if infra is None:
        return TurnReport(parsed.model, None, refused, last_error=last)
    error = parsed.error or f"the turn measured nothing ({infra.kind})"
    return TurnReport(parsed.model, error, refused, infra.kind, infra.status, last)


AGENTS: dict[str, LiveAgent] = {a.name: a for a in (CodexAgent(), ClaudeCodeAgent())}


def version_of(binary: str) -> str | None:
    """The CLI's version as it prints it (`--version`), or None when it says none."""
    from capeval.proc.process import run_process

    try:
        proc = run_process(
            [binary, "--version"], cwd=Path.cwd(), env=dict(os.environ), timeout_s=30
        )
    except OSError:
        return None
    text = proc.stdout.decode(errors="replace")
    match = re.search(r"\d+\.\d+\.\d+[\w.+-]*", text)
    return match.group(0) if match else None
