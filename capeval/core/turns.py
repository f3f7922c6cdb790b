"""The normalized turn stream (docs/result-formats.md#the-run-summary) as typed data.

Every agent adapter maps its own events onto these types, and behavior
metrics are computed from them alone. The JSON shape is the corbits run
summary (`{status, startedAt, finishedAt, durationMs, turnsUsed, tokenUsage,
toolCallCount, turns: [...], error?}`), so the command/hook adapter reads it
as is and the others produce it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Canonical tool kinds. `shell`, `web_fetch` and `task` drive metrics; the
# others are informational.
SHELL = "shell"
WEB_FETCH = "web_fetch"
TASK = "task"
READ = "read"
EDIT = "edit"
WRITE = "write"
SEARCH = "search"
LIST = "list"
OTHER = "other"


@dataclass(frozen=True, slots=True)
class TokenUsage:
    input: int = 0
    output: int = 0
    cacheRead: int = 0
    cacheWrite: int = 0
    thinking: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cacheRead,
            "cacheWrite": self.cacheWrite,
            "thinking": self.thinking,
        }

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input + other.input,
            self.output + other.output,
            self.cacheRead + other.cacheRead,
            self.cacheWrite + other.cacheWrite,
            self.thinking + other.thinking,
        )


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call. `name` is the agent's native tool name; `kind` canonical."""

    id: str
    name: str
    arguments: Any
    kind: str = OTHER
    # For shell calls: the command string after unwrapping an agent-added
    # `bash -lc '...'` / `sh -c` wrapper. None when the call is not a shell
    # call or its command is not a string.
    command: str | None = None
    result: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.result is not None:
            out["result"] = self.result
        return out


@dataclass(frozen=True, slots=True)
class Turn:
    """One model response: its text blocks and the tool calls it made."""

    turnIndex: int
    texts: tuple[str, ...] = ()
    toolCalls: tuple[ToolCall, ...] = ()
    durationMs: float | None = None

    @property
    def has_text(self) -> bool:
        return any(t.strip() for t in self.texts)

    def to_json(self) -> dict[str, Any]:
        return {
            "turnIndex": self.turnIndex,
            "assistantTurn": {"content": [{"type": "text", "text": t} for t in self.texts]},
            "toolCalls": [c.to_json() for c in self.toolCalls],
            "durationMs": self.durationMs,
        }


@dataclass(frozen=True, slots=True)
class RunSummary:
    status: str = "done"
    startedAt: str | None = None
    finishedAt: str | None = None
    durationMs: float | None = None
    turnsUsed: int | None = None
    tokenUsage: TokenUsage | None = None
    toolCallCount: int | None = None
    turns: tuple[Turn, ...] = field(default_factory=tuple)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status,
            "startedAt": self.startedAt,
            "finishedAt": self.finishedAt,
            "durationMs": self.durationMs,
            "turnsUsed": self.turnsUsed,
            "tokenUsage": self.tokenUsage.to_json() if self.tokenUsage else None,
            "toolCallCount": self.toolCallCount,
            "turns": [t.to_json() for t in self.turns],
        }
        if self.error is not None:
            out["error"] = self.error
        return out
