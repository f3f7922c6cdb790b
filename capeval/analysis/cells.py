"""Cells as polars frames, and cells from polars frames (notebooks, the viewer).

The cell itself and its reference builder from rows live in the pure core
(`capeval.core.cell`); these two functions only translate to and from
frames. Polars is imported inside them so the gate's start-up stays light.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from capeval.core.cell import Cell, cells_from_rows
from capeval.core.metrics import METRIC_NAMES

if TYPE_CHECKING:
    import polars as pl


# -- frames (notebooks) -----------------------------------------------------


def cell_frame(cells: Mapping[str, Cell]) -> pl.DataFrame:
    """Cells as a polars frame: one row per cell, one `<metric>` column of medians each."""
    import polars as pl

    records = []
    for cell in cells.values():
        record: dict[str, Any] = {
            "resultKey": cell.resultKey,
            "caseId": cell.caseId,
            "variantId": cell.variantId,
            "tier": cell.tier,
            "repeats": cell.repeats,
            "passCount": cell.passCount,
            "passRate": cell.passRate,
            "errors": cell.errors,
            "providers": [p or "" for p, _ in cell.resolved],
            "models": [m or "" for _, m in cell.resolved],
            "mixed": cell.mixed,
            "baitMetric": cell.bait.metric if cell.bait else None,
            "baitThreshold": cell.bait.threshold if cell.bait else None,
        }
        for metric in METRIC_NAMES:
            record[metric] = cell.medians.get(metric)
        records.append(record)
    schema: dict[str, Any] = {
        "resultKey": pl.String,
        "caseId": pl.String,
        "variantId": pl.String,
        "tier": pl.String,
        "repeats": pl.Int64,
        "passCount": pl.Int64,
        "passRate": pl.Float64,
        "errors": pl.Int64,
        "providers": pl.List(pl.String),
        "models": pl.List(pl.String),
        "mixed": pl.Boolean,
        "baitMetric": pl.String,
        "baitThreshold": pl.Float64,
        **{m: pl.Float64 for m in METRIC_NAMES},
    }
    return pl.DataFrame(records, schema=schema, orient="row" if not records else None)


def cells_from_frame(frame: pl.DataFrame) -> dict[str, Cell]:
    """Cells from a one-row-per-repeat frame (`capeval.analysis.frame.load_frame`).

    The frame carries behavior metrics as top-level columns; a repeat whose
    behaviors were not captured has nulls there.
    """
    if not hasattr(frame, "iter_rows"):
        raise TypeError(
            f"expected a polars DataFrame with one row per repeat (load_frame(...)), "
            f"found {type(frame).__name__}"
        )
    columns = set(frame.columns)
    missing = [c for c in ("id", "passed") if c not in columns]
    if not {"variantId", "resultKey"} & columns:
        missing.append("variantId")
    if missing:
        # A KeyError from inside the loop named neither the frame nor the fix.
        raise ValueError(
            f"the frame lacks column(s) {', '.join(missing)}; pass one row per repeat "
            "(load_frame(...) or SELECT * FROM repeats of a history connection)"
        )
    rows: list[dict[str, Any]] = []
    for record in frame.iter_rows(named=True):
        metrics = {m: record.get(m) for m in METRIC_NAMES if m in columns}
        captured = any(v is not None for v in metrics.values())
        rows.append(
            {
                "resultKey": record.get("resultKey"),
                "id": record["id"],
                "variantId": record.get("variantId"),
                "passed": record.get("passed") is True,
                "outcome": record.get("outcome"),
                "status": record.get("status"),
                "provider": record.get("provider"),
                "model": record.get("model"),
                "tier": record.get("tier"),
                "title": record.get("title"),
                "runStartedAt": record.get("runStartedAt"),
                "durationMs": record.get("durationMs"),
                "turnsUsed": record.get("turnsUsed"),
                "tokenUsage": {"input": record.get("tokenInput")},
                "behaviors": metrics if captured else None,
                "bait": None
                if record.get("baitMetric") is None and record.get("baitThreshold") is None
                else {"metric": record.get("baitMetric"), "threshold": record.get("baitThreshold")},
            }
        )
    return cells_from_rows(rows)
