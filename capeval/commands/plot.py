"""`capeval plot heatmap|compare|history|behaviors ... -o FILE.png|.svg|.pdf`.

Thin wrappers over `capeval.analysis.plots` (each plot function takes a
frame and returns a matplotlib Figure, which a notebook can show directly).
Result sources are files or folders (scanned like `capeval history`) or a
history database (`--db`). `--json` prints the data behind the plot instead
of, or as well as, drawing it, so the numbers can be checked.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from capeval.cli import InterruptibleGroup
from capeval.commands.common import (
    baselines_or_configured,
    cannot_write,
    fail,
    history_connection,
    problems_text,
    root_option,
    say_passed_over,
)

FORMATS = (".png", ".svg", ".pdf")


def _image_path(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    if value is not None and value.suffix.lower() not in FORMATS:
        raise click.BadParameter(
            f"{value}: unsupported image type {value.suffix!r}; use {', '.join(FORMATS)}"
        )
    return value


def _drawing(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options every plot ends with: title, image file, JSON of the plotted data."""
    f = click.option(
        "--json", "as_json", is_flag=True, help="Also print the plotted data as JSON."
    )(f)
    f = click.option(
        "-o",
        "--output",
        type=click.Path(path_type=Path, dir_okay=False),
        required=True,
        callback=_image_path,
        help="Image to write: .png, .svg or .pdf.",
    )(f)
    return click.option("--title", help="Figure title.")(f)


_run_option = click.option("--run", help="Run id to plot (default: the latest run found).")
_variant_option = click.option(
    "--variant", "variants", multiple=True, help="Only this variant (repeatable)."
)


def _sources(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "--db",
        type=click.Path(path_type=Path, dir_okay=False),
        help="History database (`capeval history --db`).",
    )(f)
    f = root_option(f)
    return click.argument("paths", nargs=-1, type=click.Path(path_type=Path, exists=True))(f)


def _repeats(
    paths: tuple[Path, ...], db: Path | None, root: Path | None, run: str | None, latest: bool
) -> tuple[Any, str | None]:
    """(one-row-per-repeat frame, the run it was narrowed to or None)."""
    from capeval.analysis.history import frame

    con, report = history_connection(paths, db, root)
    say_passed_over(report)
    chosen = run
    if chosen is None and latest:
        found = con.execute(
            "SELECT runId FROM runs ORDER BY startedAt DESC NULLS LAST, runId DESC LIMIT 1"
        ).fetchone()
        chosen = found[0] if found else None
    if chosen is None:
        return frame(con, "SELECT * FROM repeats"), None
    data = frame(con, "SELECT * FROM repeats WHERE runId = ?", [chosen])
    if data.height == 0:
        known = [r[0] for r in con.execute("SELECT runId FROM runs ORDER BY startedAt").fetchall()]
        fail("plot", f"no run {chosen!r}; runs: {', '.join(known) or 'none'}")
    return data, chosen


def _only(repeats: Any, column: str, wanted: tuple[str, ...], what: str) -> Any:
    """Rows whose `column` is one of `wanted`; an unknown value is a usage error.

    The error names the values there are; otherwise a mistyped `--variant` or
    `--case` would end as "no rows to plot". Said as every other bad input
    is (`capeval plot: ...`, exit 2), not as click's usage block.
    """
    if not wanted:
        return repeats
    known = sorted({v for v in repeats[column].to_list() if v is not None})
    unknown = [w for w in wanted if w not in known]
    if unknown:
        fail(
            "plot",
            f"no {what} {', '.join(map(repr, unknown))}; {what}s: {', '.join(known) or 'none'}",
        )
    return repeats.filter(repeats[column].is_in(list(wanted)))


def _save(figure: Any, output: Path, data: Any, as_json: bool) -> None:
    from capeval.results.output import write_output_with

    try:
        fmt = output.suffix.lstrip(".").lower()
        write_output_with(output, lambda handle: figure.savefig(handle, format=fmt, dpi=150))
    except OSError as exc:
        # A file where a folder should be, no permission: bad usage, not a traceback.
        fail("plot", f"{cannot_write(output, exc)}; pass -o with a writable path")
    if as_json:
        from capeval.analysis.history import _json_value

        click.echo(json.dumps([_json_value(r) for r in data.iter_rows(named=True)], indent=2))
    else:
        click.echo(f"wrote {output}", err=True)


def _guard(action: Callable[[], None]) -> None:
    """Turn the errors users cause into exit 2 with a message naming the problem."""
    import duckdb

    from capeval.analysis.plots import PlotError
    from capeval.core.problems import ProblemsError
    from capeval.results.columns import ColumnTypeError
    from capeval.results.errors import ResultFileError

    try:
        action()
    except (PlotError, ResultFileError, ColumnTypeError, duckdb.Error) as exc:
        fail("plot", str(exc))
    except ProblemsError as exc:
        fail("plot", problems_text(exc.problems) + "\n(pass result files or folders)")


@click.group(cls=InterruptibleGroup)
def plot() -> None:
    """Draw result plots (headless; PNG, SVG or PDF)."""


@plot.command()
@_sources
@_run_option
@_drawing
def heatmap(
    paths: tuple[Path, ...],
    db: Path | None,
    root: Path | None,
    run: str | None,
    title: str | None,
    output: Path,
    as_json: bool,
) -> None:
    """Pass rate per variant x case, for one run."""

    def action() -> None:
        from capeval.analysis import plots

        repeats, chosen = _repeats(paths, db, root, run, latest=True)
        figure = plots.heatmap(repeats, title=title or f"Pass rate per variant and case — {chosen}")
        _save(figure, output, plots.heatmap_data(repeats), as_json)

    _guard(action)


@plot.command()
@click.option(
    "--baseline",
    "baselines",
    multiple=True,
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="Baseline result file (JSONL or v3 JSON); repeat to pool several. "
    "Default: the configuration's baseline.",
)
@click.option(
    "--candidate",
    "candidates",
    multiple=True,
    required=True,
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="Candidate result file (JSONL or v3 JSON); repeat to pool several.",
)
@root_option
@_drawing
def compare(
    baselines: tuple[Path, ...],
    candidates: tuple[Path, ...],
    root: Path | None,
    title: str | None,
    output: Path,
    as_json: bool,
) -> None:
    """Candidate vs baseline pass rate per cell, with 95% Wilson intervals.

    Takes the files as `capeval compare` does: --baseline (default: the
    configured baseline) and --candidate, each repeatable to pool runs.
    """
    found = baselines_or_configured(baselines, root, command="plot compare")

    def action() -> None:
        from capeval.analysis import plots
        from capeval.analysis.frame import load_frame

        base, cand = load_frame(found), load_frame(list(candidates))
        figure = plots.compare(base, cand, title=title)
        _save(figure, output, plots.compare_data(base, cand), as_json)

    _guard(action)


@plot.command()
@_sources
@_variant_option
@_drawing
def history(
    paths: tuple[Path, ...],
    db: Path | None,
    root: Path | None,
    variants: tuple[str, ...],
    title: str | None,
    output: Path,
    as_json: bool,
) -> None:
    """Pass rate and cost per repeat of each variant across runs."""

    def action() -> None:
        from capeval.analysis import plots

        repeats, _ = _repeats(paths, db, root, None, latest=False)
        repeats = _only(repeats, "variantId", variants, "variant")
        figure = plots.history(repeats, title=title)
        _save(figure, output, plots.history_data(repeats), as_json)

    _guard(action)


@plot.command()
@_sources
@_run_option
@click.option("--metric", "metrics", multiple=True, help="Metric to show (repeatable).")
@click.option("--case", "cases", multiple=True, help="Only this case (repeatable).")
@_variant_option
@_drawing
def behaviors(
    paths: tuple[Path, ...],
    db: Path | None,
    root: Path | None,
    run: str | None,
    metrics: tuple[str, ...],
    cases: tuple[str, ...],
    variants: tuple[str, ...],
    title: str | None,
    output: Path,
    as_json: bool,
) -> None:
    """Behavior-metric distributions per cell, for one run."""

    def action() -> None:
        from capeval.analysis import plots

        repeats, chosen = _repeats(paths, db, root, run, latest=True)
        repeats = _only(repeats, "id", cases, "case")
        repeats = _only(repeats, "variantId", variants, "variant")
        chosen_metrics = list(metrics) or None
        figure = plots.behaviors(
            repeats, chosen_metrics, title=title or f"Behavior metrics per cell — {chosen}"
        )
        _save(figure, output, plots.behaviors_data(repeats, chosen_metrics), as_json)

    _guard(action)
