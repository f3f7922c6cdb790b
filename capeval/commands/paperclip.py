"""`capeval paperclip validate|run|report`: the offline Paperclip conformance suite.

Thin wrappers: `capeval.paperclip.derivative.load_derivative`,
`capeval.paperclip.suite.run_suite` and `capeval.paperclip.report.write_report`
do the work and are what a notebook calls.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from capeval.paperclip.suite import SuiteResult

_FILE = click.option(
    "--file",
    "file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Derivative to use (default: evals/paperclip/eval-traceability.yaml of this workspace).",
)


def _echo_problems(problems: Sequence[Any], closing: str) -> None:
    for p in problems:
        click.echo(str(p), err=True)
    click.echo(f"{len(problems)} problem(s){closing}", err=True)


def _load(file: Path | None) -> tuple[Path, list]:
    from capeval.paperclip.derivative import find_derivative, load_derivative
    from capeval.problems import ProblemsError

    path = file or find_derivative()
    try:
        return path, load_derivative(path)
    except ProblemsError as exc:
        _echo_problems(exc.problems, "; fix the derivative and run again.")
        raise SystemExit(2) from exc


def _suite_line(result: SuiteResult) -> str:
    return (
        f"{result.passed} passed, {result.failed} failed of {len(result.results)} "
        f"configurations; parity {len(result.fake_agent_operations)}/"
        f"{len(result.codex_operations)}"
    )


@click.group()
def paperclip() -> None:
    """Offline Paperclip capability conformance: derivative, suite and parity report."""


@paperclip.command()
@_FILE
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
def validate(file: Path | None, as_json: bool) -> None:
    """Check the traceability derivative against every rule; exit 2 listing each problem."""
    from capeval.paperclip.derivative import find_derivative, load_derivative
    from capeval.problems import ProblemsError

    path = file or find_derivative()
    try:
        rows = load_derivative(path)
    except ProblemsError as exc:
        if as_json:
            click.echo(
                json.dumps({"ok": False, "problems": [p.to_json() for p in exc.problems]}, indent=2)
            )
        else:
            _echo_problems(exc.problems, f" in {path}")
        raise SystemExit(2) from exc
    groups = sorted({r.group for r in rows})
    if as_json:
        click.echo(json.dumps({"ok": True, "rows": len(rows), "groups": len(groups)}))
    else:
        click.echo(f"ok: {path}: {len(rows)} rows in {len(groups)} groups")


@paperclip.command()
@_FILE
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option(
    "--jsonl",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write one JSON Lines row per executed configuration to this file.",
)
@click.option("--force", is_flag=True, help="Overwrite an existing --jsonl file.")
def run(file: Path | None, as_json: bool, jsonl: Path | None, force: bool) -> None:
    """Run every configuration (optional rows granted and ungranted); exit 1 on any failure."""
    from capeval.paperclip.report import write_rows
    from capeval.paperclip.suite import run_suite

    if jsonl is not None and jsonl.exists() and not force:
        raise click.UsageError(
            f"{jsonl} exists; pass --force to overwrite it or choose another path"
        )
    _, rows = _load(file)
    result = run_suite(rows)
    if jsonl is not None:
        write_rows(result, jsonl)
    summary = {
        "configurations": len(result.results),
        "passed": result.passed,
        "failed": result.failed,
        "parity": {
            "fakeAgent": len(result.fake_agent_operations),
            "codex": len(result.codex_operations),
            "identical": result.parity,
        },
        "failures": [f.to_json() for f in result.failures],
    }
    if as_json:
        click.echo(json.dumps(summary, indent=2, sort_keys=True))
    else:
        for f in result.failures:
            click.echo(f"FAIL {f}")
        click.echo(_suite_line(result))
    if result.failures:
        raise SystemExit(1)


@paperclip.command()
@_FILE
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory for eval-parity-report.json/.md (default .capeval/evidence/paperclip/).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the written paths as JSON.")
def report(file: Path | None, out: Path | None, as_json: bool) -> None:
    """Run the suite and write the parity report (JSON and Markdown) plus its row stream."""
    from capeval.paperclip.report import DEFAULT_OUT, write_report
    from capeval.paperclip.suite import run_suite

    path, rows = _load(file)
    out_dir = out or (path.resolve().parents[2] / DEFAULT_OUT)
    result = run_suite(rows)
    json_path, md_path, rows_path = write_report(result, out_dir)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "json": str(json_path),
                    "markdown": str(md_path),
                    "rows": str(rows_path),
                    "passed": result.passed,
                    "failed": result.failed,
                }
            )
        )
    else:
        click.echo(f"wrote {json_path}\nwrote {md_path}\nwrote {rows_path}")
        click.echo(_suite_line(result))
    if result.failures:
        raise SystemExit(1)
