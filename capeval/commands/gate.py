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

from capeval.commands.common import EXIT_BAD_INPUT
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
    ctx = click.get_current_context()
    base = list(baselines)
    if not base:
        configured = _configured_baseline(root)
        if isinstance(configured, str):
            click.echo(f"error: {configured}", err=True)
            ctx.exit(EXIT_BAD_INPUT)
            return
        base = [configured]
    result = run_comparison(
        base,
        candidates,
        baits=baits,
        allow_provider_fallback=allow_provider_fallback,
        root=root,
        advisory=advisory,
        seed=seed,
        gate=True,
    )
    emit(result, as_json=as_json)
    ctx.exit(result.exit_code)


def _configured_baseline(root: Path | None) -> Path | str:
    """The config's `baseline`, or a message saying how to provide one."""
    from capeval.config import load_config
    from capeval.problems import ProblemsError
    from capeval.workspace import find_root

    try:
        found = find_root(explicit=root)
        config = load_config(found)
    except ProblemsError as exc:
        return f"no --baseline given and no usable configuration: {exc}"
    if config.baseline is None:
        return (
            "no --baseline given and the configuration names none; pass --baseline FILE or add "
            'baseline = "evals/capability/results/baseline.json" to capeval.toml'
        )
    return config.baseline
