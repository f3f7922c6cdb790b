"""Plots: each figure is written, shows the right data, and the data is right."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from matplotlib.figure import Figure

from capeval.analysis import plots
from capeval.analysis.frame import load_frame
from capeval.analysis.history import _utc, connect, frame
from capeval.analysis.stats import wilson
from tests.analysis.test_history import SAMPLES, sample_rows
from tests.clirun import capeval

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def repeats() -> Iterator[pl.DataFrame]:
    con = connect([SAMPLES])
    yield frame(con, "SELECT * FROM repeats")
    con.close()


def first_run(rows: list[dict]) -> str:
    return min(r["runId"] for r in rows)


def test_heatmap_data_and_image(repeats: pl.DataFrame) -> None:
    rows = sample_rows()
    run = first_run(rows)
    counts: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for r in rows:
        if r["runId"] == run:
            counts[(r["variantId"], r["id"])].append(r["passed"])
    one_run = repeats.filter(pl.col("runId") == run)
    data = plots.heatmap_data(one_run)
    got = {(d["variantId"], d["caseId"]): (d["passCount"], d["repeats"]) for d in data.to_dicts()}
    assert got == {k: (sum(v), len(v)) for k, v in counts.items()}

    figure = plots.heatmap(one_run)
    assert isinstance(figure, Figure)
    ax = figure.axes[0]
    variants = [t.get_text() for t in ax.get_xticklabels()]
    cases = [t.get_text() for t in ax.get_yticklabels()]
    shown = ax.images[0].get_array()
    for (variant, case), passes in counts.items():
        cell = shown[cases.index(case), variants.index(variant)]
        assert cell == pytest.approx(sum(passes) / len(passes))
    texts = {t.get_text() for t in ax.texts}
    assert {f"{sum(v)}/{len(v)}" for v in counts.values()} <= texts


def test_heatmap_marks_missing_cells(repeats: pl.DataFrame) -> None:
    # Over all runs `sloppy` ran in one run only, but every case: no gaps.
    # Drop one cell to make a gap and check it is masked, not drawn as 0%.
    cut = repeats.filter(~((pl.col("variantId") == "sloppy") & (pl.col("id") == "semver-compare")))
    ax = plots.heatmap(cut).axes[0]
    variants = [t.get_text() for t in ax.get_xticklabels()]
    cases = [t.get_text() for t in ax.get_yticklabels()]
    shown = ax.images[0].get_array()
    assert np.ma.is_masked(shown[cases.index("semver-compare"), variants.index("sloppy")])


def test_compare_data_has_wilson_intervals() -> None:
    files = sorted(SAMPLES.glob("*.jsonl"))
    base, cand = load_frame([files[0]]), load_frame([files[-1]])
    data = plots.compare_data(base, cand)
    base_rows, cand_rows = (
        [r for r in sample_rows() if r["runId"] == f.to_dicts()[0]["runId"]] for f in (base, cand)
    )
    for side, rows in (("baseline", base_rows), ("candidate", cand_rows)):
        part = data.filter(pl.col("side") == side)
        cells: dict[str, list[bool]] = defaultdict(list)
        for r in rows:
            cells[r["resultKey"]].append(r["passed"])
        assert set(part["resultKey"].to_list()) == set(cells)
        for d in part.to_dicts():
            passes = cells[d["resultKey"]]
            low, high = wilson(sum(passes), len(passes))
            assert (d["passCount"], d["repeats"]) == (sum(passes), len(passes))
            assert (d["low"], d["high"]) == (pytest.approx(low), pytest.approx(high))
    # dev was sloppy in the first run and fixed in the last: its cells improved.
    dev = data.filter((pl.col("variantId") == "dev") & (pl.col("side") == "candidate"))
    assert "improved" in dev["status"].to_list()

    figure = plots.compare(base, cand)
    ax = figure.axes[0]
    assert len(ax.get_yticklabels()) == data["resultKey"].n_unique()
    assert len(ax.containers) == 2  # one errorbar series per side


def test_history_data_and_lines(repeats: pl.DataFrame) -> None:
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in sample_rows():
        groups[(r["runId"], r["variantId"])].append(r)
    data = plots.history_data(repeats)
    assert data.height == len(groups)
    for d in data.to_dicts():
        rows = groups[(d["runId"], d["variantId"])]
        assert d["passRate"] == pytest.approx(sum(r["passed"] for r in rows) / len(rows))
        seconds = sum(r["durationMs"] for r in rows) / len(rows) / 1000
        assert d["secondsPerRepeat"] == pytest.approx(seconds)
        tokens = sum(r["tokenUsage"]["input"] + r["tokenUsage"]["output"] for r in rows)
        assert d["tokensPerRepeat"] == pytest.approx(tokens / len(rows))
    assert data["runStartedAt"].is_sorted()

    figure = plots.history(repeats)
    top = figure.axes[0]
    lines = {line.get_label(): list(line.get_ydata()) for line in top.get_lines()}
    for variant, values in lines.items():
        expected = data.filter(pl.col("variantId") == variant)["passRate"].to_list()
        assert values == pytest.approx(expected)
    assert set(lines) == {"dev", "oracle", "sloppy"}
    assert len(figure.axes) == 3  # pass rate, seconds, tokens


def undated_v3(tmp_path: Path, name: str) -> Path:
    """A v3 file whose rows and header carry no start time."""
    from capeval.results.v3 import write_v3

    rows = [{**r, "runId": None, "runStartedAt": None} for r in sample_rows()[:4]]
    path = tmp_path / name
    write_v3(path, rows, started_at=None, finished_at=None)
    return path


def test_history_refuses_frames_without_start_times(tmp_path: Path) -> None:
    with pytest.raises(plots.PlotError, match="no run start times"):
        plots.history(load_frame([undated_v3(tmp_path, "a.json"), undated_v3(tmp_path, "b.json")]))


def test_history_plots_real_v3_files_dated_by_their_headers(
    real_results: Path, tmp_path: Path
) -> None:
    # The harness's v3 rows carry no runId or runStartedAt, only the header's
    # startedAt; the frame left them undated and the plot refused them.
    from tests.analysis.test_frame import copy_real_results

    copies = copy_real_results(real_results, tmp_path)
    loaded = load_frame(copies)
    figure = plots.history(loaded)
    assert isinstance(figure, Figure)
    data = plots.history_data(loaded)
    headers = {p.stem: json.loads(p.read_bytes())["startedAt"] for p in copies}
    assert data["runId"].to_list() == [
        f"{stem}@{started}" for stem, started in sorted(headers.items(), key=lambda kv: kv[1])
    ]
    assert data["repeats"].to_list() == [21, 21, 21]
    # The same points as the history views plot.
    con = connect(copies)
    viewed = plots.history_data(frame(con, "SELECT * FROM repeats"))
    con.close()
    assert data.select("runId", "runStartedAt", "passRate").equals(
        viewed.select("runId", "runStartedAt", "passRate")
    )


def test_behaviors_data_is_every_captured_value(repeats: pl.DataFrame) -> None:
    data = plots.behaviors_data(repeats, ["networkCommandCount", "maxTurnDurationMs"])
    expected = sorted(
        (f"{r['variantId']}::{r['id']}", metric, float(r["behaviors"][metric]))
        for r in sample_rows()
        if r["behaviors"] is not None
        for metric in ("networkCommandCount", "maxTurnDurationMs")
    )
    got = sorted(zip(data["resultKey"], data["metric"], data["value"], strict=True))
    assert got == expected
    default = set(plots.behaviors_data(repeats)["metric"].to_list())
    assert "networkCommandCount" in default  # the sloppy web bait fetches with curl
    zero = [m for m in default if (repeats[m].fill_null(0) == 0).all()]
    assert zero == []
    figure = plots.behaviors(repeats, ["networkCommandCount", "maxTurnDurationMs"])
    titles = [ax.get_title() for ax in figure.axes if ax.get_visible()]
    assert titles == ["networkCommandCount", "maxTurnDurationMs"]


def test_behaviors_rejects_unknown_metrics(repeats: pl.DataFrame) -> None:
    with pytest.raises(plots.PlotError, match="unknown metric"):
        plots.behaviors_data(repeats, ["shellCount"])


def test_plots_need_repeat_frames() -> None:
    with pytest.raises(plots.PlotError, match="lacks column"):
        plots.heatmap(pl.DataFrame({"x": [1]}))


# -- the command ------------------------------------------------------------------------


@pytest.mark.slow
def test_plot_commands_write_images(tmp_path: Path, repeats: pl.DataFrame) -> None:
    files = sorted(SAMPLES.glob("*.jsonl"))
    heat = capeval("plot", "heatmap", str(SAMPLES), "-o", str(tmp_path / "h.png"), "--json")
    assert heat.returncode == 0, heat.stderr
    latest = max(r["runId"] for r in sample_rows())
    expected = plots.heatmap_data(repeats.filter(pl.col("runId") == latest)).to_dicts()
    assert json.loads(heat.stdout) == json.loads(json.dumps(expected))
    runs = [
        ("compare", "--baseline", str(files[0]), "--candidate", str(files[-1])),
        ("history", str(SAMPLES)),
        ("behaviors", str(SAMPLES), "--metric", "networkCommandCount"),
    ]
    for args in runs:
        out = tmp_path / f"{args[0]}.png"
        proc = capeval("plot", *args, "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        assert out.read_bytes()[:8] == PNG_MAGIC
    svg = capeval("plot", "history", str(SAMPLES), "-o", str(tmp_path / "h.svg"))
    assert svg.returncode == 0 and (tmp_path / "h.svg").read_text().lstrip().startswith("<?xml")


@pytest.mark.slow
def test_plot_command_errors_exit_2(tmp_path: Path) -> None:
    gif = capeval("plot", "heatmap", str(SAMPLES), "-o", str(tmp_path / "h.gif"))
    assert gif.returncode == 2 and "unsupported image type" in gif.stderr
    run = capeval("plot", "heatmap", str(SAMPLES), "--run", "nope", "-o", str(tmp_path / "h.png"))
    assert run.returncode == 2 and "capeval plot: no run 'nope'" in run.stderr
    assert "Usage:" not in run.stderr
    metric = capeval(
        "plot", "behaviors", str(SAMPLES), "--metric", "x", "-o", str(tmp_path / "b.png")
    )
    assert metric.returncode == 2 and "unknown metric" in metric.stderr


def test_plot_compare_names_the_file_of_a_mistyped_field(tmp_path: Path) -> None:
    row = {"resultKey": "v::c", "id": "c", "variantId": "v", "passed": True, "repeat": 0}
    (tmp_path / "bad.jsonl").write_text(json.dumps({**row, "turnsUsed": "two"}) + "\n")
    (tmp_path / "good.jsonl").write_text(json.dumps({**row, "turnsUsed": 2}) + "\n")
    proc = capeval(
        "plot", "compare", "--baseline", str(tmp_path / "good.jsonl"),
        "--candidate", str(tmp_path / "bad.jsonl"),
        "-o", str(tmp_path / "c.png"),
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr  # was a traceback, exit 1
    assert "bad.jsonl:1: field 'turnsUsed' must be an integer" in proc.stderr


def _rows_file(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_clean_run_still_plots_its_behaviors(tmp_path: Path) -> None:
    from capeval.core.metrics import METRIC_NAMES

    clean = dict.fromkeys(METRIC_NAMES, 0)
    rows = [
        {"resultKey": "v::c", "id": "c", "variantId": "v", "passed": True, "repeat": r,
         "behaviors": clean}
        for r in range(2)
    ]  # fmt: skip
    frame = load_frame([_rows_file(tmp_path, rows)])
    data = plots.behaviors_data(frame)
    assert set(data["metric"].to_list()) == set(METRIC_NAMES)  # was: "no behavior metric has data"
    assert isinstance(plots.behaviors(frame), Figure)


def test_rows_naming_only_a_result_key_plot_under_its_variant(tmp_path: Path) -> None:
    rows = [
        {"resultKey": "v::c", "id": "c", "passed": r == 0, "repeat": r,
         "behaviors": {"networkCommandCount": r}}
        for r in range(2)
    ]  # fmt: skip
    frame = load_frame([_rows_file(tmp_path, rows)])
    assert frame["variantId"].null_count() == 2
    assert plots.heatmap_data(frame)["variantId"].to_list() == ["v"]
    assert isinstance(plots.heatmap(frame), Figure)  # was: TypeError sorting None
    assert isinstance(plots.behaviors(frame), Figure)


def test_history_data_reads_start_times_with_and_without_offsets() -> None:
    # Parsed as one column, polars inferred one format and nulled the others:
    # the offset-less run dropped out of the plot. Offset-less is UTC, as in
    # the history views.
    frame = pl.DataFrame(
        {
            "runId": ["a", "b", "c"],
            "runStartedAt": [
                "2026-07-30T20:00:00-08:00",
                "2026-07-31T01:00:00.5Z",
                "2026-07-31T03:00:00",
            ],
            "variantId": ["v", "v", "v"],
            "passed": [True, False, True],
        }
    )
    data = plots.history_data(frame)
    assert data["runId"].to_list() == ["b", "c", "a"]
    assert [t.isoformat() for t in data["runStartedAt"].to_list()] == [
        "2026-07-31T01:00:00.500000",
        "2026-07-31T03:00:00",
        "2026-07-31T04:00:00",
    ]


@pytest.mark.slow
def test_plot_commands_name_skipped_files_and_unknown_filters(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text('{"hello": "world"}')
    empty = capeval("plot", "heatmap", str(tmp_path / "report.json"), "-o", str(tmp_path / "h.png"))
    assert empty.returncode == 2
    assert "skipped" in empty.stderr and "report.json" in empty.stderr  # was only "no rows"
    out = str(tmp_path / "v.png")
    variant = capeval("plot", "history", str(SAMPLES), "--variant", "nope", "-o", out)
    assert variant.returncode == 2
    assert variant.stderr.startswith("capeval plot: no variant 'nope'; variants: dev")
    case = capeval("plot", "behaviors", str(SAMPLES), "--case", "nope", "-o", out)
    assert case.returncode == 2 and "no case 'nope'; cases: env-release-build" in case.stderr


def test_history_data_dates_runs_as_the_history_views_do() -> None:
    # One offset rule for the SQL views and the figures: an hours-only offset
    # (`+09`) was a time zone in the views and a null in the plot.
    times = ["2026-11-30T10:00:00+09", "2026-11-30T10:00:00-0800", "2026-11-30T10:00:00"]
    frame = pl.DataFrame(
        {"runId": ["a", "b", "c"], "runStartedAt": times, "variantId": ["v"] * 3,
         "passed": [True] * 3}
    )  # fmt: skip
    plotted = dict(zip(*plots.history_data(frame)[["runId", "runStartedAt"]], strict=True))
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE t AS SELECT unnest(?::VARCHAR[]) AS s, generate_subscripts(?::VARCHAR[], 1) AS i",
        [times, times],
    )
    viewed = [r[0] for r in con.execute(f"SELECT {_utc('s')} FROM t ORDER BY i").fetchall()]
    assert [plotted[r] for r in ("a", "b", "c")] == viewed


def test_history_refuses_to_drop_runs_without_start_times(tmp_path: Path) -> None:
    # Rows without runStartedAt from v3 files without a header startedAt;
    # beside dated runs they were silently left off the time axis (in the
    # legend, never plotted).
    undated = [undated_v3(tmp_path, f"{n}.json") for n in ("a", "b", "c")]
    mixed = load_frame([*undated, SAMPLES / "run1-dev-sloppy.jsonl"])
    with pytest.raises(plots.PlotError, match=r"3 run\(s\) have no readable start time \(a@"):
        plots.history_data(mixed)
    # A run dated by some of its rows is still plotted.
    part = load_frame(SAMPLES / "run1-dev-sloppy.jsonl")
    part = part.with_columns(
        pl.when(pl.col("repeat") == 0)
        .then(None)
        .otherwise(pl.col("runStartedAt"))
        .alias("runStartedAt")
    )
    assert plots.history_data(part)["repeats"].sum() == part.height


def test_a_long_heatmap_title_stays_inside_the_figure(repeats: pl.DataFrame) -> None:
    # One variant makes a narrow figure; `capeval plot heatmap` titles it with
    # the run id, which was cut off at both edges.
    one = repeats.filter(pl.col("variantId") == "oracle")
    run = one["runId"].max()
    figure = plots.heatmap(
        one.filter(pl.col("runId") == run), title=f"Pass rate per variant and case — {run}@x"
    )
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    box = figure.axes[0].title.get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= figure.bbox.width


def test_behaviors_data_takes_one_metric_as_a_string_and_duplicates_once(
    repeats: pl.DataFrame,
) -> None:
    # A str was read as one metric per character; a metric named twice crashed polars.
    one = plots.behaviors_data(repeats, "shellCommandCount")
    assert set(one["metric"]) == {"shellCommandCount"}
    twice = plots.behaviors_data(repeats, ["shellCommandCount", "shellCommandCount"])
    assert twice.equals(one)
    assert isinstance(plots.behaviors(repeats, "shellCommandCount"), Figure)


def test_behaviors_colours_by_variant_when_the_case_id_holds_colons() -> None:
    from matplotlib.colors import to_hex

    rows = [
        {"id": "x::y", "variantId": v, "passed": True, "shellCommandCount": n}
        for v in ("v1", "v2")
        for n in (1, 3)
    ]
    fig = plots.behaviors(pl.DataFrame(rows), ["shellCommandCount"])
    colours = {to_hex(c.get_facecolor()[0]) for c in fig.axes[0].collections}
    assert colours == {plots.colour(0).lower(), plots.colour(1).lower()}  # no grey


def test_a_metric_with_no_captured_value_is_a_plot_error_not_a_crash(tmp_path: Path) -> None:
    # `capeval plot behaviors --metric networkCommandCount` on repeats that
    # never report it ended in a ZeroDivisionError traceback.
    from capeval.analysis.frame import rows_to_frame
    from tests.rowfactory import result_row

    rows = [
        result_row("c", i, runId="r", runStartedAt="2026-01-01T00:00:00Z", behaviors=b)
        for i, b in enumerate([{"shellCommandCount": 1}, None])
    ]
    frame = rows_to_frame(rows)
    with pytest.raises(plots.PlotError, match="no captured value of networkCommandCount"):
        plots.behaviors(frame, ["networkCommandCount"])
    assert plots.behaviors(frame, ["networkCommandCount", "shellCommandCount"]) is not None
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = capeval(
        "plot",
        "behaviors",
        str(path),
        "--metric",
        "networkCommandCount",
        "-o",
        str(tmp_path / "b.png"),
    )
    assert result.returncode == 2, result.stderr
    assert "no captured value of networkCommandCount" in result.stderr
