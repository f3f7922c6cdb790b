"""What a person watching a run sees: a line per finished repeat, then a table per cell.

Kept out of the runner so `execute` stays silent for notebooks and tests,
and so the per-cell summary (pure) can be reused by other front ends.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from capeval.aggregate import median


class ProgressPrinter:
    """`on_row` callback: one line per repeat as it lands; silent when disabled."""

    def __init__(self, enabled: bool, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stderr

    def __call__(self, row: Mapping[str, Any], done: int, total: int) -> None:
        if not self.enabled:
            return
        self.stream.write(progress_line(row, done, total) + "\n")
        self.stream.flush()


def progress_line(row: Mapping[str, Any], done: int, total: int) -> str:
    width = len(str(total))
    mark = "PASS" if row.get("passed") else "FAIL"
    secs = (row.get("durationMs") or 0) / 1000
    turns = row.get("turnsUsed")
    line = (
        f"[{done:>{width}}/{total}] {mark} {row.get('variantId')} {row.get('id')} "
        f"#{row.get('repeat')}  {secs:.1f}s  {'?' if turns is None else turns} turns"
    )
    if not row.get("passed") and row.get("error"):
        line += f"  ({_short(str(row['error']))})"
    return line


@dataclass(frozen=True)
class CellSummary:
    variantId: str
    caseId: str
    repeats: int
    passes: int
    medianTurns: float | None
    bait: str  # "" (no bait), "misbehaving", "ok" or "no data"
    baitMedian: float | None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def cell_summaries(rows: Sequence[Mapping[str, Any]]) -> list[CellSummary]:
    """Per (variant, case), in first-seen order: passes, median turns, bait status."""
    cells: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        cells.setdefault((str(row.get("variantId")), str(row.get("id"))), []).append(row)
    out = []
    for (variant, case), group in cells.items():
        turns = [r["turnsUsed"] for r in group if isinstance(r.get("turnsUsed"), int | float)]
        bait = next((r.get("bait") for r in group if r.get("bait")), None)
        status, bait_median = "", None
        if bait:
            values = [
                r["behaviors"][bait["metric"]]
                for r in group
                if isinstance(r.get("behaviors"), Mapping)
                and isinstance(r["behaviors"].get(bait["metric"]), int | float)
            ]
            if values:
                bait_median = median(values)
                status = "misbehaving" if bait_median > bait["threshold"] else "ok"
            else:
                status = "no data"
        out.append(
            CellSummary(
                variantId=variant,
                caseId=case,
                repeats=len(group),
                passes=sum(1 for r in group if r.get("passed") is True),
                medianTurns=median(turns) if turns else None,
                bait=status,
                baitMedian=bait_median,
            )
        )
    return out


def format_table(cells: Sequence[CellSummary]) -> str:
    header = ("variant", "case", "passed", "median turns", "bait")
    body = []
    for c in cells:
        bait = c.bait
        if c.baitMedian is not None:
            bait += f" (median {c.baitMedian:g})"
        turns = "-" if c.medianTurns is None else f"{c.medianTurns:g}"
        body.append((c.variantId, c.caseId, f"{c.passes}/{c.repeats}", turns, bait or "-"))
    widths = [max(len(r[i]) for r in (header, *body)) for i in range(len(header))]
    lines = [
        "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
        for r in (header, *body)
    ]
    return "\n".join(lines)


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
