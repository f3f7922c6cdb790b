"""`capeval run --resume PATH`: the stream's stored plan, checked against today's.

A resumed run must be the same run: the plan beside the stream is read back,
the workspace and flags of today are compared with it, and only the
(variant, case, repeat) triples the stream does not hold yet are run.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from capeval.core.row import Row, triple
from capeval.results.errors import ResultFileError
from capeval.runner.options import RunError, RunOptions, jsonable, new_run_id, plan_path
from capeval.runner.planfile import (
    SHAPE_FIELDS,
    SHAPE_FLAGS,
    plan_problem,
)
from capeval.runner.repeat import now_iso


def _stored_path(stream: Path, key: str) -> Path | None:
    """A path a stream's plan recorded (relative to the stream's folder), or None."""
    try:
        stored = json.loads(plan_path(stream).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    rel = stored.get(key) if isinstance(stored, dict) else None
    if not isinstance(rel, str) or not rel:
        return None
    return (stream.resolve().parent / rel).resolve()


def stored_config(stream: Path) -> Path | None:
    """The `--config` file a stream's run was started with, when its plan says."""
    return _stored_path(stream, "config")


def stored_root(stream: Path) -> Path | None:
    """The workspace a stream's run used, when its plan says and it still is one."""
    from capeval.workspace import is_workspace

    root = _stored_path(stream, "root")
    return root if root is not None and is_workspace(root) else None


def stored_resolution(stream: Path | str) -> dict[str, Any] | None:
    """The resolution a stream's plan recorded, or None for plans that predate it."""
    meta = plan_path(Path(stream))
    try:
        stored = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    resolved = stored.get("resolved") if isinstance(stored, dict) else None
    return resolved if isinstance(resolved, dict) else None


def stored_sharding(stream: Path | str) -> dict[str, Any] | None:
    """The `sharding` block a shard's plan recorded (what cut it), or None."""
    meta = plan_path(Path(stream))
    try:
        stored = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    block = stored.get("sharding") if isinstance(stored, dict) else None
    return block if isinstance(block, dict) else None


def refuse_changed_plan(frozen: dict[str, Any], now: dict[str, Any], stream: Path) -> None:
    """Rows of one run must come from one plan: a changed config would mix two in a stream."""
    for field_name in ("variants", "agentTimeoutS", "verifyTimeoutS", "maxTurns"):
        if field_name in frozen and frozen[field_name] != now[field_name]:
            raise RunError(
                f"--resume {stream}: since the run started, its "
                f"{_describe_change(field_name, frozen, now)} (capeval.toml or the cases "
                "changed); restore the "
                "configuration to finish this run, or start a new run"
            )


def _describe_change(field_name: str, frozen: dict[str, Any], now: dict[str, Any]) -> str:
    if field_name != "variants":
        return f"{field_name} changed from {frozen[field_name]!r} to {now[field_name]!r}"
    before = {v.get("id"): v for v in frozen["variants"] if isinstance(v, dict)}
    after = {v["id"]: v for v in now["variants"]}
    for vid, then in before.items():
        if vid not in after:
            return f"variant {vid!r} is gone (now: {', '.join(map(repr, after)) or 'none'})"
        for key in ("provider", "model", "agent", "agentType", "agentTrajectory"):
            if then.get(key) != after[vid].get(key):
                return (
                    f"variant {vid!r} {key} changed from {then.get(key)!r} "
                    f"to {after[vid].get(key)!r}"
                )
    extra = sorted(set(after) - set(before))
    return f"matrix changed (new variant {extra[0]!r})" if extra else "matrix changed"


def resume(options: RunOptions) -> tuple[RunOptions, list[Row], str, str, list[str]]:
    """Options filled from the stream's stored plan, its rows, its run id, and what
    reading it skipped."""
    from capeval.results.jsonl import read_jsonl

    path = Path(options.resume)  # type: ignore[arg-type]
    if not path.is_file():
        raise RunError(
            f"--resume {path}: no such file; pass the .jsonl stream of the run to finish"
        )
    if _is_v3(path):
        raise RunError(
            f"--resume {path}: this is a v3 results file (written by --out); --resume takes "
            "the run's .jsonl row stream, which holds every finished repeat"
        )
    rows, skipped = read_jsonl(path)
    stored: dict[str, Any] = {}
    meta = plan_path(path)
    given_shape = any(getattr(options, name) not in (None, ()) for name in SHAPE_FIELDS)
    if rows and not meta.is_file() and not given_shape:
        # Today's defaults would be some other run: other cases, repeats or
        # variants appended to this one's rows, and nothing would say so.
        raise RunError(
            f"--resume {path}: its plan {meta.name} is missing, so which repeats the run "
            "wanted is unknown; put it back beside the stream, or pass the run's flags "
            "again (--case, --tier, --matrix, --repeats, ...)"
        )
    if meta.is_file():
        stored = _read_plan(meta, path, holds_rows=bool(rows))
    _refuse_changed_flags(options, stored, path, meta)
    updates: dict[str, Any] = {}
    for name in SHAPE_FIELDS:
        given = getattr(options, name)
        if name in stored and (given is None or given == ()):
            value = stored[name]
            updates[name] = tuple(value) if isinstance(value, list) else value
    if options.artifacts is None and "artifacts" in stored:
        kept = stored["artifacts"]
        if kept is False:
            updates["artifacts"] = False
        elif isinstance(kept, str) and kept:
            updates["artifacts"] = path.parent / kept
    options = replace(options, **updates)
    run_id = stored.get("runId") or next((r["runId"] for r in rows if r.get("runId")), None)
    refuse_other_runs(rows, run_id, path)
    started = stored.get("runStartedAt") or next(
        (r["runStartedAt"] for r in rows if r.get("runStartedAt")), None
    )
    return options, rows, run_id or new_run_id(), started or now_iso(), skipped


def _read_plan(meta: Path, stream: Path, *, holds_rows: bool) -> dict[str, Any]:
    """The stream's stored plan, refused unless it has the shape `write_plan` writes
    (`capeval.runner.planfile` says which and why)."""
    fix = f"delete {meta} and pass the run's flags again (--case, --tier, --matrix, --repeats, ...)"
    try:
        stored = json.loads(meta.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as exc:
        problem: str | None = f"not valid JSON ({exc})"
    except OSError as exc:
        problem = f"cannot be read ({exc.strerror or exc})"
    else:
        problem = plan_problem(stored, holds_rows=holds_rows)
    if problem is not None:
        raise RunError(f"--resume {stream}: its plan {meta}: {problem}; {fix}")
    return dict(stored)


def standing_rows(
    rows: list[Row], wanted: set[tuple[str, str, int]], *, retry_errors: bool
) -> tuple[list[Row], dict[tuple[str, str, int], Row]]:
    """(the rows of a stream that finish repeats of the plan, the `error` rows to run again).

    Supersession first (`capeval.results.supersede`): an `error` row a later row
    of its repeat supersedes is no longer the repeat's. With `retry_errors`, a
    repeat whose last row is an `error` is not finished: it runs again, and its
    new row will supersede that one.
    """
    from capeval.core.outcome import ERROR, row_outcome
    from capeval.results.supersede import supersede

    done: list[Row] = []
    again: dict[tuple[str, str, int], Row] = {}
    for row in supersede(rows):
        key = triple(row)
        if key not in wanted:
            continue
        if retry_errors and row_outcome(row) == ERROR:
            again[key] = row
        else:
            done.append(row)
    return done, again


def refuse_other_runs(rows: list[Row], run_id: str | None, stream: Path) -> None:
    """A stream joined by hand from two runs must not be resumed as one.

    The other run's rows would count as this run's finished repeats (a repeat
    it never ran, passed or failed as another agent or commit did), and the
    gate would then judge them as this run.
    """
    others = sorted({str(r["runId"]) for r in rows if r.get("runId")} - {run_id})
    if others:
        raise RunError(
            f"--resume {stream}: it holds rows of {len(others) + 1} runs (runId {run_id}, "
            f"and {', '.join(others)}), so which of this run's repeats are done is unknown; "
            "move the other run's rows (their runId says which) to a file of their own and "
            "resume again"
        )


def _refuse_changed_flags(
    options: RunOptions, stored: dict[str, Any], stream: Path, meta: Path
) -> None:
    """A flag given again on --resume must say what the stored plan says.

    Otherwise it quietly replaced the plan: `--repeats 1` on a run of 2 left
    the stream's second repeats out of the table, the exit code and `--out`
    (a failure there no longer failed the run), and `--tier` did the same to
    whole cases; the rewritten plan then forgot them for every later resume.
    """
    for name in SHAPE_FIELDS:
        given = getattr(options, name)
        if given is None or given == () or name not in stored:
            continue
        then, now = stored[name], jsonable(given)
        if name in ("cases", "tiers") and isinstance(then, list):
            same = sorted(map(str, then)) == sorted(map(str, now))
        else:
            same = then == now
        if not same:
            flag = SHAPE_FLAGS[name]
            was = "not given" if then in (None, []) else repr(then)
            raise RunError(
                f"--resume {stream}: {_shown_flag(flag, now)} differs from the run's plan "
                f"({meta}: {was}); drop {flag} to finish the run as it was started, "
                "or start a new run on another --jsonl"
            )


def _shown_flag(flag: str, value: Any) -> str:
    if value is True:
        return flag
    return " ".join(f"{flag} {v}" for v in value) if isinstance(value, list) else f"{flag} {value}"


def _is_v3(path: Path) -> bool:
    from capeval.results.formats import format_of

    try:
        return format_of(path) == "v3"
    except ResultFileError:
        return False  # reading it as a stream names the problem
