"""What a run is asked to do and what it produced: options, the resolved plan, the outcome.

The types every part of the runner passes around, kept apart from the code
that fills them so that planning, guards, resume and execution can each
import them without importing one another.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from capeval.agents.base import Adapter
from capeval.core.agentconfig import AgentConfig
from capeval.core.case import Case
from capeval.core.matrix import Variant
from capeval.core.row import Row, triple
from capeval.core.shards import Shard
from capeval.runner.artifacts import default_artifacts_dir
from capeval.runner.planfile import PLAN_SUFFIX
from capeval.runner.repeat import RepeatJob, RepeatSettings

DEFAULT_AGENT = "scripted"


DEFAULT_SCRIPTED_MODEL = "oracle"


class RunError(ValueError):
    """Bad options or a workspace that cannot run; the message says what to fix."""


@dataclass
class RunOptions:
    """`capeval run`'s flags. None means "not given": config, then defaults apply."""

    root: Path | None = None
    config: Path | None = None
    cases: tuple[str, ...] = ()
    tiers: tuple[str, ...] = ()
    provider: str | None = None
    model: str | None = None
    matrix: tuple[str, ...] = ()
    agent: str | None = None
    repeats: int | None = None
    concurrency: int | None = None
    max_turns: int | None = None
    agent_timeout_s: float | None = None
    verify_timeout_s: float | None = None
    ask_permissions: bool | None = None
    allow_provider_fallback: bool | None = None
    dry_run: bool = False
    jsonl: Path | None = None
    resume: Path | None = None
    out: Path | None = None
    tmp_dir: Path | None = None
    # Where each repeat's evidence goes: None "not given" (resume: as stored,
    # else on), True beside the stream, False none, a Path that folder.
    artifacts: Path | bool | None = None
    isolation: str | None = None  # --isolation: the backend of every agent (docs/isolation.md)
    shard: str | None = None  # --shard I/N: this machine's slice of the triples (docs/scale-out.md)
    run_id: str | None = None  # --run-id: default new, or derived from the plan for a shard
    # Case id -> durations (ms) of its recent repeats, read from history by the
    # command (capeval.analysis.durations): what weighs a new shard's cases.
    shard_durations: Mapping[str, Sequence[float]] | None = None
    executor: str = "local"  # where repeats run: "local" (threads) or "ray" (a Ray cluster)
    ray_address: str | None = None  # --ray-address; None: RAY_ADDRESS, else a local Ray
    # A repeat that measured nothing (outcome `error`) is run again up to `retries`
    # more times, the first wait `retry_wait_s` (docs/running.md#retries).
    retries: int = 2
    retry_wait_s: float = 10.0
    # --resume --retry-errors: also run again the repeats whose last row is an `error`.
    retry_errors: bool = False
    on_row: Callable[[Row, int, int], None] | None = None  # (row, done, total)
    on_retry: Callable[[Row, float], None] | None = None  # (the error row, seconds to wait)
    handle_signals: bool = True


@dataclass
class RunPlan:
    root: Path
    run_id: str
    started_at: str
    jsonl_path: Path
    variants: list[Variant]
    cases: list[Case]
    agents: dict[str, AgentConfig]  # by name, those the variants use
    repeats: int
    concurrency: int
    settings: RepeatSettings
    jobs: list[RepeatJob]  # every repeat of the run, in order
    done: list[Row] = field(default_factory=list)  # rows already in the stream (resume)
    # Resume --retry-errors: the `error` rows of the repeats run again, by triple; each
    # stands until its repeat's new row supersedes it.
    retrying: dict[tuple[str, str, int], Row] = field(default_factory=dict)
    shape: dict[str, Any] = field(default_factory=dict)
    adapters: dict[str, Adapter] = field(default_factory=dict)
    # What reading the resumed stream skipped (a torn last line), for the user.
    warnings: list[str] = field(default_factory=list)
    # Told of each retry of an `error` attempt: (its row, seconds before the next).
    on_retry: Callable[[Row, float], None] | None = None
    shard: Shard | None = None  # this run's slice of a sharded plan; None: every triple
    total_planned: int = 0  # triples of the whole plan (every shard's)
    # `todo` as last worked out, with the lists it came from (held, so their ids stay theirs).
    _todo: tuple[list[RepeatJob], list[Row], int, int, list[RepeatJob]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def todo(self) -> list[RepeatJob]:
        """The jobs whose rows are not in `done`, in plan order.

        Worked out again only when `jobs` or `done` changed (replaced, or grown):
        it is asked for several times per run, and each time was a pass over
        every repeat of the plan.
        """
        memo = self._todo
        if (
            memo is None
            or memo[0] is not self.jobs
            or memo[1] is not self.done
            or memo[2] != len(self.jobs)
            or memo[3] != len(self.done)
        ):
            finished = {triple(r) for r in self.done}
            todo = [j for j in self.jobs if j.triple not in finished]
            memo = self._todo = (self.jobs, self.done, len(self.jobs), len(self.done), todo)
        return list(memo[4])

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "jsonl": str(self.jsonl_path),
            "variants": [{**v.to_json(), "agent": v.agent} for v in self.variants],
            "cases": [c.id for c in self.cases],
            "repeats": self.repeats,
            "concurrency": self.concurrency,
            "artifacts": None
            if self.settings.artifacts_dir is None
            else str(self.settings.artifacts_dir),
            "total": len(self.jobs),
            "shard": None if self.shard is None else str(self.shard),
            "done": len(self.jobs) - len(self.todo),
            "todo": [
                {"variantId": v, "id": c, "repeat": r} for v, c, r in (j.triple for j in self.todo)
            ],
        }


@dataclass
class RunOutcome:
    plan: RunPlan
    rows: list[Row]  # every row of the stream for this plan: earlier (resume) and new
    jsonl_path: Path
    exit_code: int
    interrupted: str | None = None  # the signal name when stopped early
    # Repeats the executor could not run (a Ray node lost more often than Ray
    # retries), each with why: they have no row, and `--resume` runs them.
    lost: list[str] = field(default_factory=list)

    @property
    def new_rows(self) -> int:
        return len(self.rows) - len(self.plan.done)


def new_run_id(now: datetime | None = None) -> str:
    """Sortable by start time, unique enough for concurrent runs: 20261130T164500Z-1a2b3c."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(3)}"


def plan_path(jsonl: Path) -> Path:
    return jsonl.with_name(jsonl.name + PLAN_SUFFIX)


def counted(n: int, noun: str) -> str:
    """`1 case`, `2 cases`: how the runner and its command count things."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def resolve_artifacts_dir(choice: Path | bool | None, jsonl: Path) -> Path | None:
    """The folder for each repeat's evidence, or None when the run keeps none."""
    if choice is False:
        return None
    if choice is None or choice is True:
        return default_artifacts_dir(jsonl)
    return Path(choice)


def pick(given: Any, configured: Any) -> Any:
    return given if given is not None else configured


def jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
