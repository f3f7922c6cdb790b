"""Agent entries as configured: the `[agents.NAME]` tables, and the rules their values obey.

Kept in the core, apart from the adapters that launch the agents, so that
reading and validating a configuration never imports an adapter: the
configuration is checked the same way whether or not the agent's CLI (or its
adapter's dependencies) are on this machine. `capeval.agents.registry` maps
each type here onto the adapter that runs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

# Every agent type an `[agents.NAME]` table may name.
AGENT_TYPES: tuple[str, ...] = ("scripted", "command", "claude-code", "codex", "gemini", "opencode")

# Agents usable by name without any [agents.NAME] table: name -> type.
BUILTIN_AGENTS: dict[str, str] = {
    "scripted": "scripted",
    "claude-code": "claude-code",
    "codex": "codex",
    "gemini": "gemini",
    "opencode": "opencode",
}

# Where a `command` agent's post-run hook is installed inside the workdir
# unless its entry names another path (the corbits harness's location).
DEFAULT_HOOK = ".corbits/hooks/eval-run-capture.sh"


@dataclass(frozen=True)
class AgentConfig:
    """An `[agents.NAME]` table from the configuration, resolved."""

    name: str
    type: str  # scripted | command | claude-code | codex | gemini | opencode
    command: str | None = None  # binary path, or the command template for `command`
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    hook: str | None = None  # `command` agents: hook path inside the workdir
    trajectory: str | None = None  # `scripted` agents: trajectory name
    # `command` agents: the template's words that skip permission prompts,
    # dropped under --ask-permissions; None when the config does not say.
    skip_permissions_args: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    # The table's isolation keys as written (isolation, network, image, limits,
    # env_pass, home_dirs); `capeval.core.isolation.resolve_isolation` reads them.
    sandbox: Mapping[str, Any] = field(default_factory=dict)
    # What each of its repeats takes of a Ray node (`--executor ray` only):
    # custom resources (`{claude_slots = 1}`) and CPUs (None: Ray's 1).
    ray_resources: Mapping[str, float] = field(default_factory=dict)
    num_cpus: float | None = None


def builtin_agents() -> dict[str, AgentConfig]:
    """The agents that exist without configuration, keyed by name."""
    return {name: AgentConfig(name=name, type=kind) for name, kind in BUILTIN_AGENTS.items()}


def hook_problem(configured: str) -> str | None:
    """Why a configured `hook` path cannot be installed, or None.

    One rule for `capeval validate` and the run: validate said ok and every
    repeat was then refused (an absolute or `..` path), or failed writing the
    hook (`.`, the workdir itself; a NUL byte).
    """
    rel = PurePosixPath(configured)
    if "\0" in configured or rel.is_absolute() or ".." in rel.parts or not rel.parts:
        return (
            f"hook path {configured!r} must be relative to the workdir and name a file "
            f"inside it, e.g. {DEFAULT_HOOK!r}"
        )
    return None


def trajectory_problem(name: str) -> str | None:
    """Why `name` cannot be a trajectory name, or None.

    The name becomes `trajectories/<name>.json`: `../../x` played
    `cases/x.json`, a file outside the trajectories the case ships.
    """
    if not name or any(ch in name for ch in "/\\\0") or name in (".", ".."):
        return (
            f"trajectory name {name!r} must be a file name in the case's trajectories/ "
            "folder without .json (no '/', '\\' or '..'), e.g. oracle"
        )
    return None
