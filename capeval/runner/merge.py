"""`capeval merge`: the N shard streams of one sharded run joined into one run.

Each shard (`capeval run --shard I/N`) wrote its own row stream and, beside
it, its plan with a `sharding` block: which plan it is a slice of (a digest
of the cases, variants, timeouts, repeats, flags, weights and commit), N,
the weights it was cut with. From those the merge knows every triple the run
planned and which shard owed it, so it can:

- refuse shards of different plans or runs, a shard given twice, a row that
  is not its shard's, and rows of another run;
- say which shards are missing and which triples no shard holds;
- write each row once, as its shard holds it (its `provenance` names the
  shard, host and node that ran it), in plan order; only `artifacts`, a path
  relative to the stream's folder, is re-anchored to the merged stream's.

A merged stream gets a plan of its own, the run's unsharded, so
`capeval run --resume RUN.jsonl` runs exactly the triples still missing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.core.row import Row, triple
from capeval.core.shards import RULE, Shard, Triple, assign
from capeval.results.errors import ResultFileError
from capeval.runner.options import plan_path
from capeval.runner.planfile import plan_problem


class MergeError(ValueError):
    """Shards that cannot be one run; the message names the files and the fix."""


@dataclass
class ShardStream:
    path: Path
    plan: dict[str, Any]
    shard: Shard
    rows: list[Row]


@dataclass
class Merged:
    """What the shards hold together, and what they owe."""

    run_id: str
    count: int
    shards: list[ShardStream]
    planned: list[Triple]  # every triple of the run, in plan order
    owner: dict[Triple, int]  # the shard that runs each
    rows: list[Row]  # every shard's rows, in plan order
    sources: list[Path]  # the shard stream each row came from
    warnings: list[str] = field(default_factory=list)

    @property
    def missing_shards(self) -> list[int]:
        given = {s.shard.index for s in self.shards}
        return [i for i in range(1, self.count + 1) if i not in given]

    @property
    def missing(self) -> list[Triple]:
        held = {triple(r) for r in self.rows}
        return [t for t in self.planned if t not in held]

    def owed_by(self, index: int) -> list[Triple]:
        return [t for t in self.planned if self.owner[t] == index]


def planned_triples(plan: dict[str, Any]) -> list[Triple]:
    """Every (variant, case, repeat) a plan holds, in run order."""
    resolved = plan.get("resolved") or {}
    variants = [str(v["id"]) for v in resolved.get("variants") or []]
    cases = [str(c) for c in resolved.get("cases") or []]
    return [(v, c, r) for v in variants for c in cases for r in range(int(plan["repeats"]))]


def read_shard(path: Path) -> tuple[ShardStream, list[str]]:
    """One shard's stream and plan, and what reading it skipped (a torn last line);
    MergeError when it is not a shard's."""
    from capeval.results.formats import holds_rows
    from capeval.results.inputs import is_regular
    from capeval.results.jsonl import read_jsonl

    if not path.exists():
        raise MergeError(f"{path}: no such file; pass each shard's .jsonl row stream")
    if not is_regular(path):  # a shard is a file on disk, with its plan beside it
        raise MergeError(f"{path}: not a regular file; pass each shard's .jsonl row stream")
    meta = plan_path(path)
    if not is_regular(meta):
        kind = "" if holds_rows(path) or path.stat().st_size == 0 else " (a v3 file?)"
        raise MergeError(
            f"{path}{kind}: no plan beside it ({meta.name}); pass each shard's .jsonl row "
            "stream with its plan file next to it (keep both when copying shards around)"
        )
    try:
        plan = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise MergeError(f"{meta}: cannot be read as a plan: {exc}") from None
    try:
        rows, skipped = read_jsonl(path)
    except ResultFileError as exc:
        raise MergeError(str(exc)) from None
    problem = plan_problem(plan, holds_rows=bool(rows))
    if problem is not None:
        raise MergeError(f"{meta}: {problem}")
    sharding = plan.get("sharding")
    if not isinstance(sharding, dict):
        raise MergeError(
            f"{path}: not a shard (its plan {meta.name} has no `sharding`); merge joins the "
            "streams of `capeval run --shard I/N`"
        )
    if sharding.get("rule") != RULE:
        raise MergeError(
            f"{path}: cut by rule {sharding.get('rule')!r} ({meta.name}); this capeval cuts and merges by "
            f"{RULE!r}: merge with the capeval that ran the shards"
        )
    shard = Shard(int(sharding["index"]), int(sharding["count"]))
    if shard.index > shard.count:
        raise MergeError(f"{meta}: its `sharding` says shard {shard}, which no run has")
    return ShardStream(path, plan, shard, rows), skipped


def merge(paths: Sequence[Path]) -> Merged:
    """The shards at `paths` as one run; MergeError when they cannot be one."""
    if not paths:
        raise MergeError("no shard given; pass the .jsonl streams of the run's shards")
    shards: list[ShardStream] = []
    warnings: list[str] = []
    for path in paths:
        stream, skipped = read_shard(Path(path))
        shards.append(stream)
        warnings += skipped
    first = shards[0]
    by_index: dict[int, ShardStream] = {}
    for s in shards:
        for name, what in (("runId", "runs"), ("sharding", "plans")):
            mine, theirs = _agreed(s.plan, name), _agreed(first.plan, name)
            if mine != theirs:
                raise MergeError(
                    f"shards of different {what}: {s.path} ({_described(s.plan, name)}) and "
                    f"{first.path} ({_described(first.plan, name)}); merge the shards of "
                    "one run of one plan (same commit, cases, variants, repeats and --shard N)"
                )
        if s.shard.index in by_index:
            raise MergeError(
                f"shard {s.shard} is given twice: {by_index[s.shard.index].path} and {s.path}; "
                "pass each shard once"
            )
        by_index[s.shard.index] = s
    run_id = str(first.plan["runId"])
    planned = planned_triples(first.plan)
    owner = assign(planned, first.shard.count, first.plan["sharding"].get("weights") or {})
    order = {t: i for i, t in enumerate(planned)}
    rows: list[tuple[int, int, Row, Path]] = []
    from capeval.results.supersede import superseded

    for s in shards:
        seen: dict[Triple, int] = {}
        # An `error` row a `--retry-errors` resume of the shard ran again: the later
        # row stands; both are kept, as the shard holds them, and that is no duplicate.
        gone = superseded(s.rows)
        for n, row in enumerate(s.rows, start=1):
            if row.get("runId") != run_id:
                raise MergeError(
                    f"{s.path}: row {n} is of run {row.get('runId')!r}, the shard's plan of "
                    f"run {run_id}; move that run's rows to a file of their own"
                )
            key = triple(row)
            if owner.get(key) != s.shard.index:
                whose = f"shard {owner[key]}/{s.shard.count}'s" if key in owner else "no shard's"
                raise MergeError(
                    f"{s.path}: row {n} ({_shown(key)}) is {whose}, not shard {s.shard}'s; "
                    "this stream is not the shard its plan says"
                )
            if key in seen and not gone[seen[key] - 1]:
                warnings.append(
                    f"{s.path}: row {n} repeats {_shown(key)} (first at row {seen[key]}); "
                    "both are kept, as the shard holds them"
                )
            if key not in seen or gone[seen[key] - 1]:
                seen[key] = n
            rows.append((order[key], len(rows), row, s.path))
    rows.sort(key=lambda item: (item[0], item[1]))
    return Merged(
        run_id=run_id,
        count=first.shard.count,
        shards=sorted(shards, key=lambda s: s.shard),
        planned=planned,
        owner=owner,
        rows=[item[2] for item in rows],
        sources=[item[3] for item in rows],
        warnings=warnings,
    )


def _agreed(plan: dict[str, Any], name: str) -> Any:
    if name == "runId":
        return plan.get("runId")
    sharding = plan.get("sharding") or {}
    return (sharding.get("planDigest"), sharding.get("count"), sharding.get("rule"))


def _described(plan: dict[str, Any], name: str) -> str:
    if name == "runId":
        return f"run {plan.get('runId')}"
    sharding = plan.get("sharding") or {}
    return f"plan {str(sharding.get('planDigest'))[:12]}, {sharding.get('count')} shards"


def _shown(key: Triple) -> str:
    return f"{key[0]} {key[1]} #{key[2]}"


def write_merged(merged: Merged, out: Path, *, root: Path | None = None) -> None:
    """The merged stream at `out`, and beside it the run's plan, unsharded (resumable)."""
    from capeval.results.output import write_output
    from capeval.workspace import is_workspace

    folder = out.resolve().parent
    lines = [
        json.dumps(_reanchored(row, source, folder), ensure_ascii=False, allow_nan=False)
        for row, source in zip(merged.rows, merged.sources, strict=True)
    ]
    plan = {k: v for k, v in merged.shards[0].plan.items() if k not in ("sharding",)}
    plan["shard"] = None
    starts = [str(s.plan.get("runStartedAt")) for s in merged.shards if s.plan.get("runStartedAt")]
    if starts:
        plan["runStartedAt"] = min(starts)
    plan["merged"] = {
        "shards": merged.count,
        "planDigest": merged.shards[0].plan["sharding"]["planDigest"],
        "weights": merged.shards[0].plan["sharding"].get("weights") or {},
        "from": [
            {
                "shard": str(s.shard),
                "file": _relative(s.path.resolve(), folder),
                "rows": len(s.rows),
            }
            for s in merged.shards
        ],
    }
    first = merged.shards[0]
    plan.pop("root", None)
    plan.pop("config", None)
    candidates = [root, _stored(first, "root")]
    workspace = next((c for c in candidates if c is not None and is_workspace(c)), None)
    if workspace is not None:
        plan["root"] = _relative(workspace.resolve(), folder)
    config = _stored(first, "config")
    if config is not None and config.is_file():
        plan["config"] = _relative(config, folder)
    if plan.get("artifacts") is not False:
        plan["artifacts"] = f"{out.name.removesuffix('.jsonl')}.artifacts"
    write_output(out, "".join(line + "\n" for line in lines))
    write_output(plan_path(out), json.dumps(plan, indent=2) + "\n")


def _stored(stream: ShardStream, key: str) -> Path | None:
    rel = stream.plan.get(key)
    if not isinstance(rel, str) or not rel:
        return None
    return (stream.path.resolve().parent / rel).resolve()


def _relative(path: Path, folder: Path) -> str:
    return Path(os.path.relpath(path, folder)).as_posix()


def _reanchored(row: Row, stream: Path, folder: Path) -> Row:
    """`row` with its `artifacts` path relative to `folder` instead of its stream's."""
    kept = row.get("artifacts")
    if not isinstance(kept, str) or not kept or Path(kept).is_absolute():
        return row
    where = (stream.resolve().parent / kept).resolve()
    return {**row, "artifacts": _relative(where, folder)}
