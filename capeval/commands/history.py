"""`capeval history [PATH...] [--db FILE]`: one line per run found under PATH.

A thin wrapper over `capeval.analysis.history` (`open_db`, `ingest`, `runs`),
which a notebook can call directly. PATH defaults to the workspace's results
folder. With `--db` the runs are ingested into a persistent DuckDB file
(incrementally: unchanged files are skipped, grown streams add only their
new rows), so later `capeval query --db FILE` calls need not rescan.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from capeval.commands.common import fail, problems_text, root_option, say_passed_over

# Columns of the human table, from the `runs` view.
TABLE_COLUMNS: tuple[str, ...] = (
    "runId",
    "startedAt",
    "variants",
    "cases",
    "repeats",
    "passRate",
    "errors",
    "attempts",
    "turnsUsed",
    "tokenInput",
    "tokenOutput",
    "wall",
    "capevalVersion",
    "gitCommit",
)


def _wall(ms: float | None) -> str | None:
    if ms is None:
        return None
    seconds = ms / 1000
    if seconds < 120:
        return f"{seconds:.1f}s"
    return f"{seconds / 60:.1f}m"


def table_records(runs: list[dict]) -> list[dict]:
    """The `runs` records shaped for the human table (short commit, rounded rates)."""
    out = []
    for run in runs:
        row = {c: run.get(c) for c in TABLE_COLUMNS}
        row["wall"] = _wall(run.get("wallMs"))
        row["passRate"] = None if run.get("passRate") is None else f"{run['passRate']:.0%}"
        if isinstance(row["gitCommit"], str):
            row["gitCommit"] = row["gitCommit"][:10] + ("+dirty" if run.get("gitDirty") else "")
        if isinstance(row["startedAt"], str):
            row["startedAt"] = row["startedAt"][:19].replace("T", " ")
        out.append(row)
    return out


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path, exists=True))
@click.option(
    "--db",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Persistent DuckDB file to ingest into (created if missing; incremental).",
)
@root_option
@click.option("--json", "as_json", is_flag=True, help='Print {"runs": [...], "ingest": {...}}.')
def history(paths: tuple[Path, ...], db: Path | None, root: Path | None, as_json: bool) -> None:
    """List the runs found in result files (JSON Lines and v3 JSON, recursively)."""
    from capeval.analysis.history import default_paths, ingest, open_db, runs
    from capeval.core.problems import ProblemsError
    from capeval.results.errors import ResultFileError

    try:
        sources = list(paths) if paths else default_paths(root)
    except (ProblemsError, click.ClickException, ValueError) as exc:
        problems = getattr(exc, "problems", None)
        message = problems_text(problems) if problems else str(exc)
        fail("history", f"{message}\n(pass result folders or files)")
    try:
        con = open_db(db)
        report = ingest(con, sources)
        found = runs(con)
    except ResultFileError as exc:
        fail("history", str(exc))
    except Exception as exc:
        import duckdb

        if not isinstance(exc, duckdb.Error):
            raise
        # A locked or corrupt database file.
        fail("history", f"{db or 'database'}: {exc}")
    if as_json:
        click.echo(json.dumps({"runs": found, "ingest": report.to_json()}, indent=2))
        return
    from capeval.analysis.queries import format_table

    say_passed_over(report)
    if db is not None:
        click.echo(
            f"{db}: {report.rows_added} rows added ({report.files_new} new, "
            f"{report.files_grown} grown, {report.files_replaced} rewritten, "
            f"{report.files_unchanged} unchanged files)",
            err=True,
        )
        if report.files_gone:
            click.echo(
                f"{db}: kept the rows of {len(report.files_gone)} file(s) no longer on disk "
                f"(e.g. {report.files_gone[0]}); the database is the history",
                err=True,
            )
    if not found:
        click.echo("no runs found", err=True)
        return
    click.echo(format_table(table_records(found), TABLE_COLUMNS))
