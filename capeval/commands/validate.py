"""`capeval validate`: check the workspace before any agent starts.

A thin wrapper over `capeval.runner.validate.validate_workspace`; exit 0 when
everything is valid, 2 when anything is not (the "bad input" code of every command).
Notes (a case without an oracle that nothing plays) never change the exit code.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from capeval.commands.common import EXIT_BAD_INPUT, config_option, root_option
from capeval.runner.validate import validate_workspace


@click.command()
@root_option
@config_option
@click.option("--case", "case_ids", multiple=True, help="Check only this case id (repeatable).")
@click.option(
    "--graders",
    is_flag=True,
    help="Also run grader honesty checks: the oracle passes, the untouched fixture fails.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object for machines.")
def validate(
    root: Path | None,
    config_path: Path | None,
    case_ids: tuple[str, ...],
    graders: bool,
    as_json: bool,
) -> None:
    """Report every problem in every case and in the configuration, at once."""
    result = validate_workspace(
        root, config_path=config_path, ids=case_ids or None, graders=graders
    )
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
        if not result.ok:
            click.get_current_context().exit(EXIT_BAD_INPUT)
        return
    # Notes first: a reader of a long problem list still sees its verdict last.
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    if result.ok:
        ids = ", ".join(c.id for c in result.cases)
        click.echo(f"ok: {len(result.cases)} cases" + (f" ({ids})" if ids else ""))
    else:
        for problem in result.problems:
            click.echo(str(problem))
        n = len(result.problems)
        click.echo(
            f"{n} problem{'s' if n != 1 else ''}; fix {'them' if n != 1 else 'it'} and run capeval validate again",
            err=True,
        )
    if not result.ok:
        click.get_current_context().exit(EXIT_BAD_INPUT)
