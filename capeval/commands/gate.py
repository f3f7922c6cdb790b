"""`capeval gate`: compare with the frozen baseline and exit with the verdict.

Exit codes: 0 clean, 1 some cell's pass rate regressed, 3 nothing regressed
but bait flags make the comparison unclean, 2 bad input or usage. Without
`--baseline` the configuration's `baseline` is used. Advisory statistics are
off by default here (they need scipy, which costs a second to import) and
never change the exit code.
"""

from __future__ import annotations

from pathlib import Path

import click

from capeval.commands.common import baselines_or_configured, exit_with
from capeval.commands.compare import comparison_options, emit, run_comparison


@click.command("gate")
@comparison_options(baseline_required=False, advisory_default=False)
def gate(
    baselines: tuple[Path, ...],
    candidates: tuple[Path, ...],
    baits: tuple[str, ...],
    allow_provider_fallback: bool,
    root: Path | None,
    advisory: bool,
    seed: int,
    as_json: bool,
) -> None:
    """Gate CANDIDATE results against the baseline (exit 0 clean, 1 regressed, 3 bait flags, 2 bad input)."""
    result = run_comparison(
        baselines_or_configured(baselines, root, as_json=as_json),
        candidates,
        baits=baits,
        allow_provider_fallback=allow_provider_fallback,
        root=root,
        advisory=advisory,
        seed=seed,
        gate=True,
    )
    emit(result, as_json=as_json)
    exit_with(result.exit_code)
