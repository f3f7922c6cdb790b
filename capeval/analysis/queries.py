"""Named queries: the `.sql` files under `analysis/`, looked up by name.

A question asked of history more than once deserves a name and a comment
saying what it answers, so it lives as a documented file in the repository
instead of in someone's shell history. `capeval query NAME` runs one;
anything that is not a name is run as SQL as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb
    import polars as pl

QUERY_DIR = "analysis"
BUILTIN_QUERY_DIR = "builtin_queries"  # where a wheel carries analysis/ (pyproject.toml)
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class QueryNotFound(LookupError):
    """A name that is no named query; the message lists the ones there are."""


class QueryFileError(ValueError):
    """A `.sql` file of a query folder that cannot be read as a query."""


@dataclass(frozen=True)
class NamedQuery:
    name: str
    path: Path
    sql: str

    @property
    def doc(self) -> str:
        """The leading `--` comment block, without the dashes."""
        lines = []
        for line in self.sql.splitlines():
            stripped = line.strip()
            if not stripped.startswith("--"):
                break
            lines.append(stripped[2:].removeprefix(" "))
        return "\n".join(lines).strip()

    @property
    def summary(self) -> str:
        """The first line of the comment header."""
        return self.doc.split("\n", 1)[0]


def query_dirs(root: Path | None = None) -> list[Path]:
    """Where named queries live: the workspace's `analysis/`, then capeval's own.

    A project may add or override queries in its own `analysis/` folder; the
    ones shipped beside the capeval sources stay available everywhere.
    """
    dirs: list[Path] = []
    if root is None:
        from capeval.workspace import find_root

        try:
            root = find_root()
        except Exception:  # outside a workspace: only the built-in queries
            root = None
    if root is not None:
        dirs.append(Path(root) / QUERY_DIR)
    for builtin in _builtin_dirs():
        if builtin.is_dir() and builtin.resolve() not in [d.resolve() for d in dirs]:
            dirs.append(builtin)
            break
    return [d for d in dirs if d.is_dir()]


def _builtin_dirs() -> list[Path]:
    """capeval's own queries: inside an installed wheel, else the checkout's analysis/."""
    package = Path(__file__).resolve().parents[1]
    return [package / BUILTIN_QUERY_DIR, package.parent / QUERY_DIR]


def list_queries(root: Path | None = None) -> list[NamedQuery]:
    """Every named query, by name; the first folder of `query_dirs` wins a clash."""
    found: dict[str, NamedQuery] = {}
    for folder in query_dirs(root):
        for path in sorted(folder.glob("*.sql")):
            if path.stem not in found and path.is_file():
                found[path.stem] = NamedQuery(path.stem, path, _read_sql(path))
    return [found[name] for name in sorted(found)]


def _read_sql(path: Path) -> str:
    # Every query is read to list or find one: a file saved in another
    # encoding ended every `capeval query NAME` in a traceback.
    try:
        return path.read_text("utf-8")
    except UnicodeDecodeError as exc:
        raise QueryFileError(
            f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8"
        ) from None
    except OSError as exc:
        raise QueryFileError(f"{path}: cannot read: {exc.strerror or exc}") from None


def find_query(name: str, root: Path | None = None) -> NamedQuery:
    """The named query `name` (with or without `.sql`)."""
    name = name.removesuffix(".sql")
    queries = list_queries(root)
    for query in queries:
        if query.name == name:
            return query
    names = ", ".join(q.name for q in queries) or "none found"
    raise QueryNotFound(
        f"no named query {name!r} (named queries: {names}); pass SQL text to run it as it is"
    )


def is_name(text: str) -> bool:
    """A single word such as `flaky_cells` is a name; anything with spaces is SQL."""
    return bool(_NAME.match(text.strip()))


def resolve(text: str, root: Path | None = None) -> tuple[str, NamedQuery | None]:
    """(SQL to run, the named query it came from or None for raw SQL)."""
    if is_name(text):
        query = find_query(text, root)
        return query.sql, query
    return text, None


def run_query(
    con: duckdb.DuckDBPyConnection, text: str, root: Path | None = None
) -> list[dict[str, Any]]:
    """Run a named query or SQL over a history connection; JSON-ready records."""
    from capeval.analysis.history import records

    sql, _ = resolve(text, root)
    return records(con, sql)


def query_frame(
    con: duckdb.DuckDBPyConnection, text: str, root: Path | None = None
) -> pl.DataFrame:
    """Like `run_query`, as a polars DataFrame (for notebooks)."""
    from capeval.analysis.history import frame

    sql, _ = resolve(text, root)
    return frame(con, sql)


def format_value(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"
    if isinstance(value, list | tuple):
        return ",".join(format_value(v) for v in value)
    return str(value)


def format_table(records: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    """A plain fixed-width table (no box drawing, no truncation), easy to grep and diff."""
    if columns is None:
        columns = list(records[0]) if records else []
    if not records:
        return "(no rows)" if not columns else "  ".join(columns) + "\n(no rows)"
    body = [[format_value(r.get(c)) for c in columns] for r in records]
    widths = [max(len(c), *(len(row[i]) for row in body)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += [
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in body
    ]
    return "\n".join(lines)
