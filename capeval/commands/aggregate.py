"""`capeval aggregate FILE...`: per-cell aggregates recomputed from the rows.

A thin wrapper over `capeval.results.load.read_many` and
`capeval.core.aggregate.aggregate`; stored aggregates in v3 files are ignored.
Rows of all files are pooled, so a cell that appears in several files is
aggregated over all of its repeats.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import click

from capeval.core.aggregate import aggregate as aggregate_rows
from capeval.core.metrics import METRIC_NAMES
from capeval.results.errors import ResultFileError
from capeval.results.load import read_many

# Short column labels for the human table, in catalog order.
SHORT_LABELS: dict[str, str] = {
    "shellCommandCount": "shell",
    "envAssignmentCommandCount": "env",
    "chainSegmentCount": "chain",
    "maxChainSegmentsPerCommand": "maxChain",
    "networkCommandCount": "net",
    "webFetchToolCallCount": "webFetch",
    "taskToolCallCount": "task",
    "editViaShellCount": "editSh",
    "repeatedSearchCount": "repSearch",
    "longestToolOnlyStreak": "toolStreak",
    "maxTurnDurationMs": "maxTurnMs",
}


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(int(value))


def format_table(aggregates: Sequence[Mapping[str, Any]]) -> str:
    """A fixed-width table: pass counts, then the median of each behavior metric."""
    if not aggregates:
        return "no rows"
    metrics = [m for m in METRIC_NAMES if any(m in a["behaviorStats"] for a in aggregates)]
    header = ["resultKey", "pass", "rate", "err", *(SHORT_LABELS[m] for m in metrics)]
    body = []
    for agg in aggregates:
        stats = agg["behaviorStats"]
        body.append(
            [
                str(agg["resultKey"]),
                f"{agg['passCount']}/{agg['repeats']}",
                "-" if agg["passRate"] is None else f"{agg['passRate']:.0%}",
                str(agg.get("errorCount", 0)),
                *(_number(stats[m]["median"]) if m in stats else "-" for m in metrics),
            ]
        )
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = []
    for row in [header, *body]:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
    lines.append(
        "pass and rate are over judged repeats (passed or failed); err: repeats whose outcome "
        "is error (not measured), left out of every column"
    )
    lines.append("behavior columns are medians over repeats with captured behaviors ('-': none)")
    return "\n".join(lines)


@click.command("aggregate")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the aggregates as a JSON array.")
def aggregate(files: tuple[str, ...], as_json: bool) -> None:
    """Recompute per-cell aggregates from the rows of result FILES.

    FILES may be JSON Lines row streams or v3 results JSON, mixed. Aggregates
    stored in v3 files are ignored: they are always recomputed.
    """

    def warn(message: str) -> None:
        click.echo(f"warning: {message}", err=True)

    try:
        rows = read_many(files, on_warning=warn)
    except ResultFileError as exc:
        if as_json:  # `capeval aggregate --json | jq` must read JSON whatever went wrong
            click.echo(json.dumps({"errors": [str(exc)], "exitCode": 2}, indent=2))
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(2) from exc
    result = aggregate_rows(rows)
    if as_json:
        click.echo(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        click.echo(format_table(result))
