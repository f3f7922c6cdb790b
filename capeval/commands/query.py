"""`capeval query NAME|SQL`: a named query (`analysis/NAME.sql`) or raw SQL over history.

A thin wrapper over `capeval.analysis.history.connect` and
`capeval.analysis.queries.run_query`. The views are `repeats`, `cells`,
`cell_metrics`, `runs` (and `metric_directions`). Sources: `--from PATH`
(files or folders, scanned), `--db FILE` (a stored history; with `--from`,
the paths are ingested into it first), else the workspace's results folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import click


def _fail(message: str) -> None:
    click.echo(f"capeval query: {message}", err=True)
    click.get_current_context().exit(2)


@click.command()
@click.argument("query_text", metavar="NAME|SQL", required=False)
@click.option(
    "--from",
    "sources",
    multiple=True,
    type=click.Path(path_type=Path, exists=True),
    help="Result file or folder to scan (repeatable; default: the workspace's results).",
)
@click.option(
    "--db",
    type=click.Path(path_type=Path, dir_okay=False),
    help="History database written by `capeval history --db`.",
)
@click.option(
    "--root",
    type=click.Path(path_type=Path, file_okay=False),
    help="Workspace root (default: nearest ancestor holding evals/capability/cases).",
)
@click.option("--list", "list_only", is_flag=True, help="List the named queries and exit.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as a JSON array of objects.")
def query(
    query_text: str | None,
    sources: tuple[Path, ...],
    db: Path | None,
    root: Path | None,
    list_only: bool,
    as_json: bool,
) -> None:
    """Run a named query or SQL over the history views; print a table or JSON."""
    from capeval.analysis.queries import QueryNotFound, format_table, list_queries, resolve

    if list_only or query_text is None:
        queries = list_queries(root)
        if as_json:
            payload = [{"name": q.name, "path": str(q.path), "doc": q.doc} for q in queries]
            click.echo(json.dumps(payload, indent=2))
        else:
            width = max((len(q.name) for q in queries), default=0)
            for q in queries:
                click.echo(f"{q.name.ljust(width)}  {q.summary}")
        if query_text is None and not list_only:
            click.echo("\nusage: capeval query NAME|SQL [--from PATH...] [--db FILE]", err=True)
        return

    from capeval.analysis.history import default_paths, ingest, open_db, records
    from capeval.problems import ProblemsError
    from capeval.results.errors import ResultFileError

    try:
        sql, _ = resolve(query_text, root)
    except QueryNotFound as exc:
        _fail(str(exc))
        return
    try:
        if sources:
            paths: list[Path] | None = list(sources)
        elif db is None:
            paths = default_paths(root)
        else:
            paths = None
        con = open_db(db, read_only=paths is None)
        if paths is not None:
            for warning in ingest(con, paths).warnings:
                click.echo(f"warning: {warning}", err=True)
        rows = records(con, sql)
    except ProblemsError as exc:
        _fail("\n".join(map(str, exc.problems)) + "\n(pass --from PATH or --db FILE)")
        return
    except ResultFileError as exc:
        _fail(str(exc))
        return
    except Exception as exc:
        import duckdb

        if not isinstance(exc, duckdb.Error):
            raise
        _fail(f"{query_text if sql is not query_text else 'SQL'}: {exc}")
        return
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        click.echo(format_table(rows))
