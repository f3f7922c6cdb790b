"""Cases' recent durations from history, for cutting a run into balanced shards.

`capeval run --shard I/N` weighs each case by the median duration of its
latest repeats (`capeval.core.shards.case_weights`). The runner never loads
the analysis stack, so the command reads the history here, with the same
reader as every other history view (`load_frame`), and passes the durations
in (`RunOptions.shard_durations`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from capeval.core.shards import RECENT_REPEATS


def recent_durations(
    paths: Iterable[str | Path], recent: int = RECENT_REPEATS
) -> dict[str, list[float]]:
    """Case id -> the `durationMs` of its `recent` latest repeats in these result files.

    Latest by the run's start, then the repeat's start (a repeat dated by
    neither counts as oldest); ties keep the files' order. Raises
    `ResultFileError` for a file that is not a result file.
    """
    import polars as pl

    from capeval.analysis.frame import load_frame

    frame = load_frame(list(paths), on_warning=lambda _message: None)
    if frame.height == 0:
        return {}
    stamps = [c for c in ("runStartedAt", "startedAt") if c in frame.columns]
    picked = (
        frame.lazy()
        .select(
            pl.col("id").cast(pl.String),
            pl.col("durationMs").cast(pl.Float64),
            *(pl.col(c).cast(pl.String) for c in stamps),
        )
        .filter(
            pl.col("id").is_not_null()
            & pl.col("durationMs").is_not_null()
            & pl.col("durationMs").is_finite()
            & (pl.col("durationMs") >= 0)
        )
        .with_row_index("position")
        .sort(
            [*stamps, "position"],
            descending=[True] * len(stamps) + [False],
            nulls_last=True,
            maintain_order=True,
        )
        .group_by("id", maintain_order=True)
        .head(recent)
        .group_by("id", maintain_order=True)
        .agg(pl.col("durationMs"))
        .collect()
    )
    return {str(case): list(values) for case, values in picked.iter_rows()}
