"""`capeval run`: the matrix of variants x cases x repeats against the agents.

A thin wrapper over `capeval.runner.plan.plan_run` and `capeval.runner.run.execute` (a notebook can
call those directly). Exit codes: 0 every repeat passed, 1 some repeat failed,
2 bad input, 130/143 interrupted (every finished row kept; resume with
--resume). With --baseline, the gate's exit code instead.
"""

from __future__ import annotations

import json
import shlex
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import click

from capeval.commands.common import (
    config_option,
    configured_bait_policy,
    fail,
    retry_options,
    root_option,
    shown_path,
)
from capeval.commands.compare import judging_options
from capeval.core.case import MAX_TURNS
from capeval.core.problems import ProblemsError

# What `--baseline` given alone stands for: the configuration's baseline.
CONFIGURED_BASELINE = "<configured baseline>"


def _fail(message: str) -> NoReturn:
    fail("run", message)


def resume_command(stream: Path, out: Path | None, baseline: Path | None) -> str:
    """The command that finishes an interrupted run as it was asked for.

    Neither `--out` nor `--baseline` is part of the stream's stored plan, so a
    bare `--resume` never wrote the v3 file nor ran the gate that was asked for.
    """
    words = ["capeval", "run", "--resume", str(shown_path(stream))]
    if out is not None:
        words += ["--out", str(shown_path(out))]
    if baseline is not None:
        words += ["--baseline", str(shown_path(baseline))]
    return shlex.join(words)


def retry_command(stream: Path, out: Path | None, baseline: Path | None) -> str:
    """The command that runs again a stream's repeats whose last row is an `error`."""
    words = shlex.split(resume_command(stream, out, baseline))
    return shlex.join([*words[:4], "--retry-errors", *words[4:]])


def _interrupted(stream: Path | None, finish: str = "") -> NoReturn:
    """Ctrl-C while the run's own SIGINT handler is not in place (planning, start-up):
    still the interrupted exit code 130, not click's "Aborted!" and 1, which reads
    as "some repeat failed"."""
    if stream is not None and stream.is_file() and stream.stat().st_size > 0:
        kept = f"rows so far are in {shown_path(stream)}; finish with: {finish}"
    else:
        kept = "no repeat was recorded"
    click.echo(f"capeval run: interrupted by SIGINT: {kept}", err=True)
    click.get_current_context().exit(130)


def _shard_durations(
    files: tuple[Path, ...], root: Path | None, config_path: Path | None
) -> dict[str, list[float]] | None:
    """The cases' recent durations that weigh a new shard's cases, from `--shard-history`
    or else the configured baseline (None: none to read; the shards go round-robin).

    Every shard of a plan must read the same files (a committed baseline is) to cut
    the same split; the weights are stored in each shard's plan, and shards cut
    with other weights are another plan (`capeval merge` refuses to join them).
    """
    from capeval.results.errors import ResultFileError

    given = bool(files)
    if not given:
        found = _configured_baseline_file(root, config_path)
        if found is None:
            return None
        files = (found,)
    try:
        from capeval.analysis.durations import recent_durations

        return recent_durations(files)
    except ResultFileError as exc:
        if given:
            _fail(f"--shard-history {exc}")
        _warn(f"the shards are cut round-robin: the baseline's durations cannot be read: {exc}")
        return None


def _configured_baseline_file(root: Path | None, config_path: Path | None) -> Path | None:
    from capeval.commands.common import configured_baseline

    found = configured_baseline(root, config_path)
    return found if isinstance(found, Path) and found.is_file() else None


def _warn(message: str) -> None:
    click.echo(f"capeval run: warning: {message}", err=True)


def _sandboxes(plan: Any) -> dict[str, str]:
    """Each agent's isolation backends, as the plan resolved them (`none`, `bwrap/docker`)."""
    found: dict[str, dict[str, None]] = {}
    for job in plan.jobs:
        found.setdefault(job.agent.name, {})[job.isolation.backend] = None
    return {name: "/".join(backends) for name, backends in found.items()}


def _unsandboxed_agents(plan: Any) -> list[str]:
    """The agents of the repeats to run that are not scripted and run with isolation none."""
    names = {
        job.agent.name
        for job in plan.todo
        if job.agent.type != "scripted" and not job.isolation.sandboxed
    }
    return sorted(names)


@contextmanager
def _result_file_warnings_as_lines() -> Iterator[None]:
    """Show what the row stream's reader and writer set aside (a torn last line)
    as one plain line, not as a Python warning quoting capeval's source."""
    from capeval.results.errors import ResultFileWarning

    with warnings.catch_warnings():
        original = warnings.showwarning

        def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
            if issubclass(category, ResultFileWarning):
                _warn(str(message))
            else:
                original(message, category, *args, **kwargs)

        warnings.showwarning = show
        warnings.simplefilter("always", ResultFileWarning)
        yield


@click.command()
@root_option
@config_option
@click.option(
    "--case", "case_ids", multiple=True, help="Run only this case (repeatable; default all)."
)
@click.option("--tier", "tiers", multiple=True, help="Run only cases of this tier (repeatable).")
@click.option("--provider", help="Provider for cells that do not name one.")
@click.option("--model", help="Model for cells that do not name one.")
@click.option(
    "--matrix",
    "matrix",
    multiple=True,
    help='Cells: "[label=]provider:model[@agent],..." (repeatable).',
)
@click.option("--agent", help="Default agent name (built-in or [agents.NAME]).")
@click.option(
    "--repeats",
    type=click.IntRange(min=1),
    help="Repeats per cell (default 1; at most 1,000,000 repeats in all).",
)
@click.option(
    "--concurrency", type=click.IntRange(min=1), help="Repeats running at once (default 1)."
)
@click.option(
    "--max-turns",
    # The bound maxTurns has in a case file: past 2^63 no result could be queried.
    type=click.IntRange(min=1, max=MAX_TURNS),
    help="Turn budget for every case (overrides maxTurns).",
)
@click.option(
    "--agent-timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Agent timeout in seconds (default 1200).",
)
@click.option(
    "--verify-timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Grader timeout in seconds (default 120).",
)
@click.option(
    "--ask-permissions",
    is_flag=True,
    default=None,
    help="Do not skip the agent's permission prompts.",
)
@click.option(
    "--allow-provider-fallback",
    is_flag=True,
    default=None,
    help="Accept an agent that resolved another provider/model.",
)
@click.option(
    "--isolation",
    type=click.Choice(["none", "bwrap", "docker"]),
    help="Sandbox every agent and grader runs in (default: capeval.toml's `isolation`, else "
    "none; see docs/isolation.md).",
)
@click.option(
    "--shard",
    metavar="I/N",
    help="Run only shard I of N of the plan's (variant, case, repeat) triples: the same "
    "split on every machine, balanced by the cases' recent durations (see docs/scale-out.md).",
)
@click.option(
    "--run-id",
    metavar="ID",
    help="The run's id (default: a new one; with --shard, derived from the plan, so that "
    "the N shards of one plan agree).",
)
@click.option(
    "--shard-history",
    "shard_history",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="With --shard: result files whose durations weigh the cases (repeatable; default "
    "the configured baseline).",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where repeats run: threads here, or tasks on a Ray cluster (pip install "
    "'capeval[ray]'; see docs/scale-out.md).",
)
@click.option(
    "--ray-address",
    metavar="ADDRESS",
    help="With --executor ray: the cluster's head, host:port or 'auto' (default: "
    "$RAY_ADDRESS, else a Ray started for this run on this machine).",
)
@click.option(
    "--dry-run", is_flag=True, help="Print the plan (variants x cases x repeats); run nothing."
)
@click.option(
    "--jsonl",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Row stream (default evals/capability/results/<run-id>.jsonl).",
)
@click.option(
    "--resume",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Finish the missing repeats of this row stream.",
)
@click.option(
    "--retry-errors",
    is_flag=True,
    help="With --resume: also run again the repeats whose last row is an error (not "
    "measured); their new rows supersede those.",
)
@retry_options(
    "Run a repeat that measured nothing (outcome error: a rate limit, an outage, a "
    "broken connection) again up to this many more times."
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write the v3 results JSON here at the end.",
)
@click.option(
    "--artifacts",
    "artifacts_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Keep each repeat's evidence here (default <jsonl stem>.artifacts beside the stream).",
)
@click.option(
    "--no-artifacts",
    is_flag=True,
    help="Keep no per-repeat evidence (agent stream, logs, grader output, run summary).",
)
@click.option(
    "--baseline",
    type=click.Path(path_type=Path, dir_okay=False),
    is_flag=False,
    flag_value=CONFIGURED_BASELINE,
    help="Gate the run against this baseline (given without FILE: the configuration's "
    "`baseline`); exit with the gate's code.",
)
@click.option(
    "--advisory/--no-advisory",
    default=True,
    show_default=True,
    help="With --baseline: advisory statistics beside the verdicts (scipy; they never "
    "change the exit code).",
)
@judging_options
@click.option("--quiet", "-q", is_flag=True, help="No per-repeat progress lines.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object (rows and per-cell summary) for machines.",
)
def run(
    root: Path | None,
    config_path: Path | None,
    case_ids: tuple[str, ...],
    tiers: tuple[str, ...],
    provider: str | None,
    model: str | None,
    matrix: tuple[str, ...],
    agent: str | None,
    repeats: int | None,
    concurrency: int | None,
    max_turns: int | None,
    agent_timeout: float | None,
    verify_timeout: float | None,
    ask_permissions: bool | None,
    allow_provider_fallback: bool | None,
    isolation: str | None,
    shard: str | None,
    run_id: str | None,
    shard_history: tuple[Path, ...],
    executor: str,
    ray_address: str | None,
    dry_run: bool,
    jsonl: Path | None,
    resume: Path | None,
    retry_errors: bool,
    retries: int,
    retry_wait: float,
    out: Path | None,
    artifacts_dir: Path | None,
    no_artifacts: bool,
    baseline: Path | None,
    advisory: bool,
    max_error_rate: float | None,
    allow_partial: bool,
    strict_torn: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """Run cases against agents; one JSON Lines row per repeat, as each ends."""
    from capeval.results.errors import ResultFileError
    from capeval.runner.options import RunError, RunOptions, counted
    from capeval.runner.plan import plan_run
    from capeval.runner.progress import ProgressPrinter, cell_summaries, format_table
    from capeval.runner.run import execute

    if resume is not None and jsonl is not None and resume != jsonl:
        _fail("--resume appends to its own stream; drop --jsonl")
    if retry_errors and resume is None:
        _fail(
            "--retry-errors runs again the repeats of a stream whose last row is an error; "
            "pass the stream with --resume PATH"
        )
    if no_artifacts and artifacts_dir is not None:
        _fail("--artifacts and --no-artifacts contradict each other; pass one of them")
    if baseline == Path(CONFIGURED_BASELINE):
        from capeval.commands.common import configured_baseline

        found = configured_baseline(root, config_path)
        if isinstance(found, str):
            _fail(found.replace("no --baseline given", "--baseline without a FILE", 1))
        baseline = found
    progress = ProgressPrinter(enabled=not quiet and not as_json)
    if shard_history and shard is None:
        _fail("--shard-history weighs the cases of a --shard; pass --shard I/N too")
    if baseline is None and (max_error_rate is not None or allow_partial or strict_torn):
        _fail(
            "--max-error-rate, --allow-partial and --strict-torn tell the gate of --baseline "
            "what to judge; pass --baseline too"
        )
    if shard is not None and baseline is not None:
        # A shard is a slice of the run: gated alone it would be judged on that slice.
        _fail(
            "--baseline gates a whole run, and a --shard is a slice of one: merge the "
            "shards (capeval merge SHARD... -o RUN.jsonl) and gate the run (capeval gate "
            "--candidate RUN.jsonl), or gate every shard's stream at once"
        )
    if ray_address is not None and executor != "ray":
        _fail("--ray-address is for --executor ray; pass --executor ray too")
    durations = None
    if shard is not None and resume is None:
        durations = _shard_durations(shard_history, root, config_path)
    options = RunOptions(
        root=root,
        config=config_path,
        cases=case_ids,
        tiers=tiers,
        provider=provider,
        model=model,
        matrix=matrix,
        agent=agent,
        repeats=repeats,
        concurrency=concurrency,
        max_turns=max_turns,
        agent_timeout_s=agent_timeout,
        verify_timeout_s=verify_timeout,
        ask_permissions=ask_permissions,
        allow_provider_fallback=allow_provider_fallback,
        dry_run=dry_run,
        jsonl=jsonl,
        resume=resume,
        out=out,
        artifacts=False if no_artifacts else artifacts_dir,
        isolation=isolation,
        retries=retries,
        retry_wait_s=retry_wait,
        retry_errors=retry_errors,
        shard=shard,
        run_id=run_id,
        shard_durations=durations,
        executor=executor,
        ray_address=ray_address,
        # On stderr, terminal or not: a CI log of an hour-long matrix shows its progress.
        on_row=progress,
        on_retry=progress.retrying,
    )
    try:
        plan = plan_run(options)
    except KeyboardInterrupt:
        _interrupted(resume, resume_command(resume, out, baseline) if resume else "")
    except ProblemsError as exc:
        _fail("\n".join(str(p) for p in exc.problems))
        return
    except (RunError, ResultFileError) as exc:
        _fail(str(exc))
        return

    if baseline is not None:
        if out is not None and out.resolve() == baseline.resolve():
            # The export replaced the baseline before the gate read it: the run
            # was judged against itself (always clean) and the baseline was lost.
            _fail(
                f"--out {out} is the --baseline file; the gate would compare the run with "
                "itself and the baseline would be overwritten: pass --out another path"
            )
        # Read before any agent starts: a missing or broken baseline used to
        # surface only after the whole matrix had run (hours, with real agents).
        from capeval.results.load import read_rows

        try:
            read_rows(baseline, on_warning=lambda _message: None)
        except ResultFileError as exc:
            _fail(f"--baseline {exc}; nothing was run: pass a readable baseline file")
            return

    if dry_run:
        # The real run reports the tear when its writer sets it aside.
        for message in plan.warnings:
            _warn(message)
        if as_json:
            click.echo(json.dumps(plan.to_json(), indent=2))
            return
        todo = plan.todo
        planned = counted(plan.total_planned or len(plan.jobs), "repeat")
        slice_ = "" if plan.shard is None else f"; shard {plan.shard}: {len(plan.jobs)} of them"
        click.echo(
            f"plan: {counted(len(plan.variants), 'variant')} x {counted(len(plan.cases), 'case')} x "
            f"{counted(plan.repeats, 'repeat')} = {planned}{slice_} "
            f"({len(todo)} to run, concurrency {plan.concurrency})"
        )
        sandboxes = _sandboxes(plan)
        for v in plan.variants:
            click.echo(
                f"  variant {v.id}: provider {v.provider}, model {v.model}, agent {v.agent}, "
                f"isolation {sandboxes.get(str(v.agent), 'none')}"
            )
        click.echo(f"  cases: {', '.join(c.id for c in plan.cases)}")
        click.echo(f"  run id: {plan.run_id}")
        click.echo(f"  rows -> {shown_path(plan.jsonl_path)}")
        kept = plan.settings.artifacts_dir
        click.echo(
            f"  artifacts -> {shown_path(kept) if kept is not None else 'none (--no-artifacts)'}"
        )
        return

    for name in _unsandboxed_agents(plan):
        _warn(
            f'agent {name!r} runs with isolation = "none": it can read and change every file '
            "you can (cases, graders, baseline, this run's rows) and signal your processes; "
            'set isolation = "bwrap" or "docker" (docs/isolation.md)'
        )
    if not quiet and not as_json:
        click.echo(
            f"run {plan.run_id}: {len(plan.todo)} of {len(plan.jobs)} repeats to run; rows -> {shown_path(plan.jsonl_path)}",
            err=True,
        )
    try:
        with _result_file_warnings_as_lines():
            outcome = execute(options, plan)
    except KeyboardInterrupt:
        _interrupted(plan.jsonl_path, resume_command(plan.jsonl_path, out, baseline))
    except (RunError, ResultFileError) as exc:
        _fail(str(exc))
        return

    gate = None
    if baseline is not None and not outcome.interrupted:
        try:
            from capeval.analysis.gatecheck import gate_files
        except ImportError:
            _fail(
                "--baseline: the gate (capeval.analysis.gatecheck) is not available in this build"
            )
            return
        gate = gate_files(
            baseline,
            [outcome.jsonl_path],
            root=plan.root,
            bait_overrides={},
            allow_provider_fallback=bool(allow_provider_fallback),
            advisory=advisory,
            bait_policy=configured_bait_policy(plan.root, config_path),
            max_error_rate=max_error_rate,
            allow_partial=allow_partial,
            strict_torn=strict_torn,
        )

    cells = cell_summaries(outcome.rows)
    if as_json:
        doc = {
            "runId": plan.run_id,
            "jsonl": str(outcome.jsonl_path),
            "exitCode": outcome.exit_code if gate is None else gate.exit_code,
            "interrupted": outcome.interrupted,
            "cells": [c.to_json() for c in cells],
            "rows": outcome.rows,
        }
        if gate is not None:
            # A refused gate has no comparison object; its reasons, in the shape
            # `capeval gate --json` prints them, rather than a bare null.
            doc["gate"] = gate.json if gate.json is not None else gate.refusal_json()
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(format_table(cells))
        passed = sum(1 for r in outcome.rows if r.get("passed") is True)
        click.echo(
            f"{passed}/{len(outcome.rows)} repeats passed; rows in {shown_path(outcome.jsonl_path)}"
        )
        errors = sum(1 for c in cells for _ in range(c.errors))
        if errors:
            click.echo(
                f"{errors} repeat(s) measured nothing (outcome error: see each row's errorKind); "
                f"run them again with: {retry_command(outcome.jsonl_path, out, baseline)}",
                err=True,
            )
    if outcome.lost:
        click.echo(
            f"{counted(len(outcome.lost), 'repeat')} could not be run and have no row "
            f"({'; '.join(outcome.lost[:3])}{'; ...' if len(outcome.lost) > 3 else ''}); "
            f"run them with: {resume_command(outcome.jsonl_path, out, baseline)}",
            err=True,
        )
    if outcome.interrupted:
        click.echo(
            f"interrupted by {outcome.interrupted}: {len(outcome.rows)} of {len(plan.jobs)} repeats "
            f"recorded in {shown_path(outcome.jsonl_path)}; finish with: "
            f"{resume_command(outcome.jsonl_path, out, baseline)}",
            err=True,
        )
    if gate is not None:
        # A verdict is output; a refusal is a diagnostic (stderr, as in `capeval gate`).
        click.echo(gate.text, err=as_json or gate.json is None)
        click.get_current_context().exit(gate.exit_code)
    click.get_current_context().exit(outcome.exit_code)
