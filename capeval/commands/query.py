"""`capeval query NAME|SQL`: a named query (`analysis/NAME.sql`) or raw SQL over history.

A thin wrapper over `capeval.analysis.history.connect` and
`capeval.analysis.queries.run_query`. The views are `repeats`, `cells`,
`cell_metrics`, `runs` (and `metric_directions`). Sources: `--from PATH`
(files or folders, scanned), `--db FILE` (a stored history; with `--from`,
the paths are ingested into it first), else the workspace's results folder.
A stored history is queried read-only: a statement that would change it is
refused (exit 2).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from capeval.commands.common import (
    fail,
    history_connection,
    problems_text,
    root_option,
    say_passed_over,
    shown_path,
)


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
@root_option
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
    from capeval.analysis.queries import (
        QueryFileError,
        QueryNotFound,
        format_table,
        list_queries,
        resolve,
    )

    if list_only:
        try:
            queries = list_queries(root)
        except QueryFileError as exc:
            fail("query", str(exc))
        if as_json:
            payload = [{"name": q.name, "path": str(q.path), "doc": q.doc} for q in queries]
            click.echo(json.dumps(payload, indent=2))
        else:
            width = max((len(q.name) for q in queries), default=0)
            for q in queries:
                click.echo(f"{q.name.ljust(width)}  {q.summary}")
        return

    if query_text is None:
        # A usage error (exit 2), not the list on stdout with exit 0: under
        # --json a script whose query variable came out empty read the list
        # of named queries as if it were the answer.
        try:
            names = ", ".join(q.name for q in list_queries(root))
        except QueryFileError:
            names = "see capeval query --list"
        raise click.UsageError(
            f"missing NAME|SQL: pass a named query ({names}) or SQL text; "
            "capeval query --list describes the named queries"
        )

    from capeval.analysis.history import read_only_queries, records
    from capeval.core.problems import ProblemsError
    from capeval.results.errors import ResultFileError

    try:
        sql, named = resolve(query_text, root)
    except (QueryNotFound, QueryFileError) as exc:
        fail("query", str(exc))
    if _no_statement(sql):
        # DuckDB runs nothing and returns no cursor at all: an empty `.sql`
        # file or a stray `''` in a script must not end in a traceback.
        fail(
            "query",
            f"{shown_path(named.path) if named is not None else repr(query_text)} holds no SQL "
            "statement; "
            "pass SQL text or a query name "
            "(capeval query --list names them)",
        )
    try:
        con, report = history_connection(sources, db, root)
        say_passed_over(report)
        _workspace_baits(con, root, sources)
        read_only_queries(con)
        rows = records(con, sql)
    except ProblemsError as exc:
        fail("query", problems_text(exc.problems) + "\n(pass --from PATH or --db FILE)")
    except ResultFileError as exc:
        fail("query", str(exc))
    except Exception as exc:
        import duckdb

        if not isinstance(exc, duckdb.Error):
            raise
        hint = ""
        if db is not None and "read-only mode" in str(exc):
            # The stored history is opened read-only (`history_connection`).
            fail(
                "query",
                f"{query_text if sql is not query_text else 'SQL'}: a query only reads the "
                f"history, and {shown_path(db)} is opened read-only "
                f"({str(exc).splitlines()[0]}); `capeval history PATH --db {shown_path(db)}` "
                "is what adds runs to it",
            )
        if isinstance(exc, duckdb.PermissionException):
            fail(
                "query",
                f"{query_text if sql is not query_text else 'SQL'}: a query only reads the "
                "history views; it reaches no file, network or extension (COPY ... TO, "
                "read_csv, ATTACH and INSTALL are refused): "
                f"{str(exc).splitlines()[0]}",
            )
        if isinstance(exc, duckdb.CatalogException):
            # DuckDB's own suggestion may name its internal tables instead.
            from capeval.analysis.history import VIEWS

            hint = f"\n(the views are {', '.join(VIEWS)}; capeval query --list names the queries)"
        fail("query", f"{query_text if sql is not query_text else 'SQL'}: {exc}{hint}")
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        click.echo(format_table(rows))


def _no_statement(sql: str) -> bool:
    """True when `sql` is empty, blank, only comments or only semicolons."""
    import duckdb

    try:
        return not duckdb.extract_statements(sql)
    except duckdb.Error:
        return False  # a syntax error: reported when the query runs, with the views


def _workspace_baits(con: Any, root: Path | None, sources: Sequence[Path]) -> None:
    """Fill `workspace_baits` from the workspace the gate would read baits from: `--root`,
    else the nearest above the current directory, else the nearest above a source."""
    from capeval.analysis.gatecheck import workspace_baits
    from capeval.analysis.history import declare_workspace_baits

    warnings: list[str] = []
    found = workspace_baits(root, root is not None, warnings, beside=list(sources))
    declare_workspace_baits(con, {k: (d.metric, d.threshold) for k, d in found.items()})
    for warning in warnings:
        click.echo(f"capeval query: warning: {warning}", err=True)
