"""From options, configuration and the workspace to the exact list of repeats.

`plan_run` is pure apart from reading the workspace and the stream it would
resume: it resolves the matrix, the cases and the agents, applies every guard,
and stores nothing; `write_plan` stores the plan beside the stream once the
run is about to start.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from capeval import __version__
from capeval.config import MAX_TOTAL_REPEATS
from capeval.core.agentconfig import AgentConfig
from capeval.core.case import Case
from capeval.core.isolation import Isolation, resolve_isolation
from capeval.core.matrix import Variant, parse_matrix
from capeval.core.row import Row
from capeval.core.shards import (
    RULE,
    Shard,
    case_weights,
    derived_run_id,
    digest,
    parse_shard,
    run_id_problem,
    shard_stream_name,
    slice_of,
)
from capeval.results.output import write_output
from capeval.runner.artifacts import run_budget, taken_by_others
from capeval.runner.guards import (
    cells,
    config_file,
    config_key,
    missing_binaries,
    refuse_bad_timeouts,
    refuse_broken_commands,
    refuse_missing_trajectories,
    refuse_replacing_the_baseline,
    refuse_unrunnable_isolation,
    refuse_unwritable_outputs,
    refuse_used_stream,
    sandbox_paths,
    taken_message,
)
from capeval.runner.options import (
    DEFAULT_AGENT,
    DEFAULT_SCRIPTED_MODEL,
    RunError,
    RunOptions,
    RunPlan,
    counted,
    jsonable,
    new_run_id,
    pick,
    plan_path,
    resolve_artifacts_dir,
)
from capeval.runner.planfile import SHAPE_FIELDS
from capeval.runner.repeat import RepeatJob, RepeatSettings, now_iso
from capeval.runner.resume import (
    refuse_changed_plan,
    resume,
    standing_rows,
    stored_config,
    stored_resolution,
    stored_root,
    stored_sharding,
)


def plan_run(options: RunOptions) -> RunPlan:
    """Resolve everything a run needs; raises RunError/ProblemsError before anything runs."""
    from capeval.config import load_config
    from capeval.runner.gitinfo import git_info
    from capeval.workspace import find_root, load_cases

    done: list[Row] = []
    skipped: list[str] = []
    run_id, started_at = new_run_id(), now_iso()
    if options.resume is not None:
        # First: a stream or plan that cannot be resumed is the error to show,
        # not the workspace lookup that a broken plan's `root` would misdirect.
        options, done, run_id, started_at, skipped = resume(options)
    explicit = options.root
    if explicit is None and options.resume is not None:
        explicit = stored_root(Path(options.resume))  # resumable from anywhere
    root = find_root(explicit=explicit)
    config_file = options.config
    if config_file is None and options.resume is not None:
        config_file = stored_config(Path(options.resume))  # the run's own --config
    config = load_config(root, config_file)
    shard = _shard(options)
    if options.run_id is not None:
        run_id = _given_run_id(options, run_id)
    given_jsonl = options.resume or options.jsonl
    if given_jsonl is not None and options.resume is None:
        refuse_used_stream(Path(given_jsonl))

    frozen = stored_resolution(options.resume) if options.resume is not None else None
    cases = load_cases(root, config, _case_ids_to_load(options, frozen, root))
    if frozen is not None:
        cases = _cases_of_the_run(cases, frozen, Path(options.resume))  # type: ignore[arg-type]
    if options.tiers:
        unknown = [t for t in options.tiers if t not in config.tiers]
        if unknown:
            raise RunError(
                f"--tier {unknown[0]}: unknown tier; expected one of: {', '.join(config.tiers)}"
            )
        cases = [c for c in cases if c.tier in options.tiers]
    if not cases:
        raise RunError(
            "no cases selected: check --case/--tier, or add cases under evals/capability/cases"
        )

    default_agent = options.agent or config.agent or DEFAULT_AGENT
    agents = dict(config.agents)
    if default_agent not in agents:
        raise RunError(_unknown_agent(default_agent, agents, "--agent", config, root))
    variants = [
        replace(v, agent=v.agent or default_agent)
        for v in _variants(options, config, default_agent, agents, root)
    ]
    # Cells that came from the configuration are fixed there, not on the command line.
    cells_from = "" if options.matrix else f"{config_key(config, root, 'matrix')}: "
    used: dict[str, AgentConfig] = {}
    for v in variants:
        name = v.agent or default_agent
        if name not in agents:
            hint = (
                f"; if '@{name}' is part of the model name, name the agent after it "
                f"({v.provider}:{v.model}@{name}@<agent>)"
            )
            where = f"{cells_from}variant {v.id}"
            raise RunError(_unknown_agent(name, agents, where, config, root) + hint)
        used[name] = agents[name]

    refuse_bad_timeouts(options, config, root)
    repeats = options.repeats if options.repeats is not None else config.repeats
    concurrency = options.concurrency if options.concurrency is not None else config.concurrency
    if repeats < 1 or concurrency < 1:
        raise RunError("--repeats and --concurrency must be at least 1")
    total = len(variants) * len(cases) * repeats
    if total > MAX_TOTAL_REPEATS:
        where = (
            f"--repeats {repeats}"
            if options.repeats is not None
            else f"{config_key(config, root, 'repeats')} = {repeats}"
        )
        raise RunError(
            f"{where}: {counted(len(variants), 'variant')} x {counted(len(cases), 'case')} x "
            f"{counted(repeats, 'repeat')} = {total} repeats, more than the "
            f"{MAX_TOTAL_REPEATS:,} one run may plan; pass a smaller --repeats (or fewer "
            "cases or variants)"
        )
    git = git_info(root)
    agent_timeout_s = pick(options.agent_timeout_s, config.agent_timeout_s)
    verify_timeout_s = pick(options.verify_timeout_s, config.verify_timeout_s)
    max_turns = pick(options.max_turns, config.max_turns)
    resolved = _resolution(variants, cases, used, agent_timeout_s, verify_timeout_s, max_turns)
    sharding: dict[str, Any] | None = None
    if shard is not None:
        sharding = _sharding(options, shard, resolved, repeats, git.commit)
        if options.resume is None and options.run_id is None:
            run_id = derived_run_id(sharding["planDigest"])
    if given_jsonl is None:
        name = f"{run_id}.jsonl" if shard is None else shard_stream_name(run_id, shard)
        jsonl = config.results_dir / name
        refuse_used_stream(jsonl)
    else:
        jsonl = Path(given_jsonl)
    artifacts_dir = resolve_artifacts_dir(options.artifacts, jsonl)
    refuse_unwritable_outputs(options, config_key(config, root, "results"), jsonl, artifacts_dir)
    refuse_replacing_the_baseline(options, config.baseline, config_key(config, root, "baseline"))
    hidden, protected = sandbox_paths(
        root, config.results_dir, jsonl, artifacts_dir, config.baseline, options.out
    )
    settings = RepeatSettings(
        root=root,
        retries=options.retries,
        retry_wait_s=options.retry_wait_s,
        agent_timeout_s=agent_timeout_s,
        verify_timeout_s=verify_timeout_s,
        max_turns=max_turns,
        skip_permissions=not bool(options.ask_permissions),
        allow_provider_fallback=bool(options.allow_provider_fallback),
        tmp_parent=options.tmp_dir,
        artifacts_dir=artifacts_dir,
        artifact_budget=None if artifacts_dir is None else run_budget(artifacts_dir),
        rows_dir=jsonl.parent,
        hidden=hidden,
        protected=protected,
        context={
            "runId": run_id,
            "runStartedAt": started_at,
            "capevalVersion": __version__,
            "gitCommit": git.commit,
            "gitDirty": git.dirty,
        },
    )
    isolations = {
        (name, c.id): _isolation(options, config, agent, c)
        for name, agent in used.items()
        for c in cases
    }
    jobs = [
        RepeatJob(
            case=c,
            variant=v,
            repeat=r,
            agent=used[v.agent or default_agent],
            isolation=isolations[(v.agent or default_agent, c.id)],
        )
        for v in variants
        for c in cases
        for r in range(repeats)
    ]
    planned = len(jobs)
    if sharding is not None and shard is not None:
        mine = slice_of((j.triple for j in jobs), shard, sharding["weights"])
        jobs = [j for j in jobs if j.triple in mine]
        sharding["planned"] = planned
    refuse_missing_trajectories(variants, cases, used, root)
    refuse_broken_commands(used, ask_permissions=not settings.skip_permissions)
    wanted = {j.triple for j in jobs}
    if options.retry_errors and options.resume is None:
        raise RunError(
            "--retry-errors runs again the repeats of a stream whose last row is an error; "
            "pass the stream with --resume PATH"
        )
    done, retrying = standing_rows(done, wanted, retry_errors=options.retry_errors)
    shape = {name: jsonable(getattr(options, name)) for name in SHAPE_FIELDS}
    shape["repeats"] = repeats
    shape["runId"], shape["runStartedAt"] = run_id, started_at
    shape["artifacts"] = _stored_artifacts(artifacts_dir, jsonl)
    shape["resolved"] = resolved
    if sharding is not None:
        shape["shard"] = str(shard)
        shape["sharding"] = sharding
    # Relative to the stream's folder, like `artifacts`, so the two can move together.
    shape["root"] = Path(os.path.relpath(root, jsonl.resolve().parent)).as_posix()
    if config_file is not None:
        # Not a shape field (it is read before the stored plan), but a resume
        # without it read capeval.toml and refused the run as "changed".
        config_at = config_file if config_file.is_absolute() else Path.cwd() / config_file
        shape["config"] = Path(os.path.relpath(config_at, jsonl.resolve().parent)).as_posix()
    if frozen is not None:
        refuse_changed_plan(frozen, shape["resolved"], Path(options.resume))  # type: ignore[arg-type]
    plan = RunPlan(
        root=root,
        run_id=run_id,
        started_at=started_at,
        jsonl_path=jsonl,
        variants=variants,
        cases=cases,
        agents=used,
        repeats=repeats,
        concurrency=concurrency,
        settings=settings,
        jobs=[_continued(j, retrying) for j in jobs],
        done=done,
        retrying=retrying,
        shape=shape,
        warnings=skipped,
        shard=shard,
        total_planned=planned,
    )
    if artifacts_dir is not None:
        # A claim by a run of this very stream is left to `execute`: that run may
        # still be writing it (the stream's lock then says so), or have stopped
        # before its first repeat ended (nothing to lose: its claim is taken over).
        taken = [
            t
            for t in taken_by_others(artifacts_dir, cells(plan.todo), run_id)
            if not t.of_stream(jsonl)
        ]
        if taken:
            raise RunError(taken_message(taken, options, artifacts_dir, jsonl))
    # An agent that runs only in containers may have its CLI in the image alone.
    on_host = {
        j.agent.name: j.agent for (_, _), j in _first_per_cell(plan.todo).items()
        if j.isolation.backend != "docker"
    }  # fmt: skip
    # On Ray, repeats run on the cluster's nodes: what depends on the host (the
    # agents' binaries, their sandboxes, their versions) is checked on a worker
    # when the run starts (capeval.runner.rayexec), not on this machine.
    here = options.executor != "ray"
    missing = missing_binaries(on_host) if here else None
    if missing and options.dry_run:
        plan.warnings.append(f"{missing}; a real run would refuse to start")
    elif missing:
        raise RunError(f"{missing}; nothing was run")
    plan.warnings += refuse_unrunnable_isolation(
        list(_first_per_cell(plan.todo).values()),
        skip_permissions=settings.skip_permissions,
        dry_run=options.dry_run,
        host_checks=here,
    )
    return plan


def _continued(job: RepeatJob, retrying: dict[tuple[str, str, int], Row]) -> RepeatJob:
    """A job that runs again a repeat whose last row is an `error` counts its attempts on."""
    row = retrying.get(job.triple)
    if row is None:
        return job
    made = row.get("attempts")
    made = made if isinstance(made, int) and not isinstance(made, bool) and made > 0 else 1
    return replace(job, prior_attempts=made)


def _first_per_cell(jobs: list[RepeatJob]) -> dict[tuple[str, str], RepeatJob]:
    """One job per (agent, case): what a check per agent and isolation needs to look at."""
    out: dict[tuple[str, str], RepeatJob] = {}
    for job in jobs:
        out.setdefault((job.agent.name, job.case.id), job)
    return out


def _isolation(options: RunOptions, config: Any, agent: AgentConfig, case: Case) -> Isolation:
    return resolve_isolation(
        config.sandbox, agent.sandbox, backend=options.isolation, case_image=case.image
    )


def _resolution(
    variants: list[Variant],
    cases: list[Case],
    agents: dict[str, AgentConfig],
    agent_timeout_s: float,
    verify_timeout_s: float,
    max_turns: int | None,
) -> dict[str, Any]:
    """What the run's flags resolved to through capeval.toml and the cases folder.

    The flags alone do not pin a run: an unflagged run takes its matrix, agents,
    timeouts and cases from the workspace, which may change before a resume.
    """
    return {
        "variants": [
            {
                "id": v.id,
                "provider": v.provider,
                "model": v.model,
                "agent": v.agent,
                "agentType": agents[v.agent].type if v.agent in agents else None,
                "agentTrajectory": agents[v.agent].trajectory if v.agent in agents else None,
            }
            for v in variants
        ],
        "cases": [c.id for c in cases],
        "agentTimeoutS": agent_timeout_s,
        "verifyTimeoutS": verify_timeout_s,
        "maxTurns": max_turns,
    }


def _shard(options: RunOptions) -> Shard | None:
    if options.shard is None:
        return None
    try:
        return parse_shard(options.shard)
    except ValueError as exc:
        raise RunError(f"--shard {exc}") from None


def _given_run_id(options: RunOptions, run_id: str) -> str:
    """`--run-id` checked; on --resume it must be the run's own."""
    given = str(options.run_id)
    problem = run_id_problem(given)
    if problem is not None:
        raise RunError(f"--run-id {problem}")
    if options.resume is not None and given != run_id:
        raise RunError(
            f"--run-id {given} differs from the run id of {options.resume} ({run_id}); "
            "drop --run-id to finish the run as it was started"
        )
    return given


def _sharding(
    options: RunOptions,
    shard: Shard,
    resolved: dict[str, Any],
    repeats: int,
    commit: str | None,
) -> dict[str, Any]:
    """The plan's `sharding` block: what cut this shard, and what all N shards agree on.

    A resume takes the block its plan stored (the weights the shards were
    cut with, whatever the history says today); a new shard weighs its
    cases by `options.shard_durations`.
    """
    if options.resume is not None:
        stored = stored_sharding(Path(options.resume))
        if stored is None:
            raise RunError(
                f"--resume {options.resume}: its plan has --shard {shard} but no `sharding` "
                "block (the weights it was cut with); start the shard again on a new --jsonl"
            )
        if stored.get("rule") != RULE:
            raise RunError(
                f"--resume {options.resume}: the shard was cut by rule {stored.get('rule')!r}, "
                f"this capeval cuts by {RULE!r}; finish it with the capeval that started it"
            )
        return dict(stored)
    weights = case_weights(options.shard_durations or {}, resolved["cases"])
    agreed = {
        "rule": RULE,
        "count": shard.count,
        "weights": weights,
        "resolved": resolved,
        "repeats": repeats,
        "flags": {name: jsonable(getattr(options, name)) for name in DIGEST_FLAGS},
        "gitCommit": commit,
    }
    return {
        "index": shard.index,
        "count": shard.count,
        "rule": RULE,
        "weights": weights,
        "planDigest": digest(agreed),
    }


# Flags that change what a repeat is beyond the resolution (which already
# holds the cases, variants, timeouts and turn budget).
DIGEST_FLAGS = ("isolation", "ask_permissions", "allow_provider_fallback")


def _case_ids_to_load(
    options: RunOptions, frozen: dict[str, Any] | None, root: Path
) -> list[str] | None:
    """The case ids to validate and load; None: every case in the folder.

    A resume loads only its run's cases: a case added since (perhaps still
    being written, so invalid) is no part of the run and must not refuse it.
    """
    from capeval.workspace import cases_dir

    ids = frozen.get("cases") if frozen is not None else None
    if options.cases or not isinstance(ids, list) or not ids:
        return list(options.cases) or None
    gone = [i for i in ids if not (isinstance(i, str) and (cases_dir(root) / i).is_dir())]
    if gone:
        raise RunError(_gone_case(gone[0], Path(options.resume)))  # type: ignore[arg-type]
    return [str(i) for i in ids]


def _gone_case(case_id: Any, stream: Path) -> str:
    return (
        f"--resume {stream}: case {case_id!r} of this run is no longer in the workspace "
        "(or no longer selected); restore it, or start a new run"
    )


def _cases_of_the_run(cases: list[Case], frozen: dict[str, Any], stream: Path) -> list[Case]:
    """A resume finishes the run that was started: cases added since stay out of it."""
    ids = frozen.get("cases")
    if not isinstance(ids, list):
        return cases
    by_id = {c.id: c for c in cases}
    gone = [i for i in ids if i not in by_id]
    if gone:
        raise RunError(_gone_case(gone[0], stream))
    return [by_id[i] for i in ids]


def _stored_artifacts(artifacts_dir: Path | None, jsonl: Path) -> str | bool:
    """The plan's record of the choice: relative to the stream's folder, so both can move."""
    if artifacts_dir is None:
        return False
    return Path(os.path.relpath(artifacts_dir, jsonl.parent)).as_posix()


def _unknown_agent(
    name: str, agents: dict[str, AgentConfig], where: str, config: Any, root: Path
) -> str:
    file, prefix = config_file(config, root)
    return (
        f"{where}: unknown agent {name!r}; expected one of: {', '.join(sorted(agents))}, "
        f"or add an [{prefix}agents.{name}] table to {file}"
    )


def _variants(
    options: RunOptions,
    config: Any,
    default_agent: str,
    agents: dict[str, AgentConfig],
    root: Path,
) -> list[Variant]:
    provider = options.provider or config.provider
    model = options.model or config.model
    cells: Sequence[str] = options.matrix or config.matrix
    if not options.matrix and options.provider and options.model:
        cells = ()  # both flags name one cell, whatever capeval.toml's matrix says
    if not cells and not (provider and model):
        agent = agents.get(default_agent)
        if agent is not None and agent.type == "scripted":
            # The embedded default: play the oracle trajectory of every case.
            provider = provider or "scripted"
            model = model or agent.trajectory or DEFAULT_SCRIPTED_MODEL
        else:
            raise RunError(
                f"agent {default_agent!r} needs a model: pass --matrix provider:model, or "
                "--provider and --model, or set matrix in capeval.toml"
            )
    try:
        variants = parse_matrix(cells, provider=provider, model=model, default_agent=None)
    except ValueError as exc:
        where = "" if options.matrix or not cells else f"{config_key(config, root, 'matrix')}: "
        raise RunError(f"{where}{exc}") from None
    # A flag that no cell took would be ignored in silence, and the run would
    # measure some other provider/model than the one asked for.
    source = "--matrix" if options.matrix else f"the matrix ({config_key(config, root, 'matrix')})"
    for flag, value, side in (
        ("--provider", options.provider, "provider"),
        ("--model", options.model, "model"),
    ):
        if cells and value and all(getattr(v, side) != value for v in variants):
            raise RunError(
                f"{flag} {value} is used by no cell: every cell of {source} names its own "
                f"{side} ({', '.join(v.id for v in variants)}); pass --provider and --model "
                "together for that one cell, or name it in --matrix"
            )
    return variants


def write_plan(plan: RunPlan) -> None:
    write_output(plan_path(plan.jsonl_path), json.dumps(plan.shape, indent=2) + "\n")
