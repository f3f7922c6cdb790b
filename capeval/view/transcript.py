"""A repeat's evidence as page data: its transcript turn by turn, its grader output, its files.

The transcript is the repeat's normalized run summary (docs/result-formats.md#artifacts),
read by the core's reader (`capeval.results.runsummary.read_summary`). Each
shell command comes with its chain segments (`capeval.core.scanner`), and
every call, segment or turn that counted toward a behavior metric is marked
with the metric's name, from `capeval.core.behaviors.behavior_contributions`:
the very list whose totals are the row's metrics, so a mark and a number can
never disagree.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from capeval.core.behaviors import (
    MAXIMUM_METRICS,
    behavior_contributions,
    call_command,
    metric_totals,
)
from capeval.core.metrics import METRIC_NAMES, direction
from capeval.core.runsummary import RunSummaryError
from capeval.core.scanner import command_word, scan_segments
from capeval.core.toolkinds import tool_kind
from capeval.core.turns import OTHER, RunSummary
from capeval.results.runsummary import read_summary

# The normalized stream first (what the behaviors came from), then the
# command agent's and the scripted agent's own copies of it.
SUMMARY_FILES = ("summary.json", "run-summary.json", "scripted-summary.json")
GRADER_LOG = "verify.log"
# What a page shows inline; the raw file link has the rest.
MAX_SHOWN_CHARS = 200_000
MAX_FIELD_CHARS = 20_000


def _cut(text: str, limit: int = MAX_FIELD_CHARS) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit], True)


def anchor(turn: int, call: int | None = None) -> str:
    """The element id of a turn (`t3`) or of one of its calls (`t3c1`)."""
    return f"t{turn}" if call is None else f"t{turn}c{call}"


def transcript(summary: RunSummary) -> dict[str, Any]:
    """The turns with their calls, segments and metric marks, and each metric's places."""
    found = behavior_contributions(summary)
    totals = metric_totals(found)
    call_marks: dict[tuple[int, int], list[str]] = {}
    segment_marks: dict[tuple[int, int, int], list[str]] = {}
    turn_marks: dict[int, list[str]] = {}
    places: dict[str, list[str]] = {}
    for metric, contributions in found.items():
        for x in contributions:
            if x.call is None:
                turn_marks.setdefault(x.turn, []).append(metric)
            else:
                marks = call_marks.setdefault((x.turn, x.call), [])
                if metric not in marks:
                    marks.append(metric)
                if x.segment is not None:
                    segment_marks.setdefault((x.turn, x.call, x.segment), []).append(metric)
            place = anchor(x.turn, x.call)
            if place not in places.setdefault(metric, []):
                places[metric].append(place)

    turns: list[dict[str, Any]] = []
    for t, turn in enumerate(summary.turns):
        calls: list[dict[str, Any]] = []
        for c, call in enumerate(turn.toolCalls):
            command = call_command(call)
            segments = None
            if command is not None:
                segments = [
                    {
                        "text": segment.text,
                        "command": command_word(segment),
                        "heredoc": segment.heredoc,
                        "metrics": segment_marks.get((t, c, k), []),
                    }
                    for k, segment in enumerate(scan_segments(command))
                ]
            arguments, arguments_cut = _cut(
                json.dumps(call.arguments, indent=2, ensure_ascii=False, default=str)
            )
            result, result_cut = _cut(call.result) if call.result is not None else (None, False)
            calls.append(
                {
                    "anchor": anchor(t, c),
                    "id": call.id,
                    "name": call.name,
                    "kind": call.kind if call.kind != OTHER else tool_kind(call.name),
                    "arguments": arguments,
                    "argumentsCut": arguments_cut,
                    "command": command,
                    "segments": segments,
                    "result": result,
                    "resultCut": result_cut,
                    "metrics": call_marks.get((t, c), []),
                }
            )
        turns.append(
            {
                "anchor": anchor(t),
                "turnIndex": turn.turnIndex,
                "durationMs": turn.durationMs,
                "texts": list(turn.texts),
                "calls": calls,
                "metrics": turn_marks.get(t, []),
            }
        )
    return {
        "status": summary.status,
        "durationMs": summary.durationMs,
        "turnsUsed": summary.turnsUsed,
        "toolCallCount": summary.toolCallCount,
        "tokenUsage": summary.tokenUsage.to_json() if summary.tokenUsage else None,
        "error": summary.error,
        "turns": turns,
        "metrics": [
            {
                "metric": m,
                "direction": direction(m),
                "kind": "maximum" if m in MAXIMUM_METRICS else "count",
                "total": totals[m],
                "places": places.get(m, []),
            }
            for m in METRIC_NAMES
        ],
    }


def no_evidence(reason: str) -> dict[str, Any]:
    """A repeat page's evidence when there is none to show, saying why."""
    return {
        "transcript": None,
        "transcriptFile": None,
        "transcriptError": reason,
        "grader": None,
        "files": [],
    }


def repeat_evidence(folder: Path, url: Callable[[Path], str | None]) -> dict[str, Any]:
    """The transcript, grader output and raw files of one repeat's artifact folder.

    `url` gives a file's link (None: the viewer may not serve it, and does
    not read it either). A missing folder or an unreadable summary is said,
    never shown as an empty transcript.
    """
    if not folder.is_dir():
        return no_evidence(f"the artifact folder {folder.name} is not there")
    out = no_evidence("")
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    links = {p.name: url(p) for p in files}
    out["files"] = [
        {"name": p.name, "size": p.stat().st_size, "url": links[p.name]}
        for p in files
        if links[p.name] is not None
    ]
    for name in SUMMARY_FILES:
        path = folder / name
        if links.get(name) is not None:
            out["transcriptFile"] = name
            out["transcriptError"] = None
            try:
                out["transcript"] = transcript(read_summary(path))
            except RunSummaryError as exc:
                out["transcriptError"] = f"{name}: {exc.field}: {exc.message}"
            break
    else:
        out["transcriptError"] = (
            "no run summary among the artifacts (" + ", ".join(SUMMARY_FILES) + ")"
        )
    if links.get(GRADER_LOG) is not None:
        with open(folder / GRADER_LOG, encoding="utf-8", errors="replace") as handle:
            text = handle.read(MAX_SHOWN_CHARS + 1)
        shown, cut = _cut(text, MAX_SHOWN_CHARS)
        out["grader"] = {"text": shown, "truncated": cut, "url": links[GRADER_LOG]}
    return out
