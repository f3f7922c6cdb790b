"""Behavior metrics: pure functions of the turn stream (docs/behavior-metrics.md#the-metrics).

Pass rate says whether an agent got there; these say how. Every metric is a
count or a maximum over the normalized stream, so two agents with different
tool names are measured the same way. No I/O here: the runner, the
`capeval behaviors` command and notebooks all call `derive_behaviors`.

Decisions where the spec is silent, and where its literal words would let
shell grammar hide a command (the reserved words, flag clusters and paths
below: on such streams capeval counts more than the original harness did, and
`capeval.results.provenance` warns when a comparison mixes the two writers):

* `maxTurnDurationMs` is 0 when no turn reports a duration (or there are no
  turns): every metric stays a number, and the gate only compares cells of
  the same agent. Adapters whose agent reports no per-turn timing should
  measure it.
* `shellCommandCount` counts a shell call given as an argv list too (it is
  joined into one command string), since agents differ only in encoding.
* `editViaShellCount` also counts sed/perl/awk short-option clusters holding
  the `i` switch (`perl -pi -e`, `perl -0pi`, `sed -ni.bak`, `gawk -bi
  inplace`) and the long spelling of `-i`, which getopt_long accepts by any
  prefix (`sed --in-place`, `sed --in`, `gawk --include inplace`): the same
  switch, spelled differently. An `i` inside another switch's argument
  (`perl -Ilib`, `perl -Mstrict`, `perl -0x0api`, where perl reads `-0 -x0api`)
  is none; tests/test_behaviors_real_tools.py checks the spellings against the
  real tools.
* The command word is that of the command the segment runs
  (`scanner.command_words`): reserved words and `( … )` are looked through
  (`do sed -i …`, `then curl x`, `{ curl a` count), so are function
  definition headers (`get() { curl u; }` counts, as it does written over
  several lines), and `for`/`case` headers run none. Shell grammar must not hide a command from a metric.
* The command word is not looked up through `env`, `sudo`, `timeout` and the
  like (`env FOO=1 curl x` is neither an env assignment nor a network
  command): the spec defines both literally and old baselines used that.
  Absolute paths do count: `/usr/bin/curl` is `curl`.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from capeval.core import turns
from capeval.core.metrics import LEGACY_TASK_TOOLS, METRIC_NAMES, TOOL_CALLS_BY_NAME
from capeval.core.scanner import (
    Segment,
    command_words,
    is_env_assignment_word,
    scan_segments,
    sets_env,
    unquote_word,
)
from capeval.core.toolkinds import shell_command, tool_kind
from capeval.core.turns import RunSummary, ToolCall

NETWORK_COMMANDS = frozenset(
    {"curl", "wget", "nc", "ncat", "telnet", "aria2c", "http", "xh", "httpie"}
)
EDIT_COMMANDS = frozenset({"sed", "perl", "awk", "gawk"})
# sed, perl and gawk accept -i inside a cluster of single-letter switches
# (-pi, -ni, -0pi, -pi.bak, -bi). In a cluster, these switches take the rest
# of the word as their argument, so an `i` after them is no switch:
# `perl -Ilib`, `perl -Mstrict`, `sed -ei` and `gawk -Fi` edit nothing in place.
# perl's -d takes the rest only as `-d:Module` or `-d=Module`: `-dpi` edits.
_AWK_REST = frozenset("dDeEfFlLopvWZ")
_REST_IS_ARGUMENT = {
    "sed": frozenset("efl"),
    "perl": frozenset("CDeEFImMVx"),
    "awk": _AWK_REST,
    "gawk": _AWK_REST,
}
# perl's -0 and -l read a few octal digits, as perl's own switch parser does:
# -0 up to three after the 0 (-0777; in -07777pi the rest `7pi` is no switch),
# -l three, or four when the first is 0 (-l0123). perl's -0x takes hex digits
# only when they fill the word; otherwise it reads `-0` then `-x`, whose
# argument is the rest (-0x0api), so an x after -0 is the -x switch either way.
_PERL_DIGITS = {"0": re.compile(r"[0-7]{0,3}"), "l": re.compile(r"0[0-7]{0,3}|[0-7]{0,3}")}
# The long option that is -i: getopt_long takes any unambiguous prefix, and
# no other long option of these tools begins with i (`sed --in`, `gawk --inc`).
_LONG_IN_PLACE = {"sed": "in-place", "awk": "include", "gawk": "include"}
_WHITESPACE_RUN = re.compile(r"\s+")


def _command(segment: Segment) -> tuple[str | None, list[str]]:
    """(name, raw argument words) of the command a segment runs; (None, []) if none.

    The arguments follow the command word, not the segment's first word: in
    `do sed -i s/a/b/ f` that is `do`, and `FOO=1` in `FOO=1 sed …` is no option.
    """
    words = command_words(segment)
    for k, raw in enumerate(words):
        if not is_env_assignment_word(raw):
            word = unquote_word(raw)
            return (posixpath.basename(word) or None), words[k + 1 :]
    return None, []


def is_network_segment(segment: Segment) -> bool:
    return _command(segment)[0] in NETWORK_COMMANDS


def is_edit_segment(segment: Segment) -> bool:
    """An in-place edit through the shell: `sed -i`, `perl -pi`, `awk -i`, or a heredoc."""
    if segment.heredoc:
        return True
    name, arguments = _command(segment)
    if name not in EDIT_COMMANDS:
        return False
    for raw in arguments:
        word = unquote_word(raw)
        if word.startswith(("-i", "--in-place")) or _is_long_in_place(name, word):
            return True
        if name in _REST_IS_ARGUMENT and _cluster_edits_in_place(name, word):
            return True
    return False


def _is_long_in_place(name: str, word: str) -> bool:
    """Whether a word is the tool's long spelling of -i, abbreviated or not."""
    if name not in _LONG_IN_PLACE or not word.startswith("--"):
        return False
    option = word[2:].partition("=")[0]
    return bool(option) and _LONG_IN_PLACE[name].startswith(option)


def _cluster_edits_in_place(name: str, word: str) -> bool:
    """Whether a short-switch cluster (`-pi`, `-0pi`, `-ni.bak`, `-bi`) holds `-i`.

    Walked switch by switch, because a letter i inside a switch's argument
    (`-Ilib`, `-Mstrict`, `-Mwarnings`) is no in-place edit, and text after
    the `i` is its backup suffix (`-pi.bak`), not a reason to miss it.
    """
    if len(word) < 2 or word[0] != "-" or word[1] == "-":
        return False
    k = 1
    while k < len(word):
        c = word[k]
        if c == "i":
            return True
        if c in _REST_IS_ARGUMENT[name] or not c.isascii() or not c.isalnum():
            return False
        if name == "perl" and c == "d" and word[k + 1 : k + 2] in (":", "="):
            return False
        k += 1
        if name == "perl" and c in _PERL_DIGITS:
            digits = _PERL_DIGITS[c].match(word, k)
            k = digits.end() if digits else k
        elif c.isdigit():
            return False
    return False


def normalize_arguments(value: Any) -> Any:
    """Arguments as a signature: strings lower-cased, white space collapsed and
    trimmed, object keys sorted, recursively; so that `{"pattern": "Foo  Bar "}`
    repeats `{"pattern": "foo bar"}`. Tool names are compared as they are."""
    if isinstance(value, str):
        return _WHITESPACE_RUN.sub(" ", value).strip().lower()
    if isinstance(value, Mapping):
        return {str(k): normalize_arguments(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [normalize_arguments(v) for v in value]
    return value


def _signature(call: ToolCall) -> str:
    return json.dumps([call.name, normalize_arguments(call.arguments)], sort_keys=True, default=str)


def _resolved(call: ToolCall) -> tuple[str, str | None]:
    """(kind, command) of a call, classifying it here if its adapter did not."""
    kind = call.kind if call.kind != turns.OTHER else tool_kind(call.name)
    if kind != turns.SHELL:
        return kind, None
    return kind, call.command if call.command is not None else shell_command(call.arguments)


def call_command(call: ToolCall) -> str | None:
    """The command string the shell metrics read of a call (None: not a shell command).

    Its chain segments are `scan_segments(call_command(call))`, the list a
    `Contribution.segment` indexes.
    """
    return _resolved(call)[1]


def _whole(value: float | int) -> float | int:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# Metrics that are a maximum over the stream; every other one is a count.
MAXIMUM_METRICS = frozenset(
    {"maxChainSegmentsPerCommand", "longestToolOnlyStreak", "maxTurnDurationMs"}
)


@dataclass(frozen=True, slots=True)
class Contribution:
    """One place in a turn stream that counted toward a behavior metric.

    `turn` indexes `summary.turns`, `call` that turn's `toolCalls` (None: the
    turn as a whole, for `longestToolOnlyStreak` and `maxTurnDurationMs`), and
    `segment` the chain segments of the call's command,
    `scan_segments(call_command(call))` (None: the whole call). A count metric
    is the sum of its contributions' `value`s, a maximum metric
    (`MAXIMUM_METRICS`) their largest `value` (0 when there is none); the
    places that reach the maximum are its contributions.
    """

    metric: str
    turn: int
    call: int | None = None
    segment: int | None = None
    value: float | int = 1

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "turn": self.turn,
            "call": self.call,
            "segment": self.segment,
            "value": self.value,
        }


def behavior_contributions(summary: RunSummary) -> dict[str, list[Contribution]]:
    """Every place that counted toward each metric (in `METRIC_NAMES` order).

    `derive_behaviors` takes its totals from this (`metric_totals`), so a
    viewer that marks these places can never disagree with a row's metrics.
    """
    out: dict[str, list[Contribution]] = {name: [] for name in METRIC_NAMES}
    seen: set[str] = set()
    streaks: list[tuple[int, int]] = []  # (first turn, length) of each tool-only streak
    streak_start: int | None = None

    for t, turn in enumerate(summary.turns):
        if turn.toolCalls and not turn.has_text:
            if streak_start is None:
                streak_start = t
        elif streak_start is not None:
            streaks.append((streak_start, t - streak_start))
            streak_start = None

        for c, call in enumerate(turn.toolCalls):
            signature = _signature(call)
            if signature in seen:
                out["repeatedSearchCount"].append(Contribution("repeatedSearchCount", t, c))
            seen.add(signature)

            kind, command = _resolved(call)
            if kind == turns.WEB_FETCH:
                out["webFetchToolCallCount"].append(Contribution("webFetchToolCallCount", t, c))
            elif kind == turns.TASK:
                out["taskToolCallCount"].append(Contribution("taskToolCallCount", t, c))
            elif kind == turns.SHELL and command is not None:
                _shell_contributions(command, t, c, out)
    if streak_start is not None:
        streaks.append((streak_start, len(summary.turns) - streak_start))

    longest = max((length for _, length in streaks), default=0)
    out["longestToolOnlyStreak"] = [
        Contribution("longestToolOnlyStreak", t, value=longest)
        for first, length in streaks
        if length == longest
        for t in range(first, first + length)
    ]
    durations = [
        (t, turn.durationMs)
        for t, turn in enumerate(summary.turns)
        if turn.durationMs is not None and turn.durationMs > 0
    ]
    slowest = max((d for _, d in durations), default=0)
    out["maxTurnDurationMs"] = [
        Contribution("maxTurnDurationMs", t, value=d) for t, d in durations if d == slowest
    ]
    chains = out["maxChainSegmentsPerCommand"]
    most = max((x.value for x in chains), default=0)
    out["maxChainSegmentsPerCommand"] = [x for x in chains if x.value == most]
    return out


def _shell_contributions(command: str, t: int, c: int, out: dict[str, list[Contribution]]) -> None:
    segments = scan_segments(command)
    out["shellCommandCount"].append(Contribution("shellCommandCount", t, c))
    if segments:
        n = len(segments)
        out["chainSegmentCount"].append(Contribution("chainSegmentCount", t, c, value=n))
        out["maxChainSegmentsPerCommand"].append(
            Contribution("maxChainSegmentsPerCommand", t, c, value=n)
        )
    env = next((k for k, s in enumerate(segments) if sets_env(s)), None)
    if env is not None:  # at most one per command, at its first assigning segment
        out["envAssignmentCommandCount"].append(
            Contribution("envAssignmentCommandCount", t, c, env)
        )
    for k, segment in enumerate(segments):
        if is_network_segment(segment):
            out["networkCommandCount"].append(Contribution("networkCommandCount", t, c, k))
        if is_edit_segment(segment):
            out["editViaShellCount"].append(Contribution("editViaShellCount", t, c, k))


def metric_totals(contributions: Mapping[str, Sequence[Contribution]]) -> dict[str, float | int]:
    """The 11 metric values (in `METRIC_NAMES` order) from `behavior_contributions`."""
    totals: dict[str, float | int] = {}
    for name in METRIC_NAMES:
        values = [x.value for x in contributions.get(name, ())]
        if name in MAXIMUM_METRICS:
            totals[name] = _whole(max(values, default=0))
        else:
            totals[name] = sum(values)
    return totals


def derive_behaviors(summary: RunSummary) -> dict[str, Any]:
    """The 11 numeric metrics (in `METRIC_NAMES` order) and `toolCallsByName`.

    The totals are those of `behavior_contributions`, the places that counted.
    """
    by_name: dict[str, int] = {}
    for turn in summary.turns:
        for call in turn.toolCalls:
            by_name[call.name] = by_name.get(call.name, 0) + 1
    return {**metric_totals(behavior_contributions(summary)), TOOL_CALLS_BY_NAME: by_name}


def backfill_legacy(behaviors: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Behaviors from older files, completed: `taskToolCallCount` from
    `toolCallsByName` (`task` + `spawn_agent`), else 0.

    Returns a new dict with the metrics in `METRIC_NAMES` order and every
    other key kept after them; None (no captured stream) stays None.
    """
    if behaviors is None:
        return None
    filled = dict(behaviors)
    if filled.get("taskToolCallCount") is None:  # absent, or written as null
        by_name = filled.get(TOOL_CALLS_BY_NAME)
        filled["taskToolCallCount"] = (
            sum(_count(by_name.get(name)) for name in LEGACY_TASK_TOOLS)
            if isinstance(by_name, Mapping)
            else 0
        )
    ordered = {name: filled.pop(name) for name in METRIC_NAMES if name in filled}
    return {**ordered, **filled}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
