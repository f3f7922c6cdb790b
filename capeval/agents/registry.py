"""Which adapter class runs which agent type, and the agents that exist unconfigured.

Adapters are imported only when an agent of their type is used, so that a
broken or slow import in one adapter cannot affect runs of another, and the
CLI start-up stays light.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from capeval.agents.base import Adapter
from capeval.core.agentconfig import AGENT_TYPES, AgentConfig

if TYPE_CHECKING:
    from capeval.agents.streams import ParsedStream

# agent type -> "module:Class". One line per adapter.
ADAPTERS: dict[str, str] = {
    "scripted": "capeval.agents.scripted:ScriptedAdapter",
    "command": "capeval.agents.command:CommandAdapter",
    "claude-code": "capeval.agents.claude_code:ClaudeCodeAdapter",
    "codex": "capeval.agents.codex:CodexAdapter",
    "gemini": "capeval.agents.gemini:GeminiAdapter",
    "opencode": "capeval.agents.opencode:OpencodeAdapter",
}

# Agent types whose adapter parses the stream its CLI prints (`.parse`), so
# that a saved stream can be measured: `capeval behaviors --stream TYPE`.
STREAM_TYPES: tuple[str, ...] = ("claude-code", "codex", "gemini", "opencode")


class UnknownAgentError(ValueError):
    """An agent type with no adapter; the message lists the known types."""


def agent_types() -> list[str]:
    return sorted(AGENT_TYPES)


def adapter_class(agent_type: str) -> type:
    target = ADAPTERS.get(agent_type)
    if target is None:
        known = ", ".join(agent_types()) or "none"
        raise UnknownAgentError(
            f"agent type {agent_type!r} has no adapter (known types: {known}); "
            "fix `type` in the [agents.NAME] table"
        )
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def make_adapter(config: AgentConfig) -> Adapter:
    """The adapter instance that runs `config`."""
    return adapter_class(config.type)(config)


def stream_parser(agent_type: str) -> Callable[[Iterable[str]], ParsedStream]:
    """The function that turns `agent_type`'s printed stream into a run summary."""
    if agent_type not in STREAM_TYPES:
        raise UnknownAgentError(
            f"agent type {agent_type!r} prints no stream capeval parses "
            f"(stream types: {', '.join(STREAM_TYPES)})"
        )
    adapter: Any = adapter_class(agent_type)
    parse: Callable[[Iterable[str]], ParsedStream] = adapter.parse
    return parse
