"""`capeval gate`: compare with the frozen baseline and exit with the verdict.

Exit codes: 0 clean, 1 some cell's pass rate regressed, 3 nothing regressed
but bait flags make the comparison unclean, 2 bad input or usage, or a
comparison that cannot be judged: a cell with `error` repeats, a run missing
planned repeats, a bait case declared nowhere. Without
`--baseline` the configuration's `baseline` is used. Advisory statistics are
off by default here (they need scipy, which costs a second to import) and
never change the exit code.
"""

from __future__ import annotations

from pathlib import Path

import click

from capeval.commands.common import baselines_or_configured, exit_with
from capeval.commands.compare import comparison_options, emit, judging_options, run_comparison


@click.command("gate")
@comparison_options(baseline_required=False, advisory_default=False)
@judging_options
def gate(
    baselines: tuple[Path, ...],
    candidates: tuple[Path, ...],
    baits: tuple[str, ...],
    allow_provider_fallback: bool,
    root: Path | None,
    advisory: bool,
    seed: int,
    as_json: bool,
    max_error_rate: float | None,
    allow_partial: bool,
    strict_torn: bool,
) -> None:
    """Gate CANDIDATE results against the baseline (exit 0 clean, 1 regressed, 3 bait flags, 2 bad input or not judged)."""
    result = run_comparison(
        baselines_or_configured(baselines, root, as_json=as_json),
        candidates,
        baits=baits,
        allow_provider_fallback=allow_provider_fallback,
        root=root,
        advisory=advisory,
        seed=seed,
        gate=True,
        max_error_rate=max_error_rate,
        allow_partial=allow_partial,
        strict_torn=strict_torn,
    )
    emit(result, as_json=as_json)
    exit_with(result.exit_code)
