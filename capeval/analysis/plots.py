"""Plots of results: headless matplotlib figures built from frames.

Every plot is two functions: `<plot>_data(...)` computes the polars frame the
plot shows (testable, and useful on its own in a notebook) and `<plot>(...)`
draws it and returns a `matplotlib.figure.Figure`; `capeval plot` saves it.
Figures are built with the object API (no pyplot), so nothing needs a
display and no global figure state leaks between calls.

Inputs are one-row-per-repeat frames: `capeval.analysis.frame.load_frame`
output or `SELECT * FROM repeats` of a history connection
(`capeval.analysis.history.frame`; DuckDB's `.pl()` needs pyarrow); both
carry `id`, `variantId`, `passed`, the behavior metric columns and the run
columns. Colours are the Okabe-Ito palette (categorical) and cividis
(sequential), both readable with the common colour-vision deficiencies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from capeval.core.metrics import METRIC_NAMES

if TYPE_CHECKING:
    import polars as pl
    from matplotlib.figure import Figure

# Okabe & Ito (2008), without black: distinguishable with colour-vision deficiencies.
OKABE_ITO: tuple[str, ...] = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#D55E00",  # vermillion
    "#F0E442",  # yellow
)
MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v", "P", "X")
SEQUENTIAL_CMAP = "cividis"
MISSING_COLOR = "#DDDDDD"
# Behavior metrics that count things: their axes get whole-number ticks only.
COUNT_METRICS: frozenset[str] = frozenset(m for m in METRIC_NAMES if not m.endswith("Ms"))
# Heights (inches) of a figure title line and a legend row above the axes.
TITLE_LINE_IN = 0.32
LEGEND_ROW_IN = 0.3


class PlotError(ValueError):
    """The frame cannot make this plot (missing columns, no rows)."""


def colour(index: int) -> str:
    return OKABE_ITO[index % len(OKABE_ITO)]


def _require(frame: pl.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise PlotError(
            f"{what}: the frame lacks column(s) {', '.join(missing)}; pass one row per repeat "
            "(load_frame(...) or SELECT * FROM repeats)"
        )
    if frame.height == 0:
        raise PlotError(f"{what}: no rows to plot")


def _case_column(frame: pl.DataFrame) -> str:
    return "id" if "id" in frame.columns else "caseId"


def _with_variants(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows that name only a resultKey get their variant from it, as the history views do.

    The reference reader accepts such rows; a null variant would otherwise
    break sorting and drop out of every plot.
    """
    import polars as pl

    if "resultKey" not in frame.columns or frame["variantId"].null_count() == 0:
        return frame
    key, suffix = pl.col("resultKey"), pl.lit("::") + pl.col(_case_column(frame))
    # The key minus its `::<case id>` (ids may hold '::'), as `cells.variant_of` reads it.
    derived = pl.when(key.str.ends_with(suffix)).then(key.str.strip_suffix(suffix))
    return frame.with_columns(pl.coalesce(pl.col("variantId"), derived, pl.lit("?")))


# -- heatmap: pass rate per variant x case ------------------------------------------------


def heatmap_data(repeats: pl.DataFrame) -> pl.DataFrame:
    """Pass rate per variant and case: variantId, caseId, repeats, passCount, passRate."""
    import polars as pl

    case = _case_column(repeats)
    _require(repeats, ["variantId", case, "passed"], "heatmap")
    repeats = _with_variants(repeats)
    return (
        repeats.group_by("variantId", pl.col(case).alias("caseId"))
        .agg(
            pl.len().cast(pl.Int64).alias("repeats"),
            pl.col("passed").fill_null(False).sum().cast(pl.Int64).alias("passCount"),
        )
        .with_columns((pl.col("passCount") / pl.col("repeats")).alias("passRate"))
        .sort("variantId", "caseId")
    )


def heatmap(repeats: pl.DataFrame, *, title: str | None = None) -> Figure:
    """Cases down, variants across; colour = pass rate, text = passes/repeats."""
    import numpy as np
    from matplotlib.figure import Figure

    data = heatmap_data(repeats)
    variants = sorted(set(data["variantId"].to_list()))
    cases = sorted(set(data["caseId"].to_list()))
    grid = np.full((len(cases), len(variants)), np.nan)
    labels: dict[tuple[int, int], str] = {}
    for row in data.iter_rows(named=True):
        i, j = cases.index(row["caseId"]), variants.index(row["variantId"])
        grid[i, j] = row["passRate"]
        labels[(i, j)] = f"{row['passCount']}/{row['repeats']}"

    fig = Figure(figsize=(max(5.0, 2.8 + 1.3 * len(variants)), max(3.0, 1.2 + 0.42 * len(cases))))
    ax = fig.add_subplot()
    cmap = _cmap(SEQUENTIAL_CMAP)
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(variants)), variants, rotation=30 if len(variants) > 4 else 0)
    ax.set_yticks(range(len(cases)), cases)
    ax.set_xlabel("variant")
    ax.set_ylabel("case")
    for (i, j), text in labels.items():
        # Dark text on the light (yellow) end of cividis, light text on the dark end.
        ax.text(j, i, text, ha="center", va="center", fontsize=9,
                color="black" if grid[i, j] >= 0.6 else "white")  # fmt: skip
    for i, j in zip(*np.where(np.isnan(grid)), strict=True):
        ax.text(j, i, "-", ha="center", va="center", fontsize=9, color="black")
    fig.colorbar(image, ax=ax, label="pass rate", fraction=0.05, pad=0.03)
    # Wrapped: a figure one or two variants wide is narrower than a title
    # naming a run id, and an unwrapped title is cut at both edges.
    ax.set_title(title or "Pass rate per variant and case", wrap=True)
    fig.tight_layout()
    return fig


def _cmap(name: str) -> Any:
    """The colormap, with cells that have no data drawn in light grey."""
    import matplotlib

    return matplotlib.colormaps[name].with_extremes(bad=MISSING_COLOR)


# -- compare: candidate vs baseline per cell with Wilson intervals -------------------------


def compare_data(baseline: pl.DataFrame, candidate: pl.DataFrame) -> pl.DataFrame:
    """Per matched cell and side: pass rate and its 95% Wilson interval.

    Cells are matched as the gate matches them (`variantId::caseId`, else case
    id alone when the baseline has one variant), so the plot shows the
    comparison `capeval compare` judges. Columns: resultKey, caseId,
    variantId, status, side, repeats, passCount, passRate, low, high.
    """
    import polars as pl

    from capeval.analysis.cells import cells_from_frame
    from capeval.analysis.compare import compare_cells
    from capeval.analysis.stats import wilson

    for frame, what in ((baseline, "compare (baseline)"), (candidate, "compare (candidate)")):
        _require(frame, ["variantId", "id", "passed"], what)
    comparison = compare_cells(
        cells_from_frame(baseline), cells_from_frame(candidate), allow_provider_fallback=True
    )
    records = []
    for cell in comparison.cells:
        for side, data in (("baseline", cell.baseline), ("candidate", cell.candidate)):
            if data is None:
                continue
            low, high = wilson(data.passCount, data.repeats) or (None, None)
            records.append(
                {
                    "resultKey": cell.resultKey,
                    "caseId": cell.caseId,
                    "variantId": cell.variantId,
                    "status": cell.status,
                    "side": side,
                    "repeats": data.repeats,
                    "passCount": data.passCount,
                    "passRate": data.passRate,
                    "low": low,
                    "high": high,
                }
            )
    schema = {
        "resultKey": pl.String,
        "caseId": pl.String,
        "variantId": pl.String,
        "status": pl.String,
        "side": pl.String,
        "repeats": pl.Int64,
        "passCount": pl.Int64,
        "passRate": pl.Float64,
        "low": pl.Float64,
        "high": pl.Float64,
    }
    return pl.DataFrame(records, schema=schema)


def compare(baseline: pl.DataFrame, candidate: pl.DataFrame, *, title: str | None = None) -> Figure:
    """One row per cell: baseline and candidate pass rates with 95% Wilson intervals."""
    from matplotlib.figure import Figure

    data = compare_data(baseline, candidate)
    keys = sorted(set(data["resultKey"].to_list()), reverse=True)  # first key at the top
    status = dict(zip(data["resultKey"].to_list(), data["status"].to_list(), strict=True))
    fig = Figure(figsize=(8.0, max(3.0, 1.0 + 0.38 * len(keys))))
    ax = fig.add_subplot()
    for index, (side, marker, offset) in enumerate(
        (("baseline", "o", 0.17), ("candidate", "s", -0.17))
    ):
        part = data.filter(data["side"] == side)
        ys = [keys.index(k) + offset for k in part["resultKey"].to_list()]
        rates = part["passRate"].to_list()
        lows = [r - lo for r, lo in zip(rates, part["low"].to_list(), strict=True)]
        highs = [hi - r for r, hi in zip(rates, part["high"].to_list(), strict=True)]
        ax.errorbar(rates, ys, xerr=[lows, highs], fmt=marker, color=colour(index),
                    ecolor=colour(index), elinewidth=1.5, capsize=3, label=side)  # fmt: skip
    ax.set_yticks(range(len(keys)), [f"{k}  [{status[k]}]" for k in keys])
    ax.set_xlim(-0.03, 1.03)
    ax.set_xlabel("pass rate (95% Wilson interval)")
    ax.grid(axis="x", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    head_room(fig, title or "Candidate vs baseline per cell", handles, labels)
    return fig


# -- history: pass rate and cost over time per variant -------------------------------------


def history_data(repeats: pl.DataFrame) -> pl.DataFrame:
    """Per run and variant: start time, pass rate, mean seconds and tokens per repeat.

    Columns: runId, runStartedAt, variantId, repeats, passCount, passRate,
    secondsPerRepeat, tokensPerRepeat (input + output; null when the agent
    reported no tokens). Sorted by start time.
    """
    import polars as pl

    _require(repeats, ["runId", "runStartedAt", "variantId", "passed"], "history")
    started = _utc_naive(pl.col("runStartedAt"), repeats.schema["runStartedAt"])
    if repeats["runStartedAt"].null_count() == repeats.height:
        raise PlotError(
            "history: no run start times in these repeats (rows without runStartedAt from "
            "v3 files whose header has no startedAt either; load_frame and the history views "
            "date v3 rows by their file's header)"
        )
    if "source" in repeats.columns:
        repeats = repeats.with_columns(pl.col("runId").fill_null(pl.col("source")))
    dated = repeats.group_by("runId").agg(started.is_not_null().any().alias("dated"))
    if not dated["dated"].all():
        # A run without a start time has no place on the time axis; dropping
        # it would show a history without it, as if it had never run.
        runs = sorted(str(r) for r in dated.filter(~pl.col("dated"))["runId"].to_list())
        raise PlotError(
            f"history: {len(runs)} run(s) have no readable start time ({', '.join(runs[:3])}"
            f"{', ...' if len(runs) > 3 else ''}): rows without runStartedAt from v3 files "
            "whose header has no startedAt either, or a frame not built by load_frame or "
            "the history views (connect(paths), SELECT * FROM repeats), which date v3 rows "
            "by their file's header"
        )
    tokens = [c for c in ("tokenInput", "tokenOutput") if c in repeats.columns]
    token_sum = pl.sum_horizontal(tokens) if tokens else pl.lit(None, dtype=pl.Int64)
    token_seen = pl.any_horizontal([pl.col(c).is_not_null() for c in tokens]) if tokens else False
    duration = pl.col("durationMs") if "durationMs" in repeats.columns else pl.lit(None)
    return (
        repeats.with_columns(
            started.alias("runStartedAt"),
            pl.when(token_seen).then(token_sum).otherwise(None).alias("_tokens"),
            duration.cast(pl.Float64).alias("_ms"),
        )
        .group_by("runId", "variantId")
        .agg(
            pl.col("runStartedAt").min(),
            pl.len().cast(pl.Int64).alias("repeats"),
            pl.col("passed").fill_null(False).sum().cast(pl.Int64).alias("passCount"),
            (pl.col("_ms").mean() / 1000).alias("secondsPerRepeat"),
            pl.col("_tokens").mean().alias("tokensPerRepeat"),
        )
        .with_columns((pl.col("passCount") / pl.col("repeats")).alias("passRate"))
        .select(
            "runId",
            "runStartedAt",
            "variantId",
            "repeats",
            "passCount",
            "passRate",
            "secondsPerRepeat",
            "tokensPerRepeat",
        )
        .sort("runStartedAt", "runId", "variantId")
    )


def _utc_naive(started: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """Run start times as naive UTC datetimes, as the history views give them.

    Files from different tools mix `...Z`, `...+09:00` and offset-less strings;
    parsed as one column, polars infers a single format and turns every string
    of the other kind into null (a run silently dropped from the plot). So
    offset-less strings are taken as UTC first, as the history views take them.
    """
    import polars as pl

    from capeval.analysis.history import UTC_OFFSET_PATTERN

    if dtype == pl.String:
        text = (
            pl.when(started.str.contains(UTC_OFFSET_PATTERN)).then(started).otherwise(started + "Z")
        )
        return text.str.to_datetime(time_zone="UTC", strict=False).dt.replace_time_zone(None)
    if isinstance(dtype, pl.Datetime) and dtype.time_zone is not None:
        return started.dt.convert_time_zone("UTC").dt.replace_time_zone(None)
    return started


def history(repeats: pl.DataFrame, *, title: str | None = None) -> Figure:
    """Pass rate (top) and cost per repeat (below) of each variant, run by run."""
    from matplotlib.figure import Figure

    data = history_data(repeats)
    has_tokens = data["tokensPerRepeat"].drop_nulls().len() > 0
    panels = [("passRate", "pass rate"), ("secondsPerRepeat", "seconds per repeat")]
    if has_tokens:
        panels.append(("tokensPerRepeat", "tokens per repeat"))
    fig = Figure(figsize=(9.0, 2.4 * len(panels) + 0.8))
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    variants = sorted(set(data["variantId"].to_list()))
    for index, variant in enumerate(variants):
        part = data.filter(data["variantId"] == variant)
        for ax, (column, _) in zip(axes, panels, strict=True):
            ax.plot(part["runStartedAt"].to_list(), part[column].to_list(), color=colour(index),
                    marker=MARKERS[index % len(MARKERS)], label=variant)  # fmt: skip
    for ax, (_, label) in zip(axes, panels, strict=True):
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylim(-0.05, 1.05)
    axes[0].legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=min(4, len(variants)),
                   frameon=False)  # fmt: skip
    axes[-1].set_xlabel("run start (UTC)")
    fig.autofmt_xdate()
    fig.suptitle(title or "Pass rate and cost per variant across runs", x=0.01, ha="left")
    fig.tight_layout()
    return fig


# -- behaviors: metric distributions per cell ------------------------------------------------


def behaviors_data(
    repeats: pl.DataFrame, metrics: str | Sequence[str] | None = None
) -> pl.DataFrame:
    """Long frame of behavior values: resultKey, variantId, caseId, metric, value.

    Only repeats whose behaviors were captured; by default the metrics that
    are non-zero somewhere (an all-zero panel says nothing), or every metric
    when all are zero: a clean run is worth a picture too.
    """
    import polars as pl

    case = _case_column(repeats)
    _require(repeats, ["variantId", case], "behaviors")
    repeats = _with_variants(repeats)
    if isinstance(metrics, str):
        metrics = [metrics]  # one metric, not one per character
    if metrics is not None:
        metrics = list(dict.fromkeys(metrics))  # a metric named twice is one panel
    unknown = [m for m in metrics or () if m not in METRIC_NAMES]
    if unknown:
        raise PlotError(
            f"behaviors: unknown metric(s) {', '.join(unknown)}; known: {', '.join(METRIC_NAMES)}"
        )
    present = [m for m in METRIC_NAMES if m in repeats.columns]
    if metrics is None:
        metrics = [m for m in present if (repeats[m].fill_null(0) != 0).any()] or [
            m for m in present if repeats[m].null_count() < repeats.height
        ]
    else:
        metrics = [m for m in metrics if m in present]
    if not metrics:
        raise PlotError("behaviors: no behavior metric has data in these repeats")
    if "behaviorsCaptured" in repeats.columns:
        repeats = repeats.filter(pl.col("behaviorsCaptured"))
    data = (
        repeats.select(
            pl.col("variantId"),
            pl.col(case).alias("caseId"),
            *(pl.col(m).cast(pl.Float64) for m in metrics),
        )
        .with_columns((pl.col("variantId") + "::" + pl.col("caseId")).alias("resultKey"))
        .unpivot(index=["resultKey", "variantId", "caseId"], on=metrics, variable_name="metric")
        .drop_nulls("value")
        .with_columns(
            pl.col("metric").cast(pl.Enum(list(metrics))),
        )
        .sort("metric", "resultKey", "value")
        .with_columns(pl.col("metric").cast(pl.String))
    )
    if data.height == 0:
        # A metric asked for by name that no captured repeat reports: the
        # figure had no panel to draw and divided by zero.
        raise PlotError(
            f"behaviors: no captured value of {', '.join(metrics)} in these repeats "
            "(behaviors not captured, or not reported for that metric)"
        )
    return data


def behaviors(
    repeats: pl.DataFrame, metrics: str | Sequence[str] | None = None, *, title: str | None = None
) -> Figure:
    """One panel per metric: each cell's values (points) and median (bar), cells down."""
    import numpy as np
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    data = behaviors_data(repeats, metrics)
    shown = list(dict.fromkeys(data["metric"].to_list()))
    keys = sorted(set(data["resultKey"].to_list()), reverse=True)
    variants = sorted(set(data["variantId"].to_list()))
    # From the data, not the key: a case id may hold '::' itself.
    variant_of = dict(zip(data["resultKey"].to_list(), data["variantId"].to_list(), strict=True))
    columns = min(4, len(shown))
    rows = -(-len(shown) // columns)
    fig = Figure(figsize=(3.4 * columns + 2.2, max(2.4, (0.9 + 0.26 * len(keys)) * rows)))
    axes = fig.subplots(rows, columns, squeeze=False, sharey=True)
    rng = np.random.default_rng(0)  # fixed jitter: the same data gives the same picture
    for n, metric in enumerate(shown):
        ax = axes[n // columns][n % columns]
        part = data.filter(data["metric"] == metric)
        for key in keys:
            values = part.filter(part["resultKey"] == key)["value"].to_numpy()
            if values.size == 0:
                continue
            y = keys.index(key)
            c = colour(variants.index(variant_of[key]))
            ax.scatter(values, y + rng.uniform(-0.18, 0.18, values.size), s=14, color=c, alpha=0.8)
            ax.plot([np.median(values)] * 2, [y - 0.32, y + 0.32], color="black", linewidth=1.5)
        ax.set_title(metric, fontsize=10)
        ax.grid(axis="x", alpha=0.3)
        ax.set_yticks(range(len(keys)), keys, fontsize=8)
        if metric in COUNT_METRICS:
            # Counts are whole: no 0.5 ticks, and an all-zero panel still spans 0..1.
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            top = max([1.0, *part["value"].drop_nulls().to_list()])
            ax.set_xlim(-0.5, top + 0.5)
    for n in range(len(shown), rows * columns):
        axes[n // columns][n % columns].set_visible(False)
    legend = [
        Line2D([], [], marker="o", linestyle="", color=colour(i), label=v)
        for i, v in enumerate(variants)
    ] + [Line2D([], [], color="black", label="median")]
    head_room(
        fig,
        title or "Behavior metrics per cell (each point a repeat)",
        legend,
        [str(h.get_label()) for h in legend],
    )
    return fig


def head_room(fig: Figure, title: str, handles: Sequence[Any], labels: Sequence[str]) -> None:
    """The title on its own line(s) at the top left, the legend in rows below it,
    then the axes: the figure grows by what they need, so nothing overprints.

    A legend in the top right corner ran into a left-aligned title on a figure
    one or two panels wide (`plot behaviors --metric X`).
    """
    import textwrap

    width, height = fig.get_size_inches()
    per_line = max(20, int((width - 0.3) / 0.1))  # ~0.1 in per character at 12 pt
    lines = textwrap.wrap(title, per_line) or [""]
    entry = 0.75 + 0.085 * max((len(label) for label in labels), default=0)
    ncols = max(1, min(len(labels), int((width - 0.3) // entry)))
    rows = -(-len(labels) // ncols) if labels else 0
    title_in = 0.12 + TITLE_LINE_IN * len(lines)
    top_in = title_in + LEGEND_ROW_IN * rows + 0.1
    fig.set_size_inches(width, height + top_in)
    total = height + top_in
    # Out of tight_layout's reckoning: the rect below already leaves its room.
    fig.suptitle("\n".join(lines), x=0.01, y=1 - 0.08 / total, ha="left", va="top", in_layout=False)
    if labels:
        fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(0.005, 1 - title_in / total),
                   ncols=ncols, frameon=False)  # fmt: skip
    fig.tight_layout(rect=(0, 0, 1, 1 - top_in / total))
