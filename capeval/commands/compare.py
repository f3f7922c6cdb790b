"""`capeval compare`: a candidate run against a baseline, verdicts per cell.

A thin wrapper over `capeval.analysis.gatecheck.gate_files` (the same code the
gate runs), so a notebook gets the same answer from
`gate_files(...).comparison`. Exits 0 when the comparison was made, 2 when the
input was unusable or the provider check refused it; the gate's stricter exit
codes belong to `capeval gate`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from capeval.commands.common import EXIT_BAD_INPUT, baselines_or_configured, exit_with

if TYPE_CHECKING:
    from capeval.analysis.gatecheck import GateResult


def comparison_options(
    *, baseline_required: bool, advisory_default: bool, with_json: bool = True
) -> Callable[[Any], Any]:
    """Options `compare`, `gate` and `report` share, so their flags can never drift apart."""

    def decorate(func: Any) -> Any:
        options = [
            click.option(
                "--baseline",
                "baselines",
                multiple=True,
                required=baseline_required,
                type=click.Path(path_type=Path, dir_okay=False),
                help="Baseline result file (JSONL or v3 JSON); repeat to pool several.",
            ),
            click.option(
                "--candidate",
                "candidates",
                multiple=True,
                required=True,
                type=click.Path(path_type=Path, dir_okay=False),
                help="Candidate result file (JSONL or v3 JSON); repeat to pool several.",
            ),
            click.option(
                "--bait",
                "baits",
                multiple=True,
                metavar="CASE=METRIC:THRESHOLD",
                help="Declare or override a case's bait (beats rows and workspace cases).",
            ),
            click.option(
                "--allow-provider-fallback",
                is_flag=True,
                help="Judge cells whose resolved provider/model differ or are mixed.",
            ),
            click.option(
                "--root",
                type=click.Path(path_type=Path, file_okay=False),
                default=None,
                help="Workspace root (for case baits); default: nearest ancestor holding evals/capability/cases.",
            ),
            click.option(
                "--advisory/--no-advisory",
                default=advisory_default,
                show_default=True,
                help="Compute advisory statistics (scipy; never change the exit code).",
            ),
            click.option(
                "--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap."
            ),
        ]
        if with_json:
            options.append(
                click.option(
                    "--json",
                    "as_json",
                    is_flag=True,
                    help="Print the comparison as JSON (docs/result-formats.md, the comparison object).",
                )
            )
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def judging_options(func: Any) -> Any:
    """What `gate` and `report` may be told to judge anyway, so a report can say what the gate says."""
    options = [
        click.option(
            "--max-error-rate",
            type=click.FloatRange(min=0, max=1),
            default=None,
            metavar="R",
            help="Judge a cell whose error repeats (not measured) are at most this fraction of its "
            "repeats, on its judged repeats alone; default: a cell with any error is not judged (exit 2).",
        ),
        click.option(
            "--allow-partial",
            is_flag=True,
            help="Judge a run that holds fewer repeats than its plan file names (default: exit 2).",
        ),
        click.option(
            "--strict-torn",
            is_flag=True,
            help="Refuse (exit 2) a result file whose torn last line was skipped.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def run_comparison(
    baselines: Sequence[Path],
    candidates: Sequence[Path],
    *,
    baits: Sequence[str],
    allow_provider_fallback: bool,
    root: Path | None,
    advisory: bool,
    seed: int,
    gate: bool,
    headline: bool = False,
    max_error_rate: float | None = None,
    allow_partial: bool = False,
    strict_torn: bool = False,
) -> GateResult:
    """`gate_files` called the way every comparison command calls it.

    A `--root` given on the command line is explicit: a missing workspace
    there is an error, while the default root may be absent. The bait policy
    is the workspace configuration's `bait`.
    """
    from capeval.analysis.gatecheck import gate_files
    from capeval.commands.common import configured_bait_policy

    return gate_files(
        list(baselines),
        list(candidates),
        root=root,
        explicit_root=root is not None,
        bait_overrides=list(baits),
        allow_provider_fallback=allow_provider_fallback,
        advisory=advisory,
        gate=gate,
        headline=headline,
        seed=seed,
        bait_policy=configured_bait_policy(root),
        max_error_rate=max_error_rate,
        allow_partial=allow_partial,
        strict_torn=strict_torn,
    )


def emit(result: GateResult, *, as_json: bool) -> None:
    """Print a GateResult: JSON or text on stdout, refusals and errors on stderr."""
    if result.json is None:
        if as_json:
            click.echo(json.dumps(result.refusal_json(), indent=2))
        click.echo(result.text, err=True)
        return
    if as_json:
        click.echo(json.dumps(result.json, indent=2))
    else:
        click.echo(result.text)


@click.command("compare")
@comparison_options(baseline_required=False, advisory_default=True)
def compare(
    baselines: tuple[Path, ...],
    candidates: tuple[Path, ...],
    baits: tuple[str, ...],
    allow_provider_fallback: bool,
    root: Path | None,
    advisory: bool,
    seed: int,
    as_json: bool,
) -> None:
    """Compare CANDIDATE results with BASELINE results, cell by cell.

    Statuses improved/regressed/unchanged/new/missing (no tolerance), behavior
    verdicts on medians, bait honesty flags and advisory statistics. Without
    --baseline the configuration's `baseline` is used, as `capeval gate` does.
    """
    result = run_comparison(
        baselines_or_configured(baselines, root, as_json=as_json),
        candidates,
        baits=baits,
        allow_provider_fallback=allow_provider_fallback,
        root=root,
        advisory=advisory,
        seed=seed,
        gate=False,
    )
    emit(result, as_json=as_json)
    exit_with(EXIT_BAD_INPUT if result.json is None else 0)
