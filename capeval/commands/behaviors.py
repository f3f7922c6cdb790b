"""`capeval behaviors FILE...`: behavior metrics of run-summary files.

A thin wrapper over `capeval.runsummary.read_summary` and
`capeval.behaviors.derive_behaviors`; a notebook calls those two directly.
Every file is read before anything is printed, so a bad file never leaves a
half-written JSON Lines stream behind: it is reported (file, field, what is
wrong) and the command exits 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from capeval.behaviors import derive_behaviors
from capeval.metrics import METRIC_NAMES, TOOL_CALLS_BY_NAME
from capeval.runsummary import RunSummaryError, read_summary


def behaviors_of_files(paths: list[Path]) -> tuple[list[dict[str, Any]], list[RunSummaryError]]:
    """Behaviors of each file in order, and the errors of those that could not be read."""
    results: list[dict[str, Any]] = []
    errors: list[RunSummaryError] = []
    for path in paths:
        try:
            results.append(derive_behaviors(read_summary(path)))
        except RunSummaryError as exc:
            errors.append(exc)
    return results, errors


def format_table(paths: list[Path], results: list[dict[str, Any]]) -> str:
    """Metrics down, files across: eleven rows read better than eleven columns."""
    headers = [p.name for p in paths]
    if len(set(headers)) != len(headers):
        headers = [str(p) for p in paths]
    label_width = max(len(n) for n in (*METRIC_NAMES, "metric"))
    widths = [
        max(len(h), *(len(str(r[name])) for name in METRIC_NAMES))
        for h, r in zip(headers, results, strict=True)
    ]
    lines = [
        "  ".join(
            [
                "metric".ljust(label_width),
                *(h.rjust(w) for h, w in zip(headers, widths, strict=True)),
            ]
        )
    ]
    for name in METRIC_NAMES:
        cells = (str(r[name]).rjust(w) for r, w in zip(results, widths, strict=True))
        lines.append("  ".join([name.ljust(label_width), *cells]))
    lines.append("")
    for header, result in zip(headers, results, strict=True):
        calls = result[TOOL_CALLS_BY_NAME]
        listed = ", ".join(f"{name} {count}" for name, count in calls.items()) or "(no tool calls)"
        lines.append(f"{TOOL_CALLS_BY_NAME} {header}: {listed}")
    return "\n".join(lines)


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON object per file (JSON Lines, in file order)."
)
def behaviors(files: tuple[Path, ...], as_json: bool) -> None:
    """Behavior metrics (spec section 6) of run-summary JSON files.

    Each FILE is a run summary as the corbits post-run hook writes it:
    {status, ..., turns: [{turnIndex, assistantTurn, toolCalls, durationMs}]}.
    Prints the eleven numeric metrics and toolCallsByName per file. Exits 2
    when any file cannot be read, naming the file and the field.
    """
    paths = list(files)
    results, errors = behaviors_of_files(paths)
    if errors:
        for error in errors:
            click.echo(f"capeval behaviors: error: {error}", err=True)
        raise SystemExit(2)
    if as_json:
        for result in results:
            click.echo(json.dumps(result, ensure_ascii=False))
    else:
        click.echo(format_table(paths, results))
