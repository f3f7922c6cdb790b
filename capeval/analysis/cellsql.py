"""A cell's aggregates, defined once in SQL.

The gate's fast path (`capeval.analysis.fastload`) and the history `cells`
view (`capeval.analysis.views`) both aggregate a cell's repeats with these
expressions, so a median or a pass count cannot mean one thing in a verdict
and another in a query. They run over typed rows: `passed` a BOOLEAN, every
behavior metric a number (null for a repeat whose behaviors were not
captured, which so counts for nothing, never as zero), `taskToolCallCount`
already filled for rows that predate it. The Python reference of the same
aggregates is `capeval.core.aggregate` (`metric_values`, `median`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from capeval.core.metrics import METRIC_NAMES
from capeval.results.columns import ident

MEASURES: dict[str, str] = {
    "repeats": "count(*)",
    "passCount": "count_if(passed)",
    "passRate": "count_if(passed) / count(*)",
    "medianTurns": "median(turnsUsed)",
    "medianDurationMs": "median(durationMs)",
    "durationMs": "sum(durationMs)",
    "turnsUsed": "sum(turnsUsed)",
    "tokenInput": "sum(tokenInput)",
    "tokenOutput": "sum(tokenOutput)",
    **{m: f"median({ident(m)})" for m in METRIC_NAMES},
}


def measures(names: Iterable[str], *, casts: Mapping[str, str] | None = None) -> list[str]:
    """`<expression> AS <name>` for each measure, cast where `casts` says (a view's types)."""
    out = []
    for name in names:
        expression = MEASURES[name]
        if casts and name in casts:
            expression = f"CAST({expression} AS {casts[name]})"
        out.append(f"{expression} AS {ident(name)}")
    return out
