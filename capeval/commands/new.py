"""`capeval new case ID`: add a case to the workspace from the package's template.

A thin wrapper over `capeval.scaffold.new_case`: the case folder (case.json,
verify.sh, solution/solve.sh) and its fixture folder, a small task that
passes `capeval validate --graders` as written, for its author to replace.
"""

from __future__ import annotations

from pathlib import Path

import click

from capeval.cli import InterruptibleGroup
from capeval.commands.common import config_option, fail, problems_text, root_option, shown_path


@click.group("new", cls=InterruptibleGroup)
def new() -> None:
    """Add a case to the workspace from a template."""


@new.command("case")
@click.argument("case_id", metavar="ID")
@click.option(
    "--tier",
    default="simple",
    show_default=True,
    help="The case's tier (one of the configured tiers).",
)
@root_option
@config_option
def case_command(case_id: str, tier: str, root: Path | None, config_path: Path | None) -> None:
    """Add case ID (evals/capability/cases/ID/ and evals/capability/fixtures/ID/)."""
    from capeval.config import load_config
    from capeval.core.problems import ProblemsError
    from capeval.scaffold import new_case
    from capeval.workspace import find_root

    try:
        found = find_root(explicit=root)
        config = load_config(found, config_path)
        if tier not in config.tiers:
            fail(
                "new case",
                f"--tier {tier!r} is not a configured tier; use one of: "
                f"{', '.join(config.tiers)} (or add it to `tiers` in capeval.toml)",
            )
        created = new_case(found, case_id, tier=tier)
    except ProblemsError as exc:
        fail("new case", problems_text(exc.problems))
    except OSError as exc:
        fail("new case", f"cannot write the case: {exc.strerror or exc}")
    for path in created:
        click.echo(f"created {shown_path(path)}")
    click.echo(
        "next: write the task into case.json's prompt, the fixture, verify.sh and "
        f"solution/solve.sh, then: capeval validate --graders --case {case_id}"
    )
