"""`capeval paperclip validate|run|report|live`: the Paperclip conformance suite and its live matrix.

Thin wrappers: `capeval.paperclip.derivative.load_derivative`,
`capeval.paperclip.suite.run_suite` and `capeval.paperclip.report.write_report`
do the work and are what a notebook calls.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from capeval.cli import InterruptibleGroup
from capeval.commands.common import SECONDS, cannot_write, fail, retry_options, shown_path

if TYPE_CHECKING:
    from capeval.paperclip.derivative import Row
    from capeval.paperclip.suite import SuiteResult

_FILE = click.option(
    "--file",
    "file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Derivative to use (default: evals/paperclip/eval-traceability.yaml in the current "
    "directory or its nearest ancestor that has one).",
)


def _echo_problems(problems: Sequence[Any], closing: str) -> None:
    for p in problems:
        click.echo(str(p), err=True)
    click.echo(f"{len(problems)} problem(s){closing}", err=True)


def _checked_rows(file: Path | None) -> tuple[Path, list[Row]]:
    """The derivative's rows, refused (ProblemsError) unless the suite can run every one.

    Beyond the loader's section-1 rules this derives each row's plan, so a
    row the fake agent cannot test (e.g. an authorization_policy row whose
    evidence has no call its grant unlocks) is a problem `validate` reports,
    not a traceback in the middle of `run`.
    """
    from capeval.core.problems import ProblemsError
    from capeval.paperclip.derivative import find_derivative, load_derivative
    from capeval.paperclip.fakeagent import check_plans

    path = file or find_derivative()
    rows = load_derivative(path)
    problems = check_plans(rows, file=str(path))
    if problems:
        raise ProblemsError(problems)
    return path, rows


def _load(file: Path | None) -> tuple[Path, list[Row]]:
    """`_checked_rows` for the commands that go on to run: problems on stderr, exit 2."""
    from capeval.core.problems import ProblemsError

    try:
        return _checked_rows(file)
    except ProblemsError as exc:
        _echo_problems(exc.problems, "; fix the derivative (or pass --file) and run again.")
        raise SystemExit(2) from exc


@contextmanager
def _writing(command: str, target: Path, flag: str) -> Iterator[None]:
    """An output that cannot be written (a file where a folder should be, no
    permission) is bad usage: exit 2 naming the path and the flag, not a traceback."""
    try:
        yield
    except OSError as exc:
        fail(
            f"paperclip {command}", f"{cannot_write(target, exc)}; pass {flag} with a writable path"
        )


def _evidence_dir(derivative: Path) -> tuple[Path, str | None]:
    """`.capeval/evidence/paperclip/` and, when it is not the usual place, why it is not.

    The usual place is under the workspace root the other commands use (the
    nearest ancestor of the working directory holding evals/capability/cases),
    not beside the derivative: a `--file` can live anywhere, and evidence
    belongs to the workspace the user is working in. Outside any workspace the
    report goes to the derivative's own workspace, else to the checkout that
    holds it as evals/paperclip/eval-traceability.yaml, else to the current
    directory; each of those comes with a notice naming the place, so a report
    never lands somewhere the user did not expect without a word.
    """
    from capeval.core.problems import ProblemsError
    from capeval.paperclip.derivative import DERIVATIVE_PATH
    from capeval.paperclip.report import DEFAULT_OUT
    from capeval.workspace import CASES_SUBDIR, find_root

    try:
        return find_root() / DEFAULT_OUT, None
    except ProblemsError:
        pass
    marker = f"{CASES_SUBDIR.as_posix()}/"
    here = f"not in a capeval workspace (no {marker} here or in any parent directory)"
    choose = "pass --out DIR to choose the folder"
    file = derivative.resolve()
    try:
        root = find_root(start=file.parent)
    except ProblemsError:
        root = None
    if root is not None:
        return (
            root / DEFAULT_OUT,
            f"{here}; writing under the derivative's workspace, {root} ({choose})",
        )
    depth = len(DERIVATIVE_PATH.parts)
    base = file.parents[depth - 1] if len(file.parents) >= depth else None
    if base is not None and file == base / DERIVATIVE_PATH:
        return (
            base / DEFAULT_OUT,
            f"{here}; writing under the derivative's checkout, {base} ({choose})",
        )
    cwd = Path.cwd()
    return cwd / DEFAULT_OUT, (
        f"not in a capeval workspace, and neither is {shown_path(derivative)} (no {marker} "
        "above either); writing under the current directory, "
        f"{cwd} ({choose}, or run inside a workspace)"
    )


def _default_out(out: Path | None, derivative: Path, leaf: str = "") -> Path:
    """`--out` when given, else the evidence folder (announced on stderr when unusual)."""
    if out is not None:
        return out
    folder, notice = _evidence_dir(derivative)
    if notice is not None:
        click.echo(f"note: {notice}", err=True)
    return folder / leaf if leaf else folder


def _refuse_overwriting_input(target: Path, derivative: Path, flag: str) -> None:
    """An output that is the derivative itself is refused, even with --force.

    --force says "replace my old rows", never "replace the input": the file
    (by identity, so a symlink, hard link or `./` spelling counts) would lose
    the derivative the run was judged against.
    """
    try:
        same = target.exists() and os.path.samefile(target, derivative)
    except OSError:
        same = False
    if same:
        raise click.UsageError(
            f"{flag} {target} is the derivative being run ({shown_path(derivative)}); "
            "choose another path for the rows (--force never overwrites the input)"
        )


def _suite_line(result: SuiteResult) -> str:
    from capeval.paperclip.report import summary, verdict_line

    return verdict_line(summary(result))


@click.group(cls=InterruptibleGroup)
def paperclip() -> None:
    """Offline Paperclip capability conformance: derivative, suite and parity report."""


@paperclip.command()
@_FILE
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
def validate(file: Path | None, as_json: bool) -> None:
    """Check the traceability derivative against every rule; exit 2 listing each problem."""
    from capeval.core.problems import ProblemsError

    try:
        path, rows = _checked_rows(file)
    except ProblemsError as exc:
        if as_json:
            click.echo(
                json.dumps({"ok": False, "problems": [p.to_json() for p in exc.problems]}, indent=2)
            )
        else:
            _echo_problems(exc.problems, f" in {file}" if file else "")
        raise SystemExit(2) from exc
    groups = sorted({r.group for r in rows})
    if as_json:
        click.echo(json.dumps({"ok": True, "rows": len(rows), "groups": len(groups)}))
    else:
        click.echo(f"ok: {shown_path(path)}: {len(rows)} rows in {len(groups)} groups")


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
    from capeval.paperclip.report import summary, write_rows
    from capeval.paperclip.suite import run_suite

    if jsonl is not None and jsonl.exists() and not force:
        raise click.UsageError(
            f"{jsonl} exists; pass --force to overwrite it or choose another path"
        )
    path, rows = _load(file)
    if jsonl is not None:
        _refuse_overwriting_input(jsonl, path, "--jsonl")
    result = run_suite(rows)
    if jsonl is not None:
        with _writing("run", jsonl, "--jsonl"):
            write_rows(result, jsonl)
    if as_json:
        out = {**summary(result), "failures": [f.to_json() for f in result.failures]}
        click.echo(json.dumps(out, indent=2, sort_keys=True))
    else:
        for f in result.failures:
            click.echo(f"FAIL {f}")
        click.echo(_suite_line(result))
    if not result.ok:
        raise SystemExit(1)


@paperclip.command()
@_FILE
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory for eval-parity-report.json/.md (default: .capeval/evidence/paperclip/ "
    "under the workspace root; outside one, under the derivative's workspace or checkout, "
    "else the current directory, with a note saying which).",
)
@click.option(
    "--live",
    "live_files",
    type=click.Path(dir_okay=False, path_type=Path),
    multiple=True,
    help="live-rows.jsonl of `capeval paperclip live` to fold into the report's `live` "
    "section (repeatable; default: live/live-rows.jsonl in the output folder, when it exists).",
)
@click.option("--no-live", is_flag=True, help="Leave the live rows out (no `live` section).")
@click.option("--json", "as_json", is_flag=True, help="Print the written paths as JSON.")
def report(
    file: Path | None,
    out: Path | None,
    live_files: tuple[Path, ...],
    no_live: bool,
    as_json: bool,
) -> None:
    """Run the suite and write the parity report (JSON and Markdown) plus its row stream.

    The live rows of `capeval paperclip live` are folded in as the report's
    `live` section: per-group pass rates per agent and grant configuration.
    """
    from capeval.paperclip.live import LIVE_DIR, ROWS_FILE
    from capeval.paperclip.report import read_live_rows, write_report
    from capeval.paperclip.suite import run_suite
    from capeval.results.errors import ResultFileError
    from capeval.results.overlap import distinct_files

    if no_live and live_files:
        raise click.UsageError("--live and --no-live contradict each other; pass one")
    path, rows = _load(file)
    out_dir = _default_out(out, path)
    live_rows: list[Path] = list(live_files)
    beside = out_dir / LIVE_DIR / ROWS_FILE  # where `live` writes by default
    if not live_rows and not no_live and beside.is_file():
        live_rows = [beside]
    try:
        _, warnings = read_live_rows(live_rows)
    except ResultFileError as exc:
        fail("paperclip report", f"{exc}", as_json=as_json)
    # A file named twice is read once (`read_live_rows` says so), and shown once.
    live_rows = [Path(p) for p in distinct_files(live_rows, on_warning=lambda _message: None)]
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    result = run_suite(rows)
    with _writing("report", out_dir, "--out"):
        json_path, md_path, rows_path = write_report(result, out_dir, live_rows=live_rows)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "json": str(json_path),
                    "markdown": str(md_path),
                    "rows": str(rows_path),
                    "live": [str(p) for p in live_rows],
                    "verdict": "passed" if result.ok else "failed",
                    "passed": result.passed,
                    "failed": result.failed,
                }
            )
        )
    else:
        click.echo(
            f"wrote {shown_path(json_path)}\nwrote {shown_path(md_path)}\nwrote {shown_path(rows_path)}"
        )
        for live_path in live_rows:
            click.echo(f"live rows folded in: {shown_path(live_path)}")
        click.echo(_suite_line(result))
    if not result.ok:
        raise SystemExit(1)


def _models(models: Sequence[str], agents: Sequence[str]) -> dict[str, str]:
    """`--model` values as {agent: model}: `AGENT=MODEL` for one agent, a bare MODEL for all."""
    out: dict[str, str] = {}
    for value in models:
        name, sep, model = value.partition("=")
        if sep and name in agents:
            out[name] = model
        elif sep and name in _AGENT_NAMES:
            raise click.BadParameter(
                f"{value!r} names {name}, which is not in this matrix (--agent)",
                param_hint="--model",
            )
        elif sep and re.fullmatch(r"[A-Za-z][\w-]*", name):
            # `claude=opus` is a misspelt agent, not a model id for every agent.
            raise click.BadParameter(
                f"{value!r} names an agent {name!r} capeval does not know; write "
                f"{' or '.join(f'{a}=MODEL' for a in _AGENT_NAMES)} for one agent, or a "
                "bare MODEL for every agent",
                param_hint="--model",
            )
        else:
            out.update(dict.fromkeys(agents, value))
    return out


_AGENT_NAMES = ("codex", "claude-code")


@paperclip.command()
@_FILE
@click.option(
    "--agent",
    "agents",
    type=click.Choice(_AGENT_NAMES),
    multiple=True,
    help="Agent CLI to run (repeatable; default: codex and claude-code, each skipped with "
    "the reason when it is not installed or not configured).",
)
@click.option("--codex", default=None, help="Codex binary (default: `codex` on PATH).")
@click.option("--claude", default=None, help="Claude Code binary (default: `claude` on PATH).")
@click.option(
    "-m",
    "--model",
    "models",
    multiple=True,
    help="Model: `AGENT=MODEL` for one agent, or MODEL for every agent (repeatable; default: "
    "each CLI's configured one).",
)
@click.option(
    "-c",
    "--config",
    "config",
    multiple=True,
    help="A Codex `-c key=value` override, passed through (repeatable).",
)
@click.option("--group", "groups", multiple=True, help="Only this group (repeatable).")
@click.option(
    "--repeats",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Turns per configuration and agent: a model's conformance is a rate.",
)
@retry_options(
    "Times a turn whose outcome is `error` (nothing was measured: an outage, a "
    "surface never listed) is run again, as `capeval run --retries`."
)
@click.option(
    "--ungranted-tools",
    type=click.Choice(["absent", "listed"]),
    default="absent",
    show_default=True,
    help="How an ungranted turn's control plane shows the optional tool: absent from "
    "tools/list, or listed with every call to it decided without the grant (its refusal "
    "is then measured).",
)
@click.option(
    "--scripted",
    is_flag=True,
    help="Answer for the model with the scripted model server: the fake agent's plan, "
    "replayed through the real CLI offline (a wiring check, not a model evaluation).",
)
@click.option(
    "--timeout", type=SECONDS, default=300.0, show_default=True, help="Seconds allowed per turn."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory for live-rows.jsonl (default: .capeval/evidence/paperclip/live/ "
    "under the workspace root; outside one, as for report).",
)
@click.option(
    "--force", is_flag=True, help="Overwrite the rows an earlier matrix left in live-rows.jsonl."
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def live(
    file: Path | None,
    agents: tuple[str, ...],
    codex: str | None,
    claude: str | None,
    models: tuple[str, ...],
    config: tuple[str, ...],
    groups: tuple[str, ...],
    repeats: int,
    retries: int,
    retry_wait: float,
    ungranted_tools: str,
    scripted: bool,
    timeout: float,
    out: Path | None,
    force: bool,
    as_json: bool,
) -> None:
    """Real agent CLI turns (Codex, Claude Code) against the mock control plane (opt-in).

    Every configuration of one row per group (optional-tool rows granted and
    ungranted), per agent, --repeats times. An agent that is not installed or
    not configured is skipped with the reason. Exit 0 when no turn failed or
    errored (or every agent is skipped), 1 otherwise, 2 on bad input (a
    --codex or --claude that is not an executable, an existing
    live-rows.jsonl without --force).
    """
    from capeval.paperclip.live import (
        LIVE_DIR,
        ROWS_FILE,
        AgentNotFound,
        LiveSettings,
        make_runner,
        run_matrix,
    )
    from capeval.paperclip.liveagents import AGENTS, LiveSkipped
    from capeval.paperclip.livecases import live_cases
    from capeval.runner.retry import RetryPolicy

    path, rows = _load(file)
    try:
        cases = live_cases(rows, groups)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--group") from exc
    names = list(dict.fromkeys(agents or _AGENT_NAMES))
    per_agent = _models(models, names)
    binaries = {"codex": codex, "claude-code": claude}
    runners, skipped = [], []
    for name in names:
        try:
            runner = make_runner(name, binaries[name], per_agent.get(name))
            if not scripted:
                AGENTS[name].check_configured(os.environ, config)
        except AgentNotFound as exc:
            fail("paperclip live", str(exc), as_json=as_json)
        except LiveSkipped as exc:
            skipped.append(str(exc))
            if not as_json:
                click.echo(str(exc), err=True)
            continue
        runners.append(runner)
    if not runners:
        if as_json:
            click.echo(json.dumps({"turns": 0, "agents": [], "skipped": skipped}))
        return
    settings = LiveSettings(
        path.resolve(),
        config,
        scripted=scripted,
        timeout_s=timeout,
        repeats=repeats,
        retry=RetryPolicy(retries, retry_wait),
        ungranted_tools=ungranted_tools,
    )
    rows_path = _default_out(out, path, LIVE_DIR) / ROWS_FILE
    _refuse_overwriting_input(rows_path, path, "--out")
    # Turns cost money and time: rows an earlier matrix left are kept unless asked.
    # An empty file (a matrix that never finished a turn) holds nothing to lose.
    if not force and rows_path.is_file() and rows_path.stat().st_size > 0:
        fail(
            "paperclip live",
            f"{shown_path(rows_path)} holds an earlier matrix's rows; pass --force to "
            "overwrite them or --out DIR to write elsewhere",
            as_json=as_json,
        )
    # Before the first turn, not after it: an --out that cannot hold the rows would
    # otherwise end the matrix with a traceback (or, later, lose a finished turn).
    with _writing("live", rows_path, "--out"):
        rows_path.parent.mkdir(parents=True, exist_ok=True)
        rows_path.open("w", encoding="utf-8").close()

    def show(row: dict[str, Any]) -> None:
        if as_json:
            return
        mark = {"passed": "PASS", "failed": "FAIL"}.get(row["outcome"], "ERROR")
        calls = ", ".join(row["operations"]) or "no calls"
        tries = f", {row['attempts']} attempts" if row.get("attempts", 1) > 1 else ""
        nth = f" #{row['repeat']}" if repeats > 1 else ""  # as the rows and the report count
        click.echo(
            f"{mark} {row['agent']} {row['group']} {row['id']}{nth} ({row['operation']}): "
            f"{calls} [{row['durationMs'] / 1000:.1f} s{tries}]"
        )
        for f in row["failures"]:
            click.echo(f"     {failure_line(f)}")

    results = run_matrix(settings, runners, cases, rows_path, progress=show)
    counts = {k: sum(r["outcome"] == k for r in results) for k in ("passed", "failed", "error")}
    summary = {
        "turns": len(results),
        **counts,
        "agents": [r.name for r in runners],
        "skipped": skipped,
        "repeats": repeats,
        "scripted": scripted,
        "rows": str(rows_path),
    }
    if as_json:
        click.echo(json.dumps({**summary, "results": results}, indent=2, sort_keys=True))
    else:
        click.echo(
            f"{len(results)} turns: {counts['passed']} passed, {counts['failed']} failed, "
            f"{counts['error']} error{' (scripted model)' if scripted else ''}; "
            f"rows: {shown_path(rows_path)}"
        )
    if counts["failed"] or counts["error"]:
        raise SystemExit(1)


def failure_line(failure: Mapping[str, Any]) -> str:
    """A live failure as the progress shows it: a failure names the decision too (docs/paperclip.md#what-a-failure-names)."""
    reason = f" ({failure['reason']})" if failure.get("reason") else ""
    return (
        f"{failure['assertionClass']}: {failure.get('operation') or '-'} "
        f"decision={failure.get('decision') or '-'}{reason}: {failure['message']}"
    )
