"""The sandbox of each backend, by name (docs/isolation.md)."""

from __future__ import annotations

from capeval.core.isolation import Isolation
from capeval.isolation.bwrap import BwrapSandbox
from capeval.isolation.docker import DockerSandbox
from capeval.isolation.sandbox import Confinement, Sandbox

SANDBOXES: dict[str, type[Sandbox]] = {
    "none": Sandbox,
    "bwrap": BwrapSandbox,
    "docker": DockerSandbox,
}


def make_sandbox(isolation: Isolation, confinement: Confinement) -> Sandbox:
    """The sandbox of `isolation.backend`."""
    return SANDBOXES[isolation.backend](isolation, confinement)
