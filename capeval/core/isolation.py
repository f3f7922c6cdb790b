"""What sandbox a repeat runs in, as configured (docs/isolation.md): the pure half.

`isolation`, `network`, `image`, `limits` and `env_pass` may be set at the top
of `capeval.toml` and in each `[agents.NAME]` table (the agent's win, key by
key; `limits` key by key too, `env_pass` adds up); `home_dirs` belongs to the
agent; a case may name its own `image`; `capeval run --isolation` overrides the
backend of every agent. `resolve_isolation` turns those into the one
`Isolation` a repeat runs with. The backends themselves live in
`capeval.isolation`; nothing here touches a file or a process.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

BACKENDS: tuple[str, ...] = ("none", "bwrap", "docker")
NETWORKS: tuple[str, ...] = ("shared", "bridge", "none")
DEFAULT_BACKEND = "none"
DEFAULT_NETWORK = "shared"
LIMIT_KEYS: tuple[str, ...] = ("memory", "pids", "cpu_seconds", "cpus", "disk")
# The keys an [agents.NAME] table and the top level share.
SHARED_KEYS: tuple[str, ...] = ("isolation", "network", "image", "limits", "env_pass")

_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KkMmGgTt]?)(?:i?[Bb])?\s*$")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
SIZE_PATTERN = r"^\s*[0-9]+(\.[0-9]+)?\s*([KkMmGgTt](i?[Bb])?|[Bb])?\s*$"
SIZE_RULE = 'a size such as "4G", "512M" or a number of bytes'
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


def parse_size(value: int | float | str) -> int:
    """Bytes from `4G`, `512M`, `1.5g`, `2GiB` or a number of bytes (binary units)."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is no size; write {SIZE_RULE}")
    if isinstance(value, int | float):
        if value < 1:
            raise ValueError(f"{value!r} is no size; write {SIZE_RULE}")
        return int(value)
    match = _SIZE.match(value)
    if not match:
        raise ValueError(f"{value!r} is no size; write {SIZE_RULE}")
    size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if size < 1:
        raise ValueError(f"{value!r} is no size; write {SIZE_RULE}")
    return size


def show_size(size: int) -> str:
    for unit in ("T", "G", "M", "K"):
        if size >= _UNITS[unit.lower()] and size % _UNITS[unit.lower()] == 0:
            return f"{size // _UNITS[unit.lower()]}{unit}"
    return str(size)


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed process tree; None: no limit."""

    memory: int | None = None  # bytes
    pids: int | None = None
    cpu_seconds: int | None = None  # CPU time of each process
    cpus: float | None = None  # CPU share of the whole tree
    disk: int | None = None  # bytes: the largest file, and the private temp dir

    @classmethod
    def from_table(cls, table: Mapping[str, Any]) -> Limits:
        """From a `limits` table the schema accepted."""
        memory, disk = table.get("memory"), table.get("disk")
        cpu = table.get("cpu_seconds")
        return cls(
            memory=parse_size(memory) if memory is not None else None,
            pids=table.get("pids"),
            cpu_seconds=int(-(-cpu // 1)) if cpu is not None else None,
            cpus=float(table["cpus"]) if table.get("cpus") is not None else None,
            disk=parse_size(disk) if disk is not None else None,
        )

    def set(self) -> list[str]:
        """The names of the limits that are set."""
        return [k for k in LIMIT_KEYS if getattr(self, k) is not None]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in self.set():
            value = getattr(self, key)
            out[key] = show_size(value) if key in ("memory", "disk") else value
        return out


@dataclass(frozen=True)
class Isolation:
    """The sandbox one repeat's agent and grader run in."""

    backend: str = DEFAULT_BACKEND
    network: str = DEFAULT_NETWORK
    image: str | None = None
    limits: Limits = field(default_factory=Limits)
    home_dirs: tuple[str, ...] = ()
    env_pass: tuple[str, ...] = ()

    @property
    def sandboxed(self) -> bool:
        return self.backend != "none"

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "network": self.network,
            "image": self.image,
            "limits": self.limits.to_json(),
            "homeDirs": list(self.home_dirs),
            "envPass": list(self.env_pass),
        }


def resolve_isolation(
    run: Mapping[str, Any],
    agent: Mapping[str, Any],
    *,
    backend: str | None = None,
    case_image: str | None = None,
) -> Isolation:
    """The isolation of one repeat: `--isolation` (`backend`), else the agent's table, else
    the top level; the case's image before the agent's and the top level's."""
    limits = {**dict(run.get("limits") or {}), **dict(agent.get("limits") or {})}
    passed = [*(run.get("env_pass") or ()), *(agent.get("env_pass") or ())]
    return Isolation(
        backend=backend or agent.get("isolation") or run.get("isolation") or DEFAULT_BACKEND,
        network=agent.get("network") or run.get("network") or DEFAULT_NETWORK,
        image=case_image or agent.get("image") or run.get("image"),
        limits=Limits.from_table(limits),
        home_dirs=tuple(agent.get("home_dirs") or ()),
        env_pass=tuple(dict.fromkeys(passed)),
    )


def isolation_problem(iso: Isolation) -> str | None:
    """Why a resolved isolation cannot run anywhere (not: on this host), or None."""
    if iso.backend not in BACKENDS:
        return f"isolation {iso.backend!r} is unknown; expected one of: {', '.join(BACKENDS)}"
    if iso.network not in NETWORKS:
        return f"network {iso.network!r} is unknown; expected one of: {', '.join(NETWORKS)}"
    if iso.backend == "bwrap" and iso.network == "bridge":
        return (
            "network = \"bridge\" is Docker's: bwrap either shares the host's network "
            '("shared") or gives the sandbox none ("none")'
        )
    if iso.backend == "docker" and not iso.image:
        return (
            'isolation = "docker" needs an image: set image = "..." at the top of '
            "capeval.toml, in the agent's table, or in the case (see docs/isolation.md)"
        )
    if iso.backend == "none" and iso.limits.set():
        return (
            f"limits ({', '.join(iso.limits.set())}) need a sandbox: set isolation = "
            '"bwrap" or "docker", or remove limits'
        )
    return None


def home_dir_problem(entry: str) -> str | None:
    """Why a `home_dirs` entry cannot be copied into a sandbox home, or None."""
    rel = PurePosixPath(entry[2:]) if entry.startswith("~/") else None
    if rel is None or not rel.parts or ".." in rel.parts or "\0" in entry:
        return (
            f"{entry!r} must name a file or folder in your home as ~/PATH, e.g. "
            '"~/.claude" (no "..")'
        )
    return None


def home_relative(entry: str) -> PurePosixPath:
    """`~/.claude` -> `.claude` (an entry `home_dir_problem` accepted)."""
    return PurePosixPath(entry[2:])


# --- the configuration schema's parts ------------------------------------------

_SIZE_SCHEMA = {
    "anyOf": [
        {"type": "integer", "minimum": 1},
        {"type": "string", "pattern": SIZE_PATTERN},
    ],
    "description": SIZE_RULE,
}
LIMITS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "a table of memory, pids, cpu_seconds, cpus, disk",
    "properties": {
        "memory": _SIZE_SCHEMA,
        "pids": {"type": "integer", "minimum": 1, "description": "a positive integer"},
        "cpu_seconds": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "a number of CPU seconds > 0",
        },
        "cpus": {"type": "number", "exclusiveMinimum": 0, "description": "a number of CPUs > 0"},
        "disk": _SIZE_SCHEMA,
    },
}
ENV_PASS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "uniqueItems": True,
    "items": {
        "type": "string",
        "pattern": _ENV_NAME,
        "description": "an environment variable name, e.g. HTTPS_PROXY",
    },
    "description": 'a list of variable names passed from capeval\'s environment, e.g. ["HTTPS_PROXY"]',
}
SCHEMA_PROPERTIES: dict[str, Any] = {
    "isolation": {
        "type": "string",
        "enum": list(BACKENDS),
        "description": f"one of {', '.join(BACKENDS)}",
    },
    "network": {
        "type": "string",
        "enum": list(NETWORKS),
        "description": f"one of {', '.join(NETWORKS)}",
    },
    "image": {
        "type": "string",
        "minLength": 1,
        "description": 'a Docker image name, e.g. "capeval-agents:latest"',
    },
    "limits": LIMITS_SCHEMA,
    "env_pass": ENV_PASS_SCHEMA,
}
HOME_DIRS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "uniqueItems": True,
    "items": {"type": "string", "description": 'a path in your home as ~/PATH, e.g. "~/.claude"'},
    "description": 'a list of files or folders in your home copied into each sandbox home, e.g. ["~/.claude"]',
}


def table_problems(table: Mapping[str, Any], where: str) -> list[tuple[str, str]]:
    """(field, message) for what the schema cannot say of one table's isolation keys."""
    out: list[tuple[str, str]] = []
    for entry in table.get("home_dirs") or ():
        if isinstance(entry, str):
            problem = home_dir_problem(entry)
            if problem:
                out.append((f"{where}home_dirs", problem))
    if table.get("isolation") == "bwrap" and table.get("network") == "bridge":
        out.append(
            (
                f"{where}network",
                '"bridge" is Docker\'s: with isolation = "bwrap" use "shared" or "none"',
            )
        )
    return out
