"""The `scripted` agent's process: plays one trajectory for real in the workdir.

Run by `ScriptedAdapter` as `python -P -m capeval.agents.scripted_player ...`
with the workdir as cwd, in its own process group, so a timeout stops it
(and every shell it started) exactly like a real agent CLI. It executes each
tool call for real, times each turn, and writes the run summary (the corbits
shape of `capeval.core.turns.RunSummary`) to a file outside the workdir.

Kept to the standard library plus `capeval.core.turns` and the trajectory parser:
it starts once per repeat, so its import time is per-repeat overhead.

Turn duration = the turn's `thinkMs` (simulated model time) plus the wall time
of its tool calls; a background `task` runs in a thread and is not charged to
the turn that started it (only to a turn that waits for its result).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from capeval.agents.trajectory import (
    ORACLE,
    Call,
    TemplateError,
    Trajectory,
    parse_trajectory,
    render,
    shell_trajectory,
)
from capeval.core.turns import RunSummary, TokenUsage, ToolCall, Turn

SHELL_TIMEOUT_S = 600.0
FETCH_TIMEOUT_S = 30.0
# Results are kept whole for templates; the recorded copy is truncated
# (docs/result-formats.md#the-run-summary: tool results optional, truncated).
RECORDED_RESULT_CHARS = 2000
GREP_MAX_LINES = 200
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Outcome:
    """What a call returned: its text (for templates) and whether it succeeded."""

    text: str
    ok: bool = True

    def recorded(self) -> str:
        text = self.text if self.ok else f"error: {self.text}"
        if len(text) > RECORDED_RESULT_CHARS:
            text = text[:RECORDED_RESULT_CHARS] + f"... [{len(text)} chars]"
        return text


class Stopped(Exception):
    """SIGTERM arrived (the runner's timeout): record what ran so far and leave."""


class Player:
    """Executes calls in one workdir; call results are shared across threads."""

    def __init__(self, workdir: Path, http_url: str | None, env: Mapping[str, str]) -> None:
        self.workdir = workdir.resolve()
        self.http_url = http_url
        self.env = dict(env)
        self._results: dict[str, Outcome] = {}
        self._done: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self._background: list[threading.Thread] = []

    # -- results registry -----------------------------------------------------

    def _event(self, call_id: str) -> threading.Event:
        with self._lock:
            return self._done.setdefault(call_id, threading.Event())

    def _finish(self, call_id: str, outcome: Outcome) -> None:
        with self._lock:
            self._results[call_id] = outcome
        self._event(call_id).set()

    def result(self, call_id: str) -> str:
        """An earlier call's text; waits when it belongs to a running background task."""
        self._event(call_id).wait()
        with self._lock:
            return self._results[call_id].text

    def wait_background(self) -> None:
        for thread in self._background:
            thread.join()

    # -- calls ------------------------------------------------------------------

    def execute(self, call: Call) -> tuple[Any, Outcome]:
        """Run one call; returns (the arguments as sent, its outcome). Never raises."""
        try:
            if call.name == "task":
                own = {k: v for k, v in call.arguments.items() if k != "calls"}
                args = render(own, http_url=self.http_url, result=self.result)
                args["calls"] = list(call.arguments.get("calls") or [])
            else:
                args = render(dict(call.arguments), http_url=self.http_url, result=self.result)
        except TemplateError as exc:
            outcome = Outcome(str(exc), ok=False)
            self._finish(call.id, outcome)
            return dict(call.arguments), outcome
        try:
            if call.name == "task":
                outcome = self._task(call, args)
            else:
                outcome = getattr(self, f"_{call.name}")(args)
        except Stopped:
            raise
        except Exception as exc:  # a tool failing is a result the agent sees, not a crash
            outcome = Outcome(f"{type(exc).__name__}: {exc}", ok=False)
        if not (call.name == "task" and args.get("background")):
            self._finish(call.id, outcome)
        return args, outcome

    def _path(self, rel: str) -> Path:
        path = (self.workdir / rel).resolve()
        if not path.is_relative_to(self.workdir):
            raise ValueError(f"path {rel!r} is outside the workdir")
        return path

    def _run_shell(self, args: Mapping[str, Any]) -> Outcome:
        timeout = args.get("timeoutMs", SHELL_TIMEOUT_S * 1000) / 1000.0
        # Output goes to a file, not a pipe: a background job (`cmd &`) keeping
        # the pipe open would otherwise block the call until it exits.
        with tempfile.TemporaryFile() as out:
            try:
                proc = subprocess.run(
                    ["bash", "-c", args["command"]],
                    cwd=self.workdir,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    timeout=timeout,
                )
                code: int | None = proc.returncode
            except subprocess.TimeoutExpired:
                code = None
            out.seek(0)
            text = out.read().decode("utf-8", errors="replace")
        if code is None:
            return Outcome(f"{text}\n(timed out after {timeout:g} s)", ok=False)
        if code != 0:
            return Outcome(f"{text}\n(exit code {code})", ok=False)
        return Outcome(text)

    def _read_file(self, args: Mapping[str, Any]) -> Outcome:
        return Outcome(self._path(args["path"]).read_text(encoding="utf-8", errors="replace"))

    def _write_file(self, args: Mapping[str, Any]) -> Outcome:
        path = self._path(args["path"])
        path.parent.mkdir(parents=True, exist_ok=True)
        data = args["content"].encode("utf-8")
        path.write_bytes(data)
        return Outcome(f"wrote {len(data)} bytes to {args['path']}")

    def _edit_file(self, args: Mapping[str, Any]) -> Outcome:
        path = self._path(args["path"])
        text = path.read_text(encoding="utf-8")
        count = text.count(args["old"])
        if count != 1:
            return Outcome(
                f"the old text occurs {count} times in {args['path']}; it must occur exactly once",
                ok=False,
            )
        path.write_text(text.replace(args["old"], args["new"]), encoding="utf-8")
        return Outcome(f"edited {args['path']}")

    def _grep(self, args: Mapping[str, Any]) -> Outcome:
        regex = re.compile(args["pattern"])
        base = self._path(args.get("path", "."))
        glob = args.get("glob")
        files = [base] if base.is_file() else sorted(_files(base))
        lines: list[str] = []
        for file in files:
            if glob and not fnmatch.fnmatch(file.name, glob):
                continue
            try:
                content = file.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue  # binary or unreadable: grep skips it too
            rel = file.relative_to(self.workdir).as_posix()
            lines += [
                f"{rel}:{n}:{line}"
                for n, line in enumerate(content.splitlines(), 1)
                if regex.search(line)
            ]
        if len(lines) > GREP_MAX_LINES:
            lines = [*lines[:GREP_MAX_LINES], f"... {len(lines) - GREP_MAX_LINES} more matches"]
        return Outcome("\n".join(lines) if lines else "no matches")

    def _list_dir(self, args: Mapping[str, Any]) -> Outcome:
        base = self._path(args.get("path", "."))
        entries = sorted(
            p.name + ("/" if p.is_dir() else "") for p in base.iterdir() if p.name != ".git"
        )
        return Outcome("\n".join(entries))

    def _web_fetch(self, args: Mapping[str, Any]) -> Outcome:
        # Imported here: urllib.request costs ~30 ms, paid only by web cases.
        import urllib.error
        import urllib.parse
        import urllib.request

        url = args["url"]
        host = urllib.parse.urlsplit(url).hostname or ""
        if not _is_loopback(host):
            # Hermetic by design: scripted runs must never reach the network.
            return Outcome(
                f"refusing {url}: the scripted agent only fetches from loopback", ok=False
            )
        # No proxies: a proxy from the environment must not see loopback traffic.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(url, timeout=FETCH_TIMEOUT_S) as resp:
                body = resp.read().decode("utf-8", errors="replace")
        except urllib.error.HTTPError as exc:
            return Outcome(f"HTTP {exc.code} for {url}", ok=False)
        except (urllib.error.URLError, OSError) as exc:
            return Outcome(f"fetching {url} failed: {exc}", ok=False)
        return Outcome(body)

    def _task(self, call: Call, args: Mapping[str, Any]) -> Outcome:
        """A sub-agent: its calls run in order; in a thread when `background`."""

        def work() -> Outcome:
            parts = []
            ok = True
            for child in call.nested:
                _, outcome = self.execute(child)
                ok = ok and outcome.ok
                parts.append(f"[{child.id}] {outcome.recorded()}")
            return Outcome("\n".join(parts), ok=ok)

        if not args.get("background"):
            return work()

        def background() -> None:
            try:
                outcome = work()
            except Exception as exc:  # pragma: no cover - execute() does not raise
                outcome = Outcome(f"{type(exc).__name__}: {exc}", ok=False)
            self._finish(call.id, outcome)

        thread = threading.Thread(target=background, name=f"task-{call.id}", daemon=True)
        self._background.append(thread)
        thread.start()
        return Outcome(f"task {call.id} started in the background")


def _files(base: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        out += [Path(dirpath) / f for f in filenames]
    return out


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def estimate_tokens(trajectory: Trajectory, prompt: str, played: int | None = None) -> TokenUsage:
    """Deterministic stand-in for token counts: characters / 4, rounded up.

    Input: the prompt, re-read on every turn. Output: the turns' texts and
    their calls' arguments as written in the trajectory (before templates, so
    the per-repeat port and token do not move the count). `played` is the
    number of turns a stopped run got through: turns it never reached used
    no tokens.
    """
    scripts = trajectory.turns if played is None else trajectory.turns[:played]
    turns = max(len(scripts), 1) if played is None else len(scripts)
    written = sum(
        len(turn.text) + sum(len(json.dumps(c.arguments, sort_keys=True)) for c in turn.calls)
        for turn in scripts
    )
    return TokenUsage(
        input=math.ceil(len(prompt) / CHARS_PER_TOKEN) * turns,
        output=math.ceil(written / CHARS_PER_TOKEN),
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def play(
    trajectory: Trajectory,
    *,
    workdir: Path,
    prompt: str = "",
    http_url: str | None = None,
    env: Mapping[str, str] | None = None,
) -> RunSummary:
    """Play every turn for real and return the run summary.

    On `Stopped` (SIGTERM) the turns played so far are returned with status
    `cancelled`, so a timed-out run still shows what it did.
    """
    player = Player(workdir, http_url, os.environ if env is None else env)
    started_at, t0 = _now(), time.monotonic()
    turns: list[Turn] = []
    status, error = trajectory.status, trajectory.error
    played: int | None = None  # all of them, unless stopped
    try:
        for index, script in enumerate(trajectory.turns):
            start = time.monotonic()
            if script.thinkMs:
                time.sleep(script.thinkMs / 1000.0)
            calls = []
            failed: Outcome | None = None
            for call in script.calls:
                args, outcome = player.execute(call)
                calls.append(ToolCall(call.id, call.name, args, result=outcome.recorded()))
                if trajectory.stop_on_error and not outcome.ok:
                    failed = outcome
                    break
            texts = (script.text,) if script.text else ()
            duration = round((time.monotonic() - start) * 1000.0, 1)
            turns.append(Turn(index, texts, tuple(calls), duration))
            if failed is not None:
                what = trajectory.description or f"turn {index}"
                status, error = "failed", f"{what} failed: {failed.text.strip()[-500:]}"
                played = len(turns)
                break
        player.wait_background()
    except Stopped:
        status, error = "cancelled", f"stopped by SIGTERM after {len(turns)} turns"
        played = len(turns)
    return RunSummary(
        status=status,
        startedAt=started_at,
        finishedAt=_now(),
        durationMs=round((time.monotonic() - t0) * 1000.0, 1),
        turnsUsed=len(turns),
        tokenUsage=estimate_tokens(trajectory, prompt, played),
        toolCallCount=sum(len(t.toolCalls) for t in turns),
        turns=tuple(turns),
        error=error,
    )


def write_summary(summary: RunSummary, path: Path) -> None:
    """Atomically: the adapter must never read half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(summary.to_json(), indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _on_sigterm(signum: int, frame: object) -> None:
    raise Stopped()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m capeval.agents.scripted_player",
        description="Play a validated trajectory in the current directory.",
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--trajectory", type=Path, help="a trajectory JSON file")
    which.add_argument(
        "--solve-script", type=Path, help="a shell oracle (solution/solve.sh), played as one turn"
    )
    parser.add_argument(
        "--summary", required=True, type=Path, help="where to write the run summary"
    )
    parser.add_argument("--name", help="trajectory name (default: the file stem)")
    parser.add_argument("--prompt-file", type=Path, help="the prompt, for the token estimate")
    parser.add_argument("--http-url", help="value of {{HTTP_URL}}")
    ns = parser.parse_args(argv)

    signal.signal(signal.SIGTERM, _on_sigterm)
    prompt = ns.prompt_file.read_text(encoding="utf-8") if ns.prompt_file else ""
    source = ns.solve_script or ns.trajectory
    try:
        if ns.solve_script is not None:
            trajectory = shell_trajectory(ns.solve_script.resolve(), ns.name or ORACLE)
        else:
            obj = json.loads(ns.trajectory.read_text(encoding="utf-8"))
            trajectory = parse_trajectory(obj, ns.name or ns.trajectory.stem)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        # The adapter validates first; this guards direct use of the player.
        summary = RunSummary(status="failed", turnsUsed=0, toolCallCount=0, error=f"{exc}")
        write_summary(summary, ns.summary)
        print(f"scripted_player: cannot play {source}: {exc}", file=sys.stderr)
        return 2
    summary = play(trajectory, workdir=Path.cwd(), prompt=prompt, http_url=ns.http_url)
    write_summary(summary, ns.summary)
    if summary.status == "cancelled" and trajectory.status != "cancelled":
        return 128 + signal.SIGTERM
    if summary.status == "failed" and trajectory.status != "failed":
        return 1  # a shell oracle that exited non-zero
    return trajectory.exitCode


if __name__ == "__main__":
    sys.exit(main())
