"""The `scripted` agent: plays a reference trajectory instead of asking a model.

It goes through the same product path as a real agent CLI: a child process in
the workdir, in its own process group under the agent timeout, whose run
summary comes back through a file outside the workdir. So a scripted run
exercises the runner, capture, behaviors and gate exactly as a real one does,
offline and deterministically.

The trajectory is `config.trajectory` when the agent entry names one (an
agent *build* compared on any provider/model), else the variant's model
(`scripted:oracle` plays `trajectories/oracle.json`, else the case's shell
oracle `solution/solve.sh` as one `run_shell` turn).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from capeval import __version__
from capeval.agents.base import AgentRequest, AgentResult
from capeval.agents.trajectory import TrajectoryError, load_played, played_file
from capeval.core.agentconfig import AgentConfig, trajectory_problem

if TYPE_CHECKING:
    from capeval.core.turns import RunSummary

SUMMARY_FILE = "scripted-summary.json"
PROMPT_FILE = "scripted-prompt.txt"
TRAJECTORY_FILE = "scripted-trajectory.json"
SOLUTION_DIR = "scripted-solution"
PREVIEW_CHARS = 300
# The agent must discover per-repeat secrets itself (the web bait case reads
# the token from the HTTP fixture); the grader alone gets them.
_HIDDEN_ENV = ("EVAL_HTTP_TOKEN",)


class ScriptedAdapter:
    """Adapter for `type = "scripted"` agents."""

    def __init__(self, config: AgentConfig, *, play: Path | None = None) -> None:
        self.config = config
        # A file to play whatever the trajectory's name resolves to: grader
        # honesty checks each oracle of a case that ships both kinds.
        self.play = play

    def version(self) -> str | None:
        return f"scripted-{__version__}"

    def trajectory_name(self, request: AgentRequest) -> str:
        return self.config.trajectory or request.model

    def run(self, request: AgentRequest) -> AgentResult:
        from capeval.core.isolation import Isolation
        from capeval.isolation.environment import agent_environment
        from capeval.isolation.limits import LimitError
        from capeval.isolation.sandbox import Confinement, Sandbox
        from capeval.proc.reaper import remove_tree

        name = self.trajectory_name(request)
        session = str(uuid.uuid4())
        problem = trajectory_problem(name)
        if problem:
            return self._failed(request, session, f"scripted agent: {problem}")
        path = self.play or played_file(request.case_dir, name)
        try:
            load_played(path, name=name, file=_label(path))
        except TrajectoryError as exc:
            return self._failed(request, session, f"scripted agent: {exc}")

        capture = Path(request.capture_dir)
        capture.mkdir(parents=True, exist_ok=True)
        summary_path = capture / SUMMARY_FILE
        summary_path.unlink(missing_ok=True)
        prompt_path = capture / PROMPT_FILE
        prompt_path.write_text(request.prompt, encoding="utf-8")
        # A copy beside the prompt: in a sandbox the case folder is out of sight.
        # A shell oracle's folder goes whole: its data files sit beside it.
        if path.suffix == ".sh":
            copied = capture / SOLUTION_DIR
            shutil.copytree(path.parent, copied, symlinks=True)
            played = copied / path.name
        else:
            copied = played = capture / TRAJECTORY_FILE
            shutil.copyfile(path, played)
        sandbox = request.sandbox or Sandbox(Isolation(), Confinement("agent", ()))
        argv = [
            *sandbox.python(),
            "-P",  # the workdir must not shadow modules (a fixture's json.py)
            "-m",
            "capeval.agents.scripted_player",
            "--solve-script" if path.suffix == ".sh" else "--trajectory",
            str(played),
            "--summary",
            str(summary_path),
            "--name",
            name,
            "--prompt-file",
            str(prompt_path),
        ]
        if request.http_url:
            argv += ["--http-url", request.http_url]
        home = request.home or os.environ.get("HOME") or str(capture)
        base = agent_environment(needs=(), env_pass=request.env_pass, home=home)
        env = {**base, **sandbox.python_env(), **request.env, **self.config.env}
        for key in _HIDDEN_ENV:
            env.pop(key, None)
        try:
            proc = sandbox.run(argv, cwd=request.workdir, env=env, timeout_s=request.timeout_s)
        except LimitError as exc:
            return self._failed(request, session, f"sandbox: {exc}")
        finally:  # the case's own files, no evidence of the run
            if copied.is_dir():
                remove_tree(copied)
            else:
                copied.unlink(missing_ok=True)

        summary, summary_error = _read(summary_path)
        if proc.timed_out:
            status = "timeout"
        elif summary is not None:
            status = summary.status
        else:
            status = "cancelled" if proc.cancelled else "failed"
        error = None
        if proc.timed_out:
            error = f"scripted agent timed out after {request.timeout_s:g} s"
        elif summary is None:
            stderr = proc.stderr.decode("utf-8", errors="replace").strip()[-500:]
            error = f"scripted agent: {summary_error}" + (f"; stderr: {stderr}" if stderr else "")
        elif summary.error:
            error = summary.error
        return AgentResult(
            exitCode=proc.exit_code,
            status=status,
            sessionId=session,
            provider=request.provider,
            model=request.model,
            turnsUsed=summary.turnsUsed if summary else None,
            toolCallCount=summary.toolCallCount if summary else None,
            tokenUsage=summary.tokenUsage if summary else None,
            durationMs=proc.duration_ms,
            textPreview=_preview(summary),
            summary=summary,
            error=error,
            agentVersion=self.version(),
        )

    def _failed(self, request: AgentRequest, session: str, error: str) -> AgentResult:
        return AgentResult(
            exitCode=None,
            status="failed",
            sessionId=session,
            provider=request.provider,
            model=request.model,
            error=error,
            agentVersion=self.version(),
        )


def _read(path: Path) -> tuple[RunSummary | None, str | None]:
    from capeval.core.runsummary import RunSummaryError
    from capeval.results.runsummary import read_summary

    if not path.is_file():
        return None, "no run summary was written"
    try:
        return read_summary(path), None
    except (RunSummaryError, OSError, ValueError) as exc:
        return None, f"unreadable run summary: {exc}"


def _preview(summary: RunSummary | None) -> str:
    """The last thing the agent said, as a real CLI's final message."""
    if summary is None:
        return ""
    for turn in reversed(summary.turns):
        for text in reversed(turn.texts):
            if text.strip():
                return text.strip()[:PREVIEW_CHARS]
    return ""


def _label(path: Path) -> str:
    """Name a trajectory by its path from the cases directory when possible."""
    for parent in path.parents:
        if parent.parts[-3:] == ("evals", "capability", "cases"):
            return path.relative_to(parent.parent.parent.parent).as_posix()
    return str(path)
