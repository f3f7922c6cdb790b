"""`capeval report`: the gate's comparison as a file for people and CI systems.

Markdown (a CI step summary), JSON (the section 8 object plus the exit code
the gate would give), JUnit XML (one testcase per cell, failures for
regressions and bait flags) or one self-contained HTML file with embedded
plots. A thin wrapper over `gate_files` and `capeval.analysis.report.render`.
"""

from __future__ import annotations

from pathlib import Path

import click

EXIT_BAD_INPUT = 2


@click.command("report")
@click.option(
    "--baseline",
    "baselines",
    multiple=True,
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Baseline result file (JSONL or v3 JSON); repeat to pool several.",
)
@click.option(
    "--candidate",
    "candidates",
    multiple=True,
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Candidate result file (JSONL or v3 JSON); repeat to pool several.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "json", "junit", "html"]),
    default="md",
    show_default=True,
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write here (default: standard output).",
)
@click.option("--bait", "baits", multiple=True, metavar="CASE=METRIC:THRESHOLD")
@click.option("--allow-provider-fallback", is_flag=True)
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=None)
@click.option("--advisory/--no-advisory", default=True, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def report(
    baselines: tuple[Path, ...],
    candidates: tuple[Path, ...],
    fmt: str,
    output: Path | None,
    baits: tuple[str, ...],
    allow_provider_fallback: bool,
    root: Path | None,
    advisory: bool,
    seed: int,
) -> None:
    """Write a gate report comparing CANDIDATE with BASELINE (exit 0 when written, 2 on bad input)."""
    from capeval.analysis.gatecheck import gate_files
    from capeval.analysis.report import render

    ctx = click.get_current_context()
    result = gate_files(
        list(baselines),
        list(candidates),
        root=root,
        explicit_root=root is not None,
        bait_overrides=list(baits),
        allow_provider_fallback=allow_provider_fallback,
        advisory=advisory,
        gate=True,
        headline=True,
        seed=seed,
    )
    if result.comparison is None or result.json is None:
        click.echo(result.text, err=True)
        ctx.exit(EXIT_BAD_INPUT)
        return
    text = render(
        result.comparison,
        fmt,
        baseline_name=", ".join(p.name for p in baselines),
        candidate_name=", ".join(p.name for p in candidates),
    )
    if output is None:
        click.echo(text, nl=False)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(output.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(output)
    click.echo(f"wrote {output} ({fmt}); gate verdict exit {result.exit_code}", err=True)
