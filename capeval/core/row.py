"""The result row: one per repeat (docs/result-formats.md#the-result-row).

Rows are plain JSON objects (dicts) so that unknown fields written by newer
or older tools survive a read/write round trip. This module names the fields;
it is the contract between the runner (which writes rows), the result files
(which store them) and the analysis layer (which reads them).
"""

from __future__ import annotations

from typing import Any

# Fields every v3 `cases[]` entry has, in the order capeval writes them.
CASE_FIELDS: tuple[str, ...] = (
    "resultKey",  # f"{variantId}::{id}"
    "id",  # case id
    "tier",
    "title",
    "variantId",
    "provider",  # the provider the agent really resolved
    "model",  # the model the agent really resolved
    "passed",
    "outcome",  # passed | failed | error (docs/agents.md#outcomes)
    "agentExitCode",
    "verifyExitCode",
    "durationMs",
    "agentDurationMs",
    "verifyDurationMs",
    "status",  # done | failed | cancelled | timeout
    "sessionId",
    "turnsUsed",
    "toolCallCount",
    "tokenUsage",  # {input, output, cacheRead, cacheWrite, thinking}
    "costUsd",  # what the agent reported the repeat cost (Claude Code, opencode); None: not said
    "maxTurns",
    "overBudget",
    "skipPermissions",
    "error",
    "errorKind",  # why an `error` repeat measured nothing (capeval.core.outcome.ERROR_KINDS)
    "providerStatus",  # the HTTP status the provider answered with, when the agent said
    "repeat",  # 0-based
    "attempts",  # how many times the repeat was run (retries of `error` outcomes)
    "behaviors",  # {<11 numeric metrics>, toolCallsByName} | None
    "textPreview",
)

# Run context capeval adds to every JSONL row.
CONTEXT_FIELDS: tuple[str, ...] = (
    "runId",
    "runStartedAt",
    "requestedProvider",  # what the cell asked for
    "requestedModel",
    "agent",  # agent entry name (e.g. "scripted", "claude-code", "old")
    "agentType",
    "agentVersion",
    "isolation",  # none | bwrap | docker: the sandbox the repeat ran in
    "capevalVersion",
    "gitCommit",
    "gitDirty",
    "bait",  # the case's {metric, threshold} | None
)
# After these the run's writer adds `provenance`: where the repeat ran
# (executor, host, node; capeval.runner.executor).

ROW_FIELDS: tuple[str, ...] = CASE_FIELDS + CONTEXT_FIELDS

# Fields that say which repeat a row is, written by capeval from the workspace,
# the config and the resolved provider/model, never free agent text. Secret
# redaction leaves them alone: an API key whose value is also a word
# (`OPENAI_API_KEY=ollama`) must not rewrite `resultKey`, or the gate stops
# matching cells and `--resume` reruns finished repeats.
IDENTITY_FIELDS: frozenset[str] = frozenset(
    {
        "resultKey",
        "id",
        "tier",
        "title",
        "variantId",
        "provider",
        "model",
        "repeat",
        "outcome",
        "errorKind",
        "providerStatus",
        "attempts",
        "maxTurns",
        "skipPermissions",
        "runId",
        "runStartedAt",
        "requestedProvider",
        "requestedModel",
        "agent",
        "agentType",
        "agentVersion",
        "isolation",
        "capevalVersion",
        "gitCommit",
        "gitDirty",
        "bait",
        "artifacts",
    }
)

Row = dict[str, Any]


def result_key(variant_id: str, case_id: str) -> str:
    return f"{variant_id}::{case_id}"


def triple(row: Row) -> tuple[str, str, int]:
    """The identity of a repeat within a run: (variantId, caseId, repeat)."""
    return (str(row.get("variantId")), str(row.get("id")), int(row.get("repeat") or 0))
