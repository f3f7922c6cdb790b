"""`capeval baseline freeze`: deliberately (re)record the gate's frozen baseline.

The baseline is recorded with an agent entry that plays the *sloppy*
trajectories on the same provider/model as the default run, so every bait
case misbehaves on it (bait honesty) while the default oracle candidate
compares cleanly against it. Refreezing is a decision that accompanies an
accepted behavior change, so it is its own command and never a side effect.

The new file is written next to the old one and only moved into place once
the run finished and every bait reproduces on it; otherwise the old baseline
stays and the new recording is kept as `<baseline>.new` for inspection.
"""

from __future__ import annotations

import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

from capeval.cli import InterruptibleGroup
from capeval.commands.common import config_option, fail, root_option

if TYPE_CHECKING:
    from capeval.config import Config

DEFAULT_BASELINE = Path("evals", "capability", "results", "baseline.json")


@dataclass
class FreezeResult:
    baseline: Path
    written: bool
    jsonl: Path | None = None
    # BAIT FLAG lines: baits that did not reproduce on the new recording.
    bait_problems: list[str] = field(default_factory=list)
    exit_code: int = 0
    message: str = ""


def baseline_cells(cells: Sequence[str], agent: str) -> tuple[str, ...]:
    """The matrix cells with their agent replaced: `scripted:oracle` -> `scripted:oracle@sloppy`.

    Split on commas first, as `capeval run` splits `--matrix`: `--matrix
    "a=p:m,b=p:m"` recorded cell a with the default agent (only the last
    cell got `@sloppy`). The agent is the text after the *last* `@`, as
    `parse_cell` reads it, so a model name holding `@` keeps it.
    """
    from capeval.core.matrix import split_cells

    return tuple(
        f"{c.rpartition('@')[0].strip() if '@' in c else c}@{agent}" for c in split_cells(cells)
    )


def freeze(
    root: Path,
    *,
    agent: str = "sloppy",
    repeats: int = 3,
    matrix: Sequence[str] = (),
    out: Path | None = None,
    config: Path | None = None,
    concurrency: int | None = None,
    force: bool = False,
    cases: Sequence[str] = (),
    jsonl: Path | None = None,
) -> FreezeResult:
    """Record a new baseline with `agent` on the default matrix and move it into place."""
    from capeval.analysis.fastload import load_side
    from capeval.analysis.gatecheck import workspace_baits
    from capeval.commands.common import cannot_write, config_home, shown_path
    from capeval.config import load_config
    from capeval.core.verdict import BaitStatus
    from capeval.results.output import OutputRefused, move_output, resolve_target
    from capeval.runner.options import RunOptions
    from capeval.runner.run import execute

    cfg = load_config(root, config)
    if agent not in cfg.agents:
        raise ValueError(
            f"baseline freeze records with the agent entry --agent {agent!r}, which the "
            f"configuration does not define; pass --agent NAME (one of: "
            f"{', '.join(sorted(cfg.agents))}) or add an [agents.{agent}] table "
            '(type = "scripted" with trajectory = "sloppy" plays each case\'s sloppy trajectory)'
        )
    target = out or cfg.baseline or root / DEFAULT_BASELINE
    cells = baseline_cells(matrix or cfg.matrix or _default_cells(cfg), agent)
    if not cells:
        raise ValueError(f"--matrix {' '.join(matrix)!r} names no cell; write provider:model")
    try:
        resolved, mode = resolve_target(target)
        if mode is not None and not stat.S_ISREG(mode):
            # The gate reads the baseline back: a device or a pipe cannot hold one.
            raise OutputRefused(target, "is not a regular file, and a baseline must be one")
        fresh = resolved.with_name(resolved.name + ".new")
        fresh.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        # A file where the folder should be: bad usage naming the path, not a traceback.
        raise ValueError(f"{cannot_write(target, exc)}; pass --out with a writable path") from exc
    outcome = execute(
        RunOptions(
            root=root,
            config=config,
            matrix=cells,
            repeats=repeats,
            concurrency=concurrency,
            cases=tuple(cases),
            jsonl=jsonl,
            out=fresh,
            handle_signals=True,
        )
    )
    if outcome.interrupted or not fresh.exists():
        return FreezeResult(
            target,
            False,
            outcome.jsonl_path,
            exit_code=outcome.exit_code or 2,
            message="run interrupted",
        )
    new_cells, _ = load_side([fresh])
    baits = workspace_baits(root, True)
    problems: list[str] = []
    for cell in new_cells.values():
        decl = cell.bait or baits.get(cell.caseId)
        if decl is None:
            continue
        median = cell.medians.get(decl.metric)
        if median is None or not median > decl.threshold:
            status = BaitStatus(decl.metric, decl.threshold, median, None, None, True)
            problems.append(
                status.flag_line(cell.caseId)
                if median is not None
                else f"{cell.resultKey}: no stats for {decl.metric}"
            )
    dropped = _dropped_cells(target, new_cells)
    if dropped and not force:
        more = f" and {len(dropped) - 3} more" if len(dropped) > 3 else ""
        return FreezeResult(
            target,
            False,
            outcome.jsonl_path,
            problems,
            exit_code=2,
            message=(
                f"the new recording lacks {len(dropped)} cell(s) the baseline holds "
                f"({', '.join(dropped[:3])}{more}): the gate would stop checking them. "
                f"The old baseline is unchanged and the new recording is {shown_path(fresh)}; record "
                "every cell it holds (no --case, the same matrix), or pass --force to replace it"
            ),
        )
    if problems and not force and cfg.bait_policy == "require":
        return FreezeResult(
            target,
            False,
            outcome.jsonl_path,
            problems,
            exit_code=3,
            message=(
                "baits did not reproduce; "
                + (
                    "the old baseline is unchanged"
                    if target.exists()
                    else "no baseline was written"
                )
                + f" and the new recording is {shown_path(fresh)}. The recording agent must "
                "fall for every bait case (a scripted stand-in playing the sloppy "
                "trajectories does); to compare two builds of an agent that does not, set "
                f'bait = "report" in {config_home(cfg.source, root)} (docs/gating.md#bait-policy), '
                "or pass --force to freeze this one anyway"
            ),
        )
    move_output(fresh, target)
    message = f"froze {shown_path(target)}"
    if problems and not force:
        message += (
            f' (bait = "report": {len(problems)} bait(s) did not reproduce; a gate shows '
            "their flags but does not fail on them)"
        )
    if cfg.baseline is None or cfg.baseline.resolve() != target.resolve():
        # The setting is read relative to the root: a relative --out given in a
        # subfolder (`--out b.json` in evals/) was named as "b.json", the root's.
        real, real_root = target.resolve(), root.resolve()
        shown = real.relative_to(real_root).as_posix() if real.is_relative_to(real_root) else real
        message += (
            f"\nnote: the configuration names {'no' if cfg.baseline is None else 'another'} "
            f'baseline; add baseline = "{shown}" to {config_home(cfg.source, root)} so '
            "capeval gate and capeval run --baseline use this one"
        )
    return FreezeResult(target, True, outcome.jsonl_path, problems, exit_code=0, message=message)


def _default_cells(cfg: Config) -> tuple[str, ...]:
    """The cell `capeval run` plays without a matrix: the configured provider:model.

    Recorded as scripted:oracle, the baseline of a workspace with `provider`
    and `model` set shared no provider/model with any run: every gate was
    refused as a provider/model change.
    """
    if cfg.provider and cfg.model:
        return (f"{cfg.provider}:{cfg.model}",)
    return ("scripted:oracle",)


def _dropped_cells(target: Path, new_cells: Mapping[str, object]) -> list[str]:
    """Cells of the current baseline the new recording would drop (none if unreadable).

    `--case X` used to replace the whole baseline with X alone: every other
    cell then showed as "new" and the gate silently stopped checking it.
    """
    from capeval.analysis.fastload import load_side
    from capeval.results.errors import ResultFileError

    if not target.is_file():
        return []
    try:
        old_cells, _ = load_side([target])
    except ResultFileError:
        return []  # a broken baseline is what a refreeze repairs
    return sorted(set(old_cells) - set(new_cells))


@click.group("baseline", cls=InterruptibleGroup)
def baseline() -> None:
    """The frozen gate baseline."""


@baseline.command("freeze")
@click.option(
    "--repeats",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Repeats per cell (3 is the documented refreeze; see docs/gating.md).",
)
@click.option(
    "--agent",
    default="sloppy",
    show_default=True,
    help="Agent entry whose trajectories the baseline records (it must misbehave on every bait).",
)
@click.option(
    "--matrix", "matrix", multiple=True, help="Cells to record (default: the configured matrix)."
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Where to write (default: the configured baseline, else evals/capability/results/baseline.json).",
)
@root_option
@config_option
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=None,
    help="Repeats running at once (default: the configuration's).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Freeze even when a bait does not reproduce or cells of the old baseline are left out.",
)
@click.option("--case", "cases", multiple=True, help="Only these cases (default: all).")
@click.option(
    "--jsonl",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The run's row stream (default: a new file under evals/capability/results/).",
)
def freeze_command(
    repeats: int,
    agent: str,
    matrix: tuple[str, ...],
    out: Path | None,
    root: Path | None,
    config_path: Path | None,
    concurrency: int | None,
    force: bool,
    cases: tuple[str, ...],
    jsonl: Path | None,
) -> None:
    """Re-record the baseline (exit 0 frozen, 3 a bait did not reproduce, 2 bad input)."""
    from capeval.core.problems import ProblemsError
    from capeval.workspace import find_root

    ctx = click.get_current_context()
    try:
        found = find_root(explicit=root)
        result = freeze(
            found,
            agent=agent,
            repeats=repeats,
            matrix=matrix,
            out=out,
            config=config_path,
            concurrency=concurrency,
            force=force,
            cases=cases,
            jsonl=jsonl,
        )
    except (ProblemsError, ValueError) as exc:
        fail("baseline freeze", str(exc))
    for line in result.bait_problems:
        click.echo(line, err=True)
    click.echo(result.message, err=not result.written)
    ctx.exit(result.exit_code)
