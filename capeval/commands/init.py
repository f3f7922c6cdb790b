"""`capeval init [DIR]`: a working workspace in one command.

A thin wrapper over `capeval.scaffold.init_workspace`: capeval.toml with
commented agent entries, one example case (fixture, grader, shell oracle)
and .gitignore lines. `capeval validate --graders` and `capeval run` pass on
it right away. Exit 0 when written, 2 when DIR is already a workspace or a
file would be overwritten.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from capeval.commands.common import fail, problems_text, shown_path


@click.command("init")
@click.argument("directory", required=False, type=click.Path(path_type=Path, dir_okay=True))
def init(directory: Path | None) -> None:
    """Create a workspace in DIRECTORY (default: the current one), ready to validate and run."""
    from capeval.core.problems import ProblemsError
    from capeval.scaffold import init_workspace

    target = directory or Path(".")
    if target.exists() and not target.is_dir():
        fail("init", f"{target} is a file; pass a folder to create the workspace in")
    try:
        done = init_workspace(target)
    except ProblemsError as exc:
        fail("init", problems_text(exc.problems))
    except OSError as exc:
        fail("init", f"cannot write in {target}: {exc.strerror or exc}")
    for path in done.created:
        click.echo(f"created {shown_path(path)}")
    if done.gitignore_lines and not done.gitignore_created:
        click.echo(f"added {done.gitignore_lines} line(s) to {shown_path(target / '.gitignore')}")
    where = "" if directory is None else f"cd {shlex.quote(str(directory))} && "
    click.echo(f"next: {where}capeval validate --graders && capeval run")
