"""The sandbox interface, and the `none` backend.

A `Sandbox` runs one command (an agent CLI, the scripted player, a grader)
confined as its `Confinement` says: every path it may write is bound at its
own path, so the paths in the command and its environment mean the same
inside and outside; what must stay out of reach is masked (bwrap) or never
mounted (Docker). `run` has `capeval.proc.process.run_process`'s contract:
the command's own exit code, 124 on timeout, output captured, and nothing it
started left running afterwards.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from capeval.core.isolation import Isolation
from capeval.isolation.bridge import HttpBridge, bridged
from capeval.proc.process import ProcessResult, run_process


@dataclass(frozen=True)
class Confinement:
    """What one sandboxed process tree may see and touch, besides the read-only host."""

    name: str  # names its container or cgroup: the repeat and the role
    writable: tuple[Path, ...]  # bound read-write at their own paths
    readable: tuple[Path, ...] = ()  # bound read-only (the grader's copy of the case)
    hidden: tuple[Path, ...] = ()  # masked: workspace, results, baseline, run temp folder
    protected: tuple[Path, ...] = ()  # never shown again, not even read-only
    http: HttpBridge | None = None  # the fixture's socket, when the network is not shared


class Sandbox:
    """The `none` backend: the command runs as capeval's child, unconfined.

    Subclasses wrap the command; the environment allow-list applies to every
    backend (`capeval.isolation.environment`).
    """

    backend = "none"
    # The agent's binary may be looked up in the sandbox when it is not on the host.
    resolves_in_image = False

    def __init__(self, isolation: Isolation, confinement: Confinement) -> None:
        self.isolation = isolation
        self.confinement = confinement

    @property
    def sandboxed(self) -> bool:
        return self.backend != "none"

    @property
    def shares_network(self) -> bool:
        return self.isolation.network == "shared"

    def python(self) -> list[str]:
        """How to start capeval's own Python helpers (the scripted player) in the sandbox."""
        return [sys.executable]

    def python_env(self) -> dict[str, str]:
        """Variables those helpers need to import capeval there."""
        return {}

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        timeout_s: float | None,
        kill_grace_s: float = 5.0,
        tools: Sequence[str | Path] = (),
    ) -> ProcessResult:
        """Run `argv` in the sandbox; `tools` are binaries whose install trees it must see."""
        return run_process(
            list(argv), cwd=cwd, env=env, timeout_s=timeout_s, kill_grace_s=kill_grace_s
        )

    def payload(self, argv: Sequence[str]) -> list[str]:
        """`argv`, behind the HTTP bridge when the sandbox has a network of its own."""
        bridge = self.confinement.http
        if bridge is None or self.shares_network:
            return list(argv)
        return bridged(self.python(), bridge, list(argv))
