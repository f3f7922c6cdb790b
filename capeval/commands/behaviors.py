"""`capeval behaviors FILE...`: behavior metrics of run-summary files or saved agent streams.

A thin wrapper over `capeval.results.runsummary.read_summary` (or, with `--stream
TYPE`, the adapter's own stream parser, so a transcript saved from `claude -p
--output-format stream-json` or `codex exec --json` is measured exactly as a
run would measure it) and `capeval.core.behaviors.derive_behaviors`; a notebook
calls those directly. Every file is read before anything is printed, so a bad
file never leaves a half-written JSON Lines stream behind: it is reported
(file, field, what is wrong) and the command exits 2.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from capeval.agents.registry import STREAM_TYPES, stream_parser
from capeval.agents.streams import ParsedStream
from capeval.core.behaviors import derive_behaviors
from capeval.core.metrics import METRIC_NAMES, TOOL_CALLS_BY_NAME
from capeval.core.runsummary import RunSummary, RunSummaryError
from capeval.results.inputs import InputRefused, read_input
from capeval.results.runsummary import read_summary


def behaviors_of_files(
    paths: list[Path], stream: str | None = None
) -> tuple[list[dict[str, Any]], list[RunSummaryError]]:
    """Behaviors of each file in order, and the errors of those that could not be read."""
    results: list[dict[str, Any]] = []
    errors: list[RunSummaryError] = []
    for path in paths:
        try:
            summary = read_stream(path, stream) if stream else _read_summary(path)
            results.append(derive_behaviors(summary))
        except RunSummaryError as exc:
            errors.append(exc)
    return results, errors


def _read_summary(path: Path) -> RunSummary:
    try:
        return read_summary(path)
    except RunSummaryError as exc:
        if exc.field != "(file)" or not exc.message.startswith("not valid JSON"):
            raise
        best = _best_types(_lines(path))
        if not best:
            raise
        raise RunSummaryError(
            exc.file,
            exc.field,
            f"{exc.message}; it reads as {' or '.join(best)}'s stream: pass --stream {best[0]}",
        ) from exc


def read_stream(path: Path, agent_type: str) -> RunSummary:
    """The run summary in a saved agent stream, parsed as a run of `agent_type` would be.

    A stream given to another CLI's parser is an error, never metrics: that
    parser finds no turn (all zeros) or only the events both CLIs name alike.
    """
    lines = _lines(path)
    if _is_summary("\n".join(lines)):
        raise RunSummaryError(
            str(path),
            "(stream)",
            "this is a run summary (one JSON object with turns), not an agent's stream: "
            "drop --stream to measure it",
        )
    parsed = stream_parser(agent_type)(lines)
    if parsed.unparsed:
        # An event cut short is lost: the metrics of the rest would be wrong, not partial.
        raise RunSummaryError(
            f"{path}:{parsed.unparsed[0]}",
            "(stream)",
            "not valid JSON: an event cut short (or nested too deeply); the stream cannot be "
            "measured",
        )
    best = _best_types(lines, known={agent_type: parsed})
    if best and agent_type not in best:
        found = (
            f"skipped {sum(parsed.skipped.values())} of its events"
            if parsed.summary.turns
            else "found no turn"
        )
        raise RunSummaryError(
            str(path),
            "(stream)",
            f"it reads as {' or '.join(best)}'s stream, not {agent_type}'s ({agent_type}'s "
            f"parser {found}): pass --stream {best[0]}",
        )
    if not parsed.summary.turns:
        raise RunSummaryError(str(path), "(stream)", f"no {agent_type} turns in this stream")
    return parsed.summary


def _is_summary(text: str) -> bool:
    """One JSON document holding `turns`: what `capeval behaviors` reads without --stream."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        # A stream (one JSON object per line), or too deep to tell: the stream
        # parser names a line nested too deeply as one it could not read.
        return False
    return isinstance(doc, dict) and "turns" in doc


def _lines(path: Path) -> list[str]:
    try:
        return read_input(path).decode("utf-8").splitlines()
    except InputRefused as exc:
        raise RunSummaryError(str(path), "(file)", exc.reason) from exc
    except OSError as exc:
        raise RunSummaryError(str(path), "(file)", f"cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise RunSummaryError(str(path), "(file)", f"not UTF-8 text: {exc.reason}") from exc


def _best_types(lines: list[str], known: Mapping[str, ParsedStream] | None = None) -> list[str]:
    """The stream types these lines read as: parsers that find turns, fewest events skipped.

    Two CLIs may share an event name (Gemini's and opencode's `tool_use`), so
    finding a turn is not enough; the right parser knows the most events.
    `known` holds parses already made, which are not made again.
    """
    fits = dict(known or {})
    log = logging.getLogger("capeval.agents.streams")
    level = log.level
    log.setLevel(logging.ERROR)  # every other CLI's events are "unknown" to a parser
    try:
        for t in STREAM_TYPES:
            if t not in fits:
                fits[t] = stream_parser(t)(lines)
    finally:
        log.setLevel(level)
    scores = {t: sum(p.skipped.values()) for t, p in fits.items() if p.summary.turns}
    return [t for t, score in scores.items() if score == min(scores.values(), default=0)]


def format_table(paths: list[Path], results: list[dict[str, Any]]) -> str:
    """Metrics down, files across: eleven rows read better than eleven columns."""
    headers = [p.name for p in paths]
    if len(set(headers)) != len(headers):
        headers = [str(p) for p in paths]
    label_width = max(len(n) for n in (*METRIC_NAMES, "metric"))
    widths = [
        max(len(h), *(len(str(r[name])) for name in METRIC_NAMES))
        for h, r in zip(headers, results, strict=True)
    ]
    lines = [
        "  ".join(
            [
                "metric".ljust(label_width),
                *(h.rjust(w) for h, w in zip(headers, widths, strict=True)),
            ]
        )
    ]
    for name in METRIC_NAMES:
        cells = (str(r[name]).rjust(w) for r, w in zip(results, widths, strict=True))
        lines.append("  ".join([name.ljust(label_width), *cells]))
    lines.append("")
    for header, result in zip(headers, results, strict=True):
        calls = result[TOOL_CALLS_BY_NAME]
        listed = ", ".join(f"{name} {count}" for name, count in calls.items()) or "(no tool calls)"
        lines.append(f"{TOOL_CALLS_BY_NAME} {header}: {listed}")
    return "\n".join(lines)


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--stream",
    type=click.Choice(STREAM_TYPES),
    default=None,
    help="Each FILE is the stream this agent CLI printed (JSON Lines), not a run summary.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON object per file (JSON Lines, in file order)."
)
def behaviors(files: tuple[Path, ...], stream: str | None, as_json: bool) -> None:
    """Behavior metrics (docs/behavior-metrics.md) of run-summary JSON files.

    Each FILE is a run summary as the corbits post-run hook writes it:
    {status, ..., turns: [{turnIndex, assistantTurn, toolCalls, durationMs}]},
    or with --stream TYPE a saved agent stream (`claude -p --output-format
    stream-json`, `codex exec --json`, ...), parsed as `capeval run` parses
    it. Prints the eleven numeric metrics and toolCallsByName per file. Exits
    2 when any file cannot be read, naming the file and the field.
    """
    paths = list(files)
    results, errors = behaviors_of_files(paths, stream)
    if errors:
        for error in errors:
            click.echo(f"capeval behaviors: error: {error}", err=True)
        raise SystemExit(2)
    if as_json:
        for result in results:
            click.echo(json.dumps(result, ensure_ascii=False))
    else:
        click.echo(format_table(paths, results))
