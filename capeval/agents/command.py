"""Any agent CLI run from a command template, its turn stream from a post-run hook.

This is how a product like corbits plugs in without capeval knowing its flags:

    [agents.corbits]
    type = "command"
    command = "corbits exec --cwd {workdir} --provider {provider} --model {model} --dangerously-skip-permissions --force {prompt}"
    hook = ".corbits/hooks/eval-run-capture.sh"

The template is split with shlex first and the placeholders (`{workdir}`,
`{prompt}`, `{provider}`, `{model}`, `{max_turns}`, `{hook}`) are substituted
per argument afterwards, so `{prompt}` is always exactly one argv element
and never passes through a shell, whatever quotes or `$(...)` it contains.
An argument whose placeholder has no value (`{max_turns}` without a budget)
is dropped, together with the flag right before it when the placeholder was
the whole argument (`--max-turns {max_turns}` disappears entirely).

Before the run capeval writes a small hook script at the configured path
inside the workdir (and hides it from `git status` via `.git/info/exclude`).
The agent gets the hook's absolute path as `CAPEVAL_HOOK` (and as `{hook}` in
the template). The product calls `sh <hook> postRun` with its run summary JSON on stdin;
the hook stores it *outside* the workdir (its destination is baked into the
script), so neither the agent nor the grader can see or alter it. Other hook
kinds (`postTurn`, ...) are read and ignored. No hook call means no summary:
behaviors are null and `turnsUsed` is unknown, so a budgeted case fails
closed in the pass rule instead of passing on missing data.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from capeval.agents.base import AgentRequest, AgentResult
from capeval.agents.cliadapter import (
    agent_environment,
    classify,
    launch,
    probe_version,
    resolve_binary,
    stderr_tail,
)
from capeval.agents.infra import from_text
from capeval.agents.streams import preview
from capeval.core.agentconfig import DEFAULT_HOOK, AgentConfig, hook_problem
from capeval.core.turns import RunSummary

CAPTURE_FILE = "run-summary.json"
_PLACEHOLDER = re.compile(r"\{(workdir|prompt|provider|model|max_turns|hook)\}")
# The variable that tells the agent where its capture hook is.
HOOK_ENV = "CAPEVAL_HOOK"


class CommandTemplateError(ValueError):
    """A command template or hook path that cannot work; the message names the fix."""


def render_command(
    template: str, values: Mapping[str, str | None], extra_args: tuple[str, ...] = ()
) -> list[str]:
    """argv from a template: shlex split first, then placeholders per argument."""
    try:
        words = shlex.split(template)
    except ValueError as exc:
        raise CommandTemplateError(f"command template {template!r} does not split: {exc}") from exc
    if not words:
        raise CommandTemplateError(
            "command template is empty: set `command` in the [agents.NAME] table"
        )
    argv: list[str] = []
    previous: str | None = None  # the previous *template* word, before substitution
    for word in [*words, *extra_args]:
        names = _PLACEHOLDER.findall(word)
        if any(values.get(name) is None for name in names):
            # Drop the flag that took this value, judged on the template: a
            # substituted prompt that starts with '-' is no flag to drop.
            flag = previous is not None and previous.startswith("-") and len(argv) > 1
            if _PLACEHOLDER.fullmatch(word) and flag and argv[-1] == previous:
                argv.pop()
            previous = word
            continue
        argv.append(_PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), word))
        previous = word
    return argv


def without_words(
    template: str, args: tuple[str, ...], words: tuple[str, ...]
) -> tuple[str, tuple[str, ...]]:
    """The template and extra args with every argument equal to one of `words` removed.

    Matched on whole template words before substitution, so a prompt that
    happens to contain `--force` is never touched.
    """
    if not words:
        return template, args
    drop = set(words)
    kept = [w for w in shlex.split(template) if w not in drop]
    return shlex.join(kept), tuple(a for a in args if a not in drop)


def permission_problem(config: AgentConfig) -> str | None:
    """Why --ask-permissions cannot be honored for this command agent, or None.

    capeval cannot tell which flags of an unknown product skip its prompts; a
    run recorded as `skipPermissions: false` while the template still passed
    `--dangerously-skip-permissions` would be a false row. (A listed word the
    template lacks is a configuration problem, reported with the others.)
    """
    if config.skip_permissions_args is not None:
        return None
    name = config.name
    return (
        f"agent {name!r} (type command) cannot honor --ask-permissions: capeval does not "
        "know which words of its command template skip permission prompts; list them in "
        f'[agents.{name}] skip_permissions_args (e.g. ["--dangerously-skip-permissions"]), '
        "or set it to [] if the template has none"
    )


def hook_script(destination: Path) -> str:
    """The hook capeval installs; `destination` lies outside the workdir."""
    dest = shlex.quote(str(destination))
    return (
        "#!/bin/sh\n"
        "# Installed by capeval for this eval run: hands the run summary back to the\n"
        "# harness. Called as `sh <this file> <kind>` with the JSON on stdin.\n"
        'if [ "$1" != "postRun" ]; then cat >/dev/null; exit 0; fi\n'
        f"dest={dest}\n"
        'tmp="$dest.tmp.$$"\n'
        'cat > "$tmp" && mv -f "$tmp" "$dest"\n'
    )


def hook_path(workdir: Path, configured: str | None) -> Path:
    rel = configured or DEFAULT_HOOK
    problem = hook_problem(rel)
    if problem:
        raise CommandTemplateError(f"{problem}: fix `hook` in the [agents.NAME] table")
    return workdir.joinpath(*PurePosixPath(rel).parts)


def install_hook(workdir: Path, configured: str | None, destination: Path) -> Path:
    """Write the hook into the workdir, executable, and keep it out of `git status`."""
    path = hook_path(workdir, configured)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(hook_script(destination))
    path.chmod(0o755)
    exclude = workdir / ".git" / "info" / "exclude"
    if (workdir / ".git").is_dir():  # `git init --template=` makes no info/: make it
        exclude.parent.mkdir(exist_ok=True)
        rel = path.relative_to(workdir).as_posix()
        with exclude.open("a") as fh:
            fh.write(f"/{rel}\n")
    return path


def read_capture(path: Path) -> tuple[RunSummary | None, Mapping[str, Any], str | None]:
    """(summary, the raw JSON object, error). No file: (None, {}, None)."""
    from capeval.core.runsummary import RunSummaryError
    from capeval.results.runsummary import read_summary

    if not path.exists():
        return None, {}, None
    try:
        summary = read_summary(path)
    except (RunSummaryError, OSError, ValueError) as exc:
        return None, {}, f"run summary {path.name} from the hook is unusable: {exc}"
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        raw = {}
    return summary, raw if isinstance(raw, Mapping) else {}, None


class CommandAdapter:
    def __init__(self, config: AgentConfig) -> None:
        self.config = config

    def _values(self, request: AgentRequest) -> dict[str, str | None]:
        return {
            "workdir": str(request.workdir),
            "prompt": request.prompt,
            "provider": request.provider,
            "model": request.model,
            "max_turns": None if request.max_turns is None else str(request.max_turns),
            "hook": str(hook_path(request.workdir, self.config.hook)),
        }

    def argv(self, request: AgentRequest) -> list[str]:
        if not self.config.command:
            raise CommandTemplateError(
                f"agent {self.config.name!r} has type command but no `command` template: "
                f"set command in [agents.{self.config.name}]"
            )
        template = self.config.command
        args = tuple(self.config.args)
        if not request.skip_permissions:
            # --ask-permissions: the words the config names as skipping prompts go.
            template, args = without_words(template, args, self.config.skip_permissions_args or ())
        return render_command(template, self._values(request), args)

    def version(self) -> str | None:
        """`<binary> --version`, asked in a throwaway directory.

        It ran in the current directory, the user's checkout: a wrapper script
        that does not answer `--version` then acted as an agent on it, with
        the prompt `--version`.
        """
        try:
            exe = resolve_binary(shlex.split(self.config.command or "")[0])
        except (ValueError, IndexError):
            return None
        if exe is None:
            return None
        from capeval.proc import reaper

        with reaper.temp_dir("capeval-version-") as tmp:
            return probe_version(exe, cwd=tmp)

    def run(self, request: AgentRequest) -> AgentResult:
        try:
            argv = self.argv(request)
            request.capture_dir.mkdir(parents=True, exist_ok=True)
            capture = request.capture_dir / CAPTURE_FILE
            capture.unlink(missing_ok=True)
            hook = install_hook(request.workdir, self.config.hook, capture)
        except (CommandTemplateError, OSError) as exc:
            return AgentResult(exitCode=None, status="failed", error=str(exc), errorKind="start")
        # Where the hook is, so the product need not hard-code the default path.
        env = agent_environment(self.config, request, {HOOK_ENV: str(hook)})
        proc = launch(self.config, argv, request, env)
        if isinstance(proc, AgentResult):
            return proc
        (request.capture_dir / "command-stdout.log").write_bytes(proc.stdout)
        (request.capture_dir / "command-stderr.log").write_bytes(proc.stderr)

        summary, raw, capture_error = read_capture(capture)
        stated = (
            summary.status if summary is not None and summary.status in ("done", "failed") else None
        )
        status = classify(
            timed_out=proc.timed_out,
            cancelled=proc.cancelled,
            exit_code=proc.exit_code,
            stream_status=stated,
        )
        errors = [e for e in (summary.error if summary else None, capture_error) if e]
        if status == "timeout":
            errors.insert(0, f"agent timed out after {request.timeout_s:g} s")
        elif summary is None and capture_error is None:
            errors.append(
                f"the post-run hook was never called: no turn stream (hook {self.config.hook or DEFAULT_HOOK})"
            )
        if status == "failed" and proc.exit_code != 0:
            tail = stderr_tail(proc.stderr.decode(errors="replace"))
            errors.insert(0, f"exit code {proc.exit_code}" + (f": {tail}" if tail else ""))

        if summary is None:
            # The product exited non-zero before it could hand over a run: it failed to
            # start (no login, no network, a missing dependency), and nothing was
            # measured. Its stderr may say which.
            started = status != "failed" or proc.exit_code in (0, None) or capture_error
            said = None if started else from_text(stderr_tail(proc.stderr.decode(errors="replace")))
            return AgentResult(
                exitCode=proc.exit_code,
                status=status,
                durationMs=proc.duration_ms,
                error="; ".join(errors) or None,
                errorKind=None if started else (said.kind if said else "start"),
                providerStatus=said.status if said else None,
            )
        # The summary's turns are the product's own report, so they may give
        # the counts; a summary with neither counts nor turns reported none,
        # and 0 would pass any turn budget that must fail closed (docs/running.md#the-pass-rule).
        reported = bool(summary.turns)
        turns_used = (
            summary.turnsUsed
            if summary.turnsUsed is not None
            else (len(summary.turns) if reported else None)
        )
        tool_calls = (
            summary.toolCallCount
            if summary.toolCallCount is not None
            else (sum(len(t.toolCalls) for t in summary.turns) if reported else None)
        )
        return AgentResult(
            exitCode=proc.exit_code,
            status=status,
            sessionId=_str(raw.get("sessionId")),
            provider=_str(raw.get("provider")),
            model=_str(raw.get("model")),
            turnsUsed=turns_used,
            toolCallCount=tool_calls,
            tokenUsage=summary.tokenUsage,
            durationMs=summary.durationMs if summary.durationMs is not None else proc.duration_ms,
            textPreview=preview(t for turn in summary.turns for t in turn.texts),
            summary=replace(summary, status=status),
            error="; ".join(errors) or None,
            **_stated_outcome(raw, status),
        )


def _stated_outcome(raw: Mapping[str, Any], status: str) -> dict[str, Any]:
    """What a product says of an outage in its run summary: `outcome: "error"`, with an
    `errorKind` (capeval's kinds) and the provider's `providerStatus` when it knows them."""
    if raw.get("outcome") != "error" or status == "timeout":
        return {}
    from capeval.core.outcome import ERROR_KINDS, status_kind

    code = raw.get("providerStatus")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    kind = raw.get("errorKind")
    if kind not in ERROR_KINDS:
        kind = status_kind(code) or "server"
    return {"errorKind": kind, "providerStatus": code}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
