"""`capeval agents list` and `capeval agents check [NAME]`.

Thin wrappers over `capeval.agents.check.list_agents` / `check_agent`. The
agents come from the workspace configuration when run inside a workspace
(or with --root/--config), else the built-in ones, so a user can check
their wiring before writing a single case.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from capeval.cli import InterruptibleGroup
from capeval.commands.common import EXIT_BAD_INPUT, SECONDS, config_option, fail, root_option
from capeval.core.problems import ProblemsError


def _agents(root: Path | None, config_path: Path | None) -> tuple[dict, str | None, list[str]]:
    """(agents by name, the default agent's name: the configured one, else `run`'s default,
    the agents `capeval run` plays on the configured matrix, in matrix order: what `check`
    checks).

    `matrix = ["local:v1@mine"]` with no `agent` runs only `mine`, yet a bare
    `capeval agents check` checked the built-in `scripted` and said "ok"; and
    with two agents in the matrix it checked neither of them.
    """
    from capeval.config import load_config
    from capeval.core.agentconfig import builtin_agents
    from capeval.core.matrix import parse_cell, split_cells
    from capeval.runner.options import DEFAULT_AGENT
    from capeval.workspace import find_root

    try:
        found = find_root(explicit=root)
    except ProblemsError:
        if root is not None or config_path is not None:
            raise
        return builtin_agents(), DEFAULT_AGENT, [DEFAULT_AGENT]
    config = load_config(found, config_path)
    default = config.agent or DEFAULT_AGENT
    played = [default]
    try:
        cells = [parse_cell(c, provider="p", model="m") for c in split_cells(config.matrix)]
        played = list(dict.fromkeys(c.agent or default for c in cells)) or played
    except ValueError:
        pass  # `capeval run` reports the bad cell
    return dict(config.agents), default, played


def _fail(exc: ProblemsError, *, as_json: bool = False) -> None:
    # With --json, stdout gets `{"errors", "exitCode"}` as `capeval gate` prints
    # it: `agents list --json | jq` read nothing from a broken capeval.toml.
    if as_json:
        errors = [str(p) for p in exc.problems]
        click.echo(json.dumps({"errors": errors, "exitCode": EXIT_BAD_INPUT}, indent=2))
    for problem in exc.problems:
        click.echo(f"capeval agents: {problem}", err=True)
    click.get_current_context().exit(EXIT_BAD_INPUT)


@click.group(cls=InterruptibleGroup)
def agents() -> None:
    """List the configured agents and check their wiring offline."""


@agents.command("list")
@root_option
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_command(root: Path | None, config_path: Path | None, as_json: bool) -> None:
    """Every agent, its type and whether its binary is found; * marks those `capeval run` plays."""
    from capeval.agents.check import list_agents

    try:
        table, default, played = _agents(root, config_path)
    except ProblemsError as exc:
        _fail(exc, as_json=as_json)
        return
    rows = list_agents(table)
    if as_json:
        doc = {"default": default, "played": played, "agents": rows}
        click.echo(json.dumps(doc, indent=2))
        return
    for row in rows:
        where = row["path"] or ("built in" if row["type"] == "scripted" else _missing(row))
        # What `capeval run` plays on the configured matrix, not merely the
        # default agent: `scripted` was starred while the matrix played `mine`.
        star = "*" if row["name"] in played else " "
        click.echo(f"{star} {row['name']:<16} {row['type']:<12} {where}")
    click.echo(f"(* played by capeval run: {', '.join(played)})")


def _missing(row: dict) -> str:
    """NOT FOUND, or NOT EXECUTABLE for a file that is there without its execute bit."""
    from capeval.agents.cliadapter import unresolved_reason

    if row["binary"] and unresolved_reason(row["binary"]).startswith("exists"):
        return "NOT EXECUTABLE"
    return "NOT FOUND"


@agents.command("check")
@click.argument("name", required=False)
@root_option
@config_option
@click.option(
    "--timeout",
    type=SECONDS,
    default=120.0,
    show_default=True,
    help="Seconds the headless run may take.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def check_command(
    name: str | None, root: Path | None, config_path: Path | None, timeout: float, as_json: bool
) -> None:
    """Binary, version, one headless run against a scripted model server, stream, behaviors.

    NAME defaults to every agent `capeval run` plays (the configured matrix's,
    else the configured default agent). Exit 0 when every step passed
    (skipped steps do not fail), 1 otherwise, 2 for bad input. With --json,
    one agent's report is printed as an object; several as
    `{"ok": ..., "agents": [report, ...]}`.
    """
    from capeval.agents.check import check_agent

    try:
        table, _, played = _agents(root, config_path)
    except ProblemsError as exc:
        _fail(exc, as_json=as_json)
        return
    names = [name] if name else played
    for each in names:
        if each not in table:
            unknown = (
                f"unknown agent {each!r}; known: {', '.join(sorted(table))} "
                f"(or add an [agents.{each}] table)"
            )
            if as_json:
                fail("agents check", unknown, as_json=True)
            raise click.UsageError(unknown)
    reports = [check_agent(table[each], timeout_s=timeout) for each in names]
    ok = all(report.ok for report in reports)
    if as_json:
        docs = [report.to_json() for report in reports]
        doc = docs[0] if len(docs) == 1 else {"ok": ok, "agents": docs}
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo("\n\n".join(report.text() for report in reports))
    click.get_current_context().exit(0 if ok else 1)
