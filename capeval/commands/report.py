"""`capeval report`: the gate's comparison as a file for people and CI systems.

Markdown (a CI step summary), JSON (the comparison object plus the exit code
the gate would give), JUnit XML (one testcase per cell, failures for
regressions and bait flags) or one self-contained HTML file with embedded
plots. A thin wrapper over `gate_files` and `capeval.analysis.report.render`.
"""

from __future__ import annotations

from pathlib import Path

import click

from capeval.commands.common import EXIT_BAD_INPUT, cannot_write, configured_baseline, fail
from capeval.commands.compare import comparison_options, judging_options, run_comparison

# The format a report file's extension names, as `capeval plot -o` takes its image type.
EXTENSION_FORMATS = {
    ".md": "md",
    ".markdown": "md",
    ".json": "json",
    ".xml": "junit",
    ".html": "html",
    ".htm": "html",
}


def format_of(output: Path | None) -> str | None:
    """The report format `output`'s extension names; None for stdout or another extension
    (a CI step summary file has none)."""
    return None if output is None else EXTENSION_FORMATS.get(output.suffix.lower())


@click.command("report")
@comparison_options(baseline_required=False, advisory_default=True, with_json=False)
@judging_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "json", "junit", "html"]),
    default=None,
    help="md: a CI step summary; json: the comparison object (docs/result-formats.md) plus exitCode; "
    "junit: one testcase per cell; html: one file, plots embedded. "
    "Default: from the -o extension (.md, .json, .xml, .html), else md.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write here (default: standard output); its extension picks the format.",
)
def report(
    baselines: tuple[Path, ...],
    candidates: tuple[Path, ...],
    fmt: str | None,
    output: Path | None,
    baits: tuple[str, ...],
    allow_provider_fallback: bool,
    root: Path | None,
    advisory: bool,
    seed: int,
    max_error_rate: float | None,
    allow_partial: bool,
    strict_torn: bool,
) -> None:
    """Write a gate report comparing CANDIDATE with BASELINE (exit 0 when written, 2 on bad input).

    When the comparison is refused (bad input, a provider change without the
    flag) the report says so and why, and the exit is 2.

    Without --baseline the configuration's `baseline` is used, as `capeval gate` does;
    when there is none, the report is a refusal naming the fix.
    """
    from capeval.analysis.report import render, render_refusal

    ctx = click.get_current_context()
    implied = format_of(output)
    if fmt is None:
        fmt = implied or "md"
    elif implied is not None and implied != fmt:
        click.echo(
            f"warning: writing {fmt} into {output} (--format {fmt}); leave out --format to "
            f"write {implied}, as the extension says",
            err=True,
        )
    # No baseline given or configured is a refusal like any other: the report
    # still says why (a CI step summary must not be empty or stale).
    found: tuple[Path, ...] | str = baselines
    if not baselines:
        configured = configured_baseline(root)
        found = configured if isinstance(configured, str) else (configured,)
    names = {
        "baseline_name": "baseline" if isinstance(found, str) else ", ".join(p.name for p in found),
        "candidate_name": ", ".join(p.name for p in candidates),
    }
    if isinstance(found, str):
        refused = True
        click.echo(f"capeval report: {found}", err=True)
        text = render_refusal([found], fmt, **names)
    else:
        result = run_comparison(
            found,
            candidates,
            baits=baits,
            allow_provider_fallback=allow_provider_fallback,
            root=root,
            advisory=advisory,
            seed=seed,
            gate=True,
            headline=True,
            max_error_rate=max_error_rate,
            allow_partial=allow_partial,
            strict_torn=strict_torn,
        )
        refused = result.comparison is None or result.json is None
        if refused:
            click.echo(result.text, err=True)
            text = render_refusal(result.errors, fmt, **names)
        else:
            assert result.comparison is not None
            text = render(result.comparison, fmt, **names)
    if output is None:
        click.echo(text, nl=False)
        if not refused:  # a refusal already said why on stderr
            # Piped into a file or a step summary, the report's exit code (0)
            # is not the gate's: say that one where the log shows it.
            click.echo(f"capeval report: gate verdict exit {result.exit_code}", err=True)
    else:
        from capeval.results.output import write_output

        try:
            # A lone surrogate escape in a result file ("\ud800" in an id)
            # is valid JSON but not encodable: write it escaped, not a traceback.
            write_output(output, text, errors="backslashreplace")
        except OSError as exc:
            # A bad -o (a file where a folder should be, no permission) is
            # bad usage: say which path and why, not a traceback.
            fail("report", f"{cannot_write(output, exc)}; pass -o with a writable path")
        verdict = "refused, exit 2" if refused else f"gate verdict exit {result.exit_code}"
        click.echo(f"wrote {output} ({fmt}); {verdict}", err=True)
    if refused:
        ctx.exit(EXIT_BAD_INPUT)
