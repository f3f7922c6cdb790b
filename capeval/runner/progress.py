"""What a person watching a run sees: a line per finished repeat, then a table per cell.

Kept out of the runner so `execute` stays silent for notebooks and tests,
and so the per-cell summary (pure) can be reused by other front ends.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from capeval.core.aggregate import judged, median, metric_values
from capeval.core.outcome import ERROR, row_outcome


class ProgressPrinter:
    """`on_row` callback: one line per repeat as it lands; silent when disabled.

    Each line also says about how long the rest will take: with real agents a
    matrix runs for an hour or more, and "[12/240]" alone does not say
    whether to wait or come back tomorrow.
    """

    def __init__(
        self,
        enabled: bool,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.clock = clock
        self.started = clock()
        self.done_before: int | None = None  # rows a resumed run had already

    def __call__(self, row: Mapping[str, Any], done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.done_before is None:
            self.done_before = done - 1
        left = time_left(self.clock() - self.started, done - self.done_before, total - done)
        self.stream.write(progress_line(row, done, total, left) + "\n")
        self.stream.flush()

    def retrying(self, row: Mapping[str, Any], wait_s: float) -> None:
        """`on_retry` callback: an attempt measured nothing and the repeat runs again."""
        if not self.enabled:
            return
        self.stream.write(
            f"  retry {row.get('variantId')} {row.get('id')} #{row.get('repeat')}: attempt "
            f"{row.get('attempts')} measured nothing ({_why(row)}); again in {wait_s:.1f}s\n"
        )
        self.stream.flush()


def _why(row: Mapping[str, Any]) -> str:
    status = row.get("providerStatus")
    kind = str(row.get("errorKind") or "error")
    return f"{kind} {status}" if status is not None else kind


def time_left(elapsed_s: float, finished: int, remaining: int) -> float | None:
    """Seconds until the run ends at this process's pace so far; None when unknown.

    The pace is finished repeats per second of wall time, so concurrency is
    in it; repeats a resumed run found written are not (they took no time).
    """
    if remaining <= 0 or finished <= 0 or elapsed_s <= 0:
        return None
    return elapsed_s / finished * remaining


def short_duration(seconds: float) -> str:
    """`45s`, `12m`, `2h05m`: coarse, as an estimate should be."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes}m"
    return f"{minutes // 60}h{minutes % 60:02d}m"


def progress_line(
    row: Mapping[str, Any], done: int, total: int, left_s: float | None = None
) -> str:
    width = len(str(total))
    outcome = row_outcome(row)
    mark = {"passed": "PASS", "failed": "FAIL", ERROR: "ERROR"}[outcome]
    secs = (row.get("durationMs") or 0) / 1000
    turns = row.get("turnsUsed")
    line = (
        f"[{done:>{width}}/{total}] {mark} {row.get('variantId')} {row.get('id')} "
        f"#{row.get('repeat')}  {secs:.1f}s  {'?' if turns is None else turns} turns"
    )
    attempts = row.get("attempts")
    if isinstance(attempts, int) and attempts > 1:
        line += f"  {attempts} attempts"
    if left_s is not None:
        line += f"  ~{short_duration(left_s)} left"
    if not row.get("passed") and row.get("error"):
        line += f"  ({_short(str(row['error']))})"
    return line


@dataclass(frozen=True)
class CellSummary:
    variantId: str
    caseId: str
    repeats: int  # judged: passed or failed
    passes: int
    medianTurns: float | None
    bait: str  # "" (no bait), "misbehaving", "ok" or "no data"
    baitMedian: float | None
    errors: int = 0  # repeats whose outcome is `error`: not measured

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def cell_summaries(rows: Sequence[Mapping[str, Any]]) -> list[CellSummary]:
    """Per (variant, case), in first-seen order: passes, median turns, bait status."""
    cells: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        cells.setdefault((str(row.get("variantId")), str(row.get("id"))), []).append(row)
    out = []
    for (variant, case), group in cells.items():
        measured = [r for r in group if judged(r)]
        turns = [r["turnsUsed"] for r in measured if isinstance(r.get("turnsUsed"), int | float)]
        bait = next((r.get("bait") for r in group if r.get("bait")), None)
        status, bait_median = "", None
        if bait:
            values = metric_values(group).get(bait["metric"], [])
            if values:
                bait_median = median(values)
                status = "misbehaving" if bait_median > bait["threshold"] else "ok"
            else:
                status = "no data"
        out.append(
            CellSummary(
                variantId=variant,
                caseId=case,
                repeats=len(measured),
                passes=sum(1 for r in measured if r.get("passed") is True),
                medianTurns=median(turns) if turns else None,
                bait=status,
                baitMedian=bait_median,
                errors=len(group) - len(measured),
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
        passed = f"{c.passes}/{c.repeats}" + (f" ({c.errors} error)" if c.errors else "")
        body.append((c.variantId, c.caseId, passed, turns, bait or "-"))
    widths = [max(len(r[i]) for r in (header, *body)) for i in range(len(header))]
    lines = [
        "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
        for r in (header, *body)
    ]
    return "\n".join(lines)


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
