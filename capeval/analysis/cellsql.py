"""A cell's aggregates, defined once in SQL.

The gate's fast path (`capeval.analysis.fastload`) and the history `cells`
view (`capeval.analysis.views`) both aggregate a cell's repeats with these
expressions, so a median or a pass count cannot mean one thing in a verdict
and another in a query. They run over typed rows that supersession has
left (`capeval.results.supersede`): `passed` a BOOLEAN, `outcome` the
row's outcome (derived for rows that predate it), every behavior metric a
number (null for a repeat whose behaviors were not captured, which so
counts for nothing, never as zero), `taskToolCallCount` already filled for
rows that predate it. Pass counts, rates and medians are over the judged
repeats (outcome passed or failed); `errors` counts the others; sums (time,
tokens) are over every repeat, since an `error` repeat cost them too. The
Python reference of the same aggregates is `capeval.core.aggregate`
(`judged`, `metric_values`, `median`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from capeval.core.metrics import METRIC_NAMES
from capeval.core.outcome import ERROR
from capeval.results.columns import ident


def _measures(counted: str) -> dict[str, str]:
    """Each measure over the rows for which `counted` (SQL) holds."""
    judged = f"({counted} AND outcome <> '{ERROR}')"
    return {
        "repeats": f"count_if({judged})",
        "passCount": f"count_if({judged} AND passed)",
        "passRate": f"count_if({judged} AND passed) / nullif(count_if({judged}), 0)",
        "errors": f"count_if({counted} AND outcome = '{ERROR}')",
        "medianTurns": f"median(turnsUsed) FILTER (WHERE {judged})",
        "medianDurationMs": f"median(durationMs) FILTER (WHERE {judged})",
        **{
            name: f"sum({name}) FILTER (WHERE {counted})"
            for name in ("durationMs", "turnsUsed", "tokenInput", "tokenOutput")
        },
        **{m: f"median({ident(m)}) FILTER (WHERE {judged})" for m in METRIC_NAMES},
    }


MEASURES: dict[str, str] = _measures("true")


def measures(
    names: Iterable[str], *, casts: Mapping[str, str] | None = None, counted: str = "true"
) -> list[str]:
    """`<expression> AS <name>` for each measure, cast where `casts` says (a view's types).

    `counted`: SQL that leaves rows out of every measure (the gate's fast path
    reads superseded rows, to judge them, and counts them for nothing).
    """
    table = MEASURES if counted == "true" else _measures(counted)
    out = []
    for name in names:
        expression = table[name]
        if casts and name in casts:
            expression = f"CAST({expression} AS {casts[name]})"
        out.append(f"{expression} AS {ident(name)}")
    return out
