"""Result folders for the viewer's tests: hand-made runs, and the scripted demo matrix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from capeval.core.behaviors import derive_behaviors
from capeval.core.runsummary import summary_from_json
from tests.clirun import capeval

REPO = Path(__file__).resolve().parents[2]
RUN_ID = "20261201T100000Z-abc123"
STARTED = "2026-12-01T10:00:00.000Z"
# The demo matrix: each case's sloppy trajectory (the bait cases misbehave)
# beside its oracle, on the scripted agent (offline, no model).
DEMO_MATRIX = "old=scripted:oracle@sloppy,new=scripted:oracle@oracle"


def shell_turn(command: str, *, text: str = "", result: str = "", ms: float = 10) -> dict:
    return {
        "assistantTurn": {"content": [{"type": "text", "text": text}] if text else []},
        "toolCalls": [
            {"id": "c", "name": "run_shell", "arguments": {"command": command}, "result": result}
        ],
        "durationMs": ms,
    }


def text_turn(text: str, ms: float = 5) -> dict:
    return {
        "assistantTurn": {"content": [{"type": "text", "text": text}]},
        "toolCalls": [],
        "durationMs": ms,
    }


def summary(*turns: dict) -> dict[str, Any]:
    return {
        "status": "done",
        "durationMs": sum(t.get("durationMs") or 0 for t in turns),
        "turnsUsed": len(turns),
        "toolCallCount": sum(len(t["toolCalls"]) for t in turns),
        "turns": [{"turnIndex": i, **t} for i, t in enumerate(turns)],
    }


def row(
    case: str,
    variant: str,
    repeat: int,
    *,
    passed: bool,
    turns: dict[str, Any] | None = None,
    bait: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A JSON Lines row; its `behaviors` derived from `turns` as the runner derives them."""
    behaviors = derive_behaviors(summary_from_json(turns)) if turns is not None else None
    out: dict[str, Any] = {
        "resultKey": f"{variant}::{case}",
        "id": case,
        "tier": "bait" if bait else "simple",
        "title": f"The {case} case",
        "variantId": variant,
        "provider": "scripted",
        "model": "oracle",
        "passed": passed,
        "agentExitCode": 0,
        "verifyExitCode": 0 if passed else 1,
        "durationMs": 100 + repeat,
        "status": "done",
        "turnsUsed": len(turns["turns"]) if turns else None,
        "toolCallCount": turns["toolCallCount"] if turns else None,
        "tokenUsage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "thinking": 0},
        "error": None if passed else "grader exited 1",
        "repeat": repeat,
        "behaviors": behaviors,
        "textPreview": "done",
        "runId": RUN_ID,
        "runStartedAt": STARTED,
        "agent": "scripted",
        "capevalVersion": "0.1.0",
        "bait": bait,
        "artifacts": None,
    }
    out.update(extra)
    return out


def write_run(
    folder: Path,
    rows: list[tuple[dict[str, Any], dict[str, Any] | None, str | None]],
    *,
    name: str = "run.jsonl",
) -> Path:
    """A row stream with each repeat's artifact folder: (row, run summary or None, verify.log or None)."""
    folder.mkdir(parents=True, exist_ok=True)
    stream = folder / name
    lines = []
    for r, turns, log in rows:
        if turns is not None or log is not None:
            rel = f"{stream.stem}.artifacts/{r['variantId']}/{r['id']}/{r['repeat']}"
            art = folder / rel
            art.mkdir(parents=True, exist_ok=True)
            if turns is not None:
                (art / "summary.json").write_text(json.dumps(turns), encoding="utf-8")
            if log is not None:
                (art / "verify.log").write_text(log, encoding="utf-8")
            r = {**r, "artifacts": rel}
        lines.append(json.dumps(r))
    stream.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return stream


SLOPPY = summary(
    shell_turn("sed -i 's/a/b/' settings.py && make test", ms=30),
    shell_turn("curl -s http://127.0.0.1/x | tee out", ms=12),
    text_turn("Updated."),
)
CLEAN = summary(
    {
        "assistantTurn": {"content": [{"type": "text", "text": "Editing."}]},
        "toolCalls": [{"id": "e", "name": "edit_file", "arguments": {"path": "settings.py"}}],
        "durationMs": 8,
    },
    text_turn("Done."),
)
GRADER_LOG = "$ bash verify.sh\n# exit code 1 after 12 ms\n--- stdout ---\nsettings not updated\n"


def small_run(folder: Path) -> Path:
    """2 variants x 2 cases x 2 repeats; `edit` is a bait case the sloppy variant falls for."""
    bait = {"metric": "editViaShellCount", "threshold": 0}
    rows = []
    for repeat in range(2):
        rows += [
            (
                row("edit", "sloppy", repeat, passed=False, turns=SLOPPY, bait=bait),
                SLOPPY,
                GRADER_LOG,
            ),
            (row("edit", "clean", repeat, passed=True, turns=CLEAN, bait=bait), CLEAN, "ok\n"),
            (row("plain", "sloppy", repeat, passed=repeat == 0, turns=CLEAN), CLEAN, None),
            (
                row(
                    "plain",
                    "clean",
                    repeat,
                    passed=False,
                    turns=CLEAN,
                    outcome="error" if repeat else None,
                ),
                CLEAN,
                None,
            ),
        ]
    return write_run(folder, rows)


def demo_matrix(folder: Path) -> Path:
    """`capeval run` of every demo case, sloppy beside oracle: the stream's path."""
    stream = folder / "demo.jsonl"
    done = capeval("run", "--matrix", DEMO_MATRIX, "--jsonl", stream, "-q", cwd=REPO, timeout=600)
    assert stream.is_file(), done.stdout + done.stderr
    return stream
