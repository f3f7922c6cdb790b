"""The adapter interface every agent shares.

An adapter launches one agent CLI headlessly for one repeat and returns an
`AgentResult`. The runner owns everything around it (workdir, HTTP fixture,
grader, pass rule, row); the adapter owns the process and the stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from capeval.core.agentconfig import AgentConfig
from capeval.core.turns import RunSummary, TokenUsage

if TYPE_CHECKING:
    from capeval.isolation.sandbox import Sandbox

STATUSES = ("done", "failed", "cancelled", "timeout")


@dataclass(frozen=True)
class AgentRequest:
    """Everything an adapter needs for one repeat."""

    workdir: Path
    prompt: str
    provider: str
    model: str
    case_dir: Path  # the case directory (scripted agents read trajectories here)
    capture_dir: Path  # outside the workdir: hook captures, logs
    timeout_s: float = 1200.0
    max_turns: int | None = None
    skip_permissions: bool = True
    env: Mapping[str, str] = field(default_factory=dict)  # e.g. EVAL_HTTP_URL
    http_url: str | None = None
    # The repeat's own HOME (copies of the agent's `home_dirs` in it); None: the user's.
    home: Path | None = None
    # Where the agent runs (docs/isolation.md); None: unconfined, as `none`.
    sandbox: Sandbox | None = None
    env_pass: tuple[str, ...] = ()  # variables passed from capeval's environment


@dataclass
class AgentResult:
    exitCode: int | None
    status: str  # one of STATUSES
    sessionId: str | None = None
    provider: str | None = None  # resolved provider, when the agent says it
    model: str | None = None  # resolved model, when the agent says it
    turnsUsed: int | None = None
    toolCallCount: int | None = None
    tokenUsage: TokenUsage | None = None
    costUsd: float | None = None  # what the agent says the run cost, when it says
    durationMs: float | None = None
    textPreview: str = ""
    summary: RunSummary | None = None  # None: the stream could not be captured/parsed
    error: str | None = None
    agentVersion: str | None = None
    # The run measured nothing (docs/agents.md#outcomes): why (a kind of
    # `capeval.core.outcome.ERROR_KINDS`), and the provider's HTTP status when
    # the CLI said it. None: the agent ran, whatever the verdict.
    errorKind: str | None = None
    providerStatus: int | None = None


class Adapter(Protocol):
    """What the runner calls. Implementations live one per module in capeval/agents/."""

    config: AgentConfig

    def version(self) -> str | None:
        """The agent's version string, or None if it cannot be told."""
        ...

    def run(self, request: AgentRequest) -> AgentResult:
        """Run the agent once; never raise for agent failures, report them in the result."""
        ...
