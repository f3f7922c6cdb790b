"""Options and error handling several commands share, so their wording never drifts.

Imported at the top of command modules, so it stays light: click and the
standard library only; anything heavier is imported inside the function that
needs it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    import duckdb

    from capeval.analysis.history import IngestReport

EXIT_BAD_INPUT = 2

# Set by `capeval.cli.entry` (the console script, `python -m capeval.cli`);
# never under click's CliRunner, whose test process must live on.
PROMPT_EXIT = False

root_option = click.option(
    "--root",
    type=click.Path(path_type=Path, file_okay=False),
    help="Workspace root (default: nearest ancestor holding evals/capability/cases).",
)
config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Configuration file (default: capeval.toml, else [tool.capeval] in pyproject.toml).",
)


class Seconds(click.ParamType):
    """A timeout in seconds: finite, > 0 and at most the configuration's 30 days.

    `nan` made every wait end at once (a check reported as timed out) and
    `inf` or 1e12 crashed the wait with an OverflowError traceback.
    """

    name = "seconds"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        from capeval.config import SECONDS_RULE, is_timeout

        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not is_timeout(number):
            self.fail(f"{value}: expected {SECONDS_RULE}", param, ctx)
        return number


SECONDS = Seconds()


def shown_path(path: Path) -> Path:
    """A path as the user would type it: relative when it is under the working directory."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve())
    except (OSError, ValueError):
        return Path(path)


def cannot_write(path: Path, exc: OSError) -> str:
    """`cannot write PATH: why`, naming the part of PATH at fault when it is another one.

    mkdir's own words for a file where a folder should be ("File exists",
    "Not a directory") do not say which part of the path is the file.
    """
    from capeval.results.output import OutputRefused

    culprit = exc.filename if exc.filename not in (None, str(path)) else None
    if isinstance(exc, OutputRefused):
        reason = exc.reason
    elif isinstance(exc, FileExistsError) and culprit is not None:
        reason = f"{shown_path(Path(culprit))} is a file, not a folder"
    elif isinstance(exc, NotADirectoryError | FileExistsError):
        reason = "a part of the path is a file, not a folder"
    else:
        reason = (exc.strerror or str(exc)) + (f" ({culprit})" if culprit is not None else "")
    return f"cannot write {shown_path(path)}: {reason}"


def config_home(source: Path | None, root: Path) -> str:
    """Where a setting goes: the configuration file in use, else capeval.toml.

    A workspace configured in pyproject.toml was told to add the baseline to
    capeval.toml, a file that, once created, replaces its whole configuration.
    """
    if source is None:
        return "capeval.toml"
    real, real_root = source.resolve(), root.resolve()
    name = real.relative_to(real_root).as_posix() if real.is_relative_to(real_root) else real
    return f"[tool.capeval] in {name}" if source.name == "pyproject.toml" else str(name)


def fail(command: str, message: str, *, as_json: bool = False) -> NoReturn:
    """Report bad input on stderr as `capeval COMMAND: message` and exit 2.

    With `as_json` (a command given --json) stdout also gets the object a
    refused comparison prints, `{"errors": [message], "exitCode": 2}`: a
    pipe into `jq` must read JSON whatever went wrong.
    """
    if as_json:
        click.echo(json.dumps({"errors": [message], "exitCode": EXIT_BAD_INPUT}, indent=2))
    click.echo(f"capeval {command}: {message}", err=True)
    click.get_current_context().exit(EXIT_BAD_INPUT)


def exit_with(code: int) -> NoReturn:
    """Exit with `code`; in a real process, without tearing the interpreter down.

    The gate runs in CI on every change, and after reading large files the
    shutdown of Python and DuckDB (their caches, freed buffers) costs tens of
    milliseconds of nothing. Only commands that hold no open file or database
    use this; output is flushed first.
    """
    if PROMPT_EXIT:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
    click.get_current_context().exit(code)


def problems_text(problems: Sequence[Any]) -> str:
    """One problem a line (each names its file, field and fix)."""
    return "\n".join(map(str, problems))


def history_connection(
    paths: Sequence[Path], db: Path | None, root: Path | None
) -> tuple[duckdb.DuckDBPyConnection, IngestReport | None]:
    """The history views over PATHS, else over DB as stored, else over the workspace's results.

    Paths are ingested (checked up front, into memory or into DB). A stored
    DB is always handed over read-only, so a query never changes it: given
    PATHS too, they are ingested on a connection of their own, closed before
    the DB is opened again to read. (Handed over writable, `DELETE FROM
    result_rows` emptied the history for good: the files, unchanged, were
    never read again.)
    """
    from capeval.analysis.history import default_paths, ingest, open_db

    if paths:
        sources: list[Path] | None = list(paths)
    elif db is None:
        sources = default_paths(root)
    else:
        sources = None
    if db is None:
        con = open_db(None)
        return con, ingest(con, sources) if sources is not None else None
    report = None
    if sources is not None:
        writer = open_db(db)
        try:
            report = ingest(writer, sources)
        finally:
            writer.close()
    return open_db(db, read_only=True), report


def say_passed_over(report: IngestReport | None) -> None:
    """On stderr, the ingest's warnings and the files it skipped, as `capeval history` says them.

    Every command over the history views says them: an empty answer or "no
    rows to plot" must not hide that a file given was no result file at all.
    """
    if report is None:
        return
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    for path, reason in report.skipped:
        click.echo(f"skipped {shown_path(Path(path))}: {reason}", err=True)


def baselines_or_configured(
    baselines: Sequence[Path],
    root: Path | None,
    *,
    as_json: bool = False,
    command: str | None = None,
) -> list[Path]:
    """The given baselines, else the configuration's `baseline` (exit 2 naming the fix)."""
    if baselines:
        return list(baselines)
    command = command or click.get_current_context().info_name or "gate"
    found = configured_baseline(root)
    if isinstance(found, str):
        fail(command, found, as_json=as_json)
    return [found]


def configured_baseline(root: Path | None, config_path: Path | None = None) -> Path | str:
    """The configuration's `baseline` (of `--config` when given), or why there is
    none usable (naming the fix)."""
    from capeval.config import load_config
    from capeval.core.problems import ProblemsError
    from capeval.workspace import find_root

    try:
        found = find_root(explicit=root)
        config = load_config(found, config_path)
    except ProblemsError as exc:
        return f"no --baseline given and no usable configuration: {exc}"
    if config.baseline is None:
        return (
            "no --baseline given and the configuration names none; pass --baseline FILE or add "
            f'baseline = "evals/capability/results/baseline.json" to '
            f"{config_home(config.source, found)} "
            "(where capeval baseline freeze writes it)"
        )
    if not config.baseline.exists():
        return (
            f"the configured baseline {config.baseline} does not exist yet; record it with "
            "capeval baseline freeze, or pass --baseline FILE"
        )
    return config.baseline


def configured_bait_policy(root: Path | None, config_path: Path | None = None) -> str:
    """The configuration's `bait` policy ("require" or "report").

    "require" where there is no workspace or its configuration cannot be
    read: the strict rule is the one that can never pass a comparison it
    should not.
    """
    from capeval.config import read_bait_policy
    from capeval.core.problems import ProblemsError
    from capeval.workspace import find_root

    try:
        found = find_root(explicit=root)
    except ProblemsError:
        return "require"
    return read_bait_policy(found, config_path)


def retry_options(retries_help: str) -> Callable[[Any], Any]:
    """`--retries` and `--retry-wait`, alike for `capeval run` and `paperclip live`.

    Both retry on one schedule (`capeval.runner.retry`), so their flags must
    not drift apart; only what a retried unit is differs, in `retries_help`.
    """

    def decorate(func: Any) -> Any:
        func = click.option(
            "--retry-wait",
            type=click.FloatRange(min=0, max=3600),
            default=10.0,
            show_default=True,
            help="Seconds before the first retry; each next wait doubles (at most 300 s), plus "
            "random jitter.",
        )(func)
        return click.option(
            "--retries",
            type=click.IntRange(min=0),
            default=2,
            show_default=True,
            help=retries_help,
        )(func)

    return decorate
