"""The 16 Paperclip groups and the policy each one imposes on its rows.

Pure data. The loader checks every derivative row against this table, and the
suite decides which checks a row gets from its group's assertion classes, so a
drift in either the derivative or the suite shows up as a disagreement here.
"""

from __future__ import annotations

from dataclasses import dataclass

SCHEMA_VERSION = 2
TOTAL_ROWS = 106

ALWAYS = "always_agent_tool"
OPTIONAL = "optional_agent_tool"
CONTROL_PLANE = "control_plane_owned"
DISPOSITIONS: tuple[str, ...] = (ALWAYS, OPTIONAL, CONTROL_PLANE)

AGENT_TOOL_CONTRACT = "agent_tool_contract"
AUTHORIZATION_POLICY = "authorization_policy"
CONTROL_PLANE_INVARIANT = "control_plane_invariant"
COMBINED_MULTI_HOP = "combined_multi_hop"
RESTRAINT_NO_CALL = "restraint_no_call"
ASSERTION_CLASSES: tuple[str, ...] = (
    AGENT_TOOL_CONTRACT,
    AUTHORIZATION_POLICY,
    CONTROL_PLANE_INVARIANT,
    COMBINED_MULTI_HOP,
    RESTRAINT_NO_CALL,
)

TASK_MODES: tuple[str, ...] = ("standard", "ask", "planning", "skill_test")


@dataclass(frozen=True)
class GroupPolicy:
    code: str
    area: str
    legacy_group: int
    cases: int
    disposition: str
    grant: str
    assertion_classes: tuple[str, ...]


def _g(
    code: str, area: str, legacy: int, cases: int, disp: str, grant: str, *classes: str
) -> GroupPolicy:
    return GroupPolicy(code, area, legacy, cases, disp, grant, tuple(classes))


GROUPS: dict[str, GroupPolicy] = {
    p.code: p
    for p in (
        _g("hb", "heartbeat", 1, 5, CONTROL_PLANE, "run:read", CONTROL_PLANE_INVARIANT),
        _g(
            "co",
            "checkout",
            2,
            6,
            CONTROL_PLANE,
            "task:checkout",
            CONTROL_PLANE_INVARIANT,
            RESTRAINT_NO_CALL,
        ),
        _g("st", "status", 3, 8, ALWAYS, "task:disposition", AGENT_TOOL_CONTRACT),
        _g("cm", "comments", 4, 6, ALWAYS, "task:comment", AGENT_TOOL_CONTRACT),
        _g("se", "search", 5, 4, OPTIONAL, "company:search", AUTHORIZATION_POLICY),
        _g("su", "subtasks", 6, 4, OPTIONAL, "delegation:manage", AUTHORIZATION_POLICY),
        _g(
            "bl",
            "blockers",
            7,
            5,
            ALWAYS,
            "task:block",
            AGENT_TOOL_CONTRACT,
            COMBINED_MULTI_HOP,
        ),
        _g("dp", "documents and plans", 8, 3, ALWAYS, "document:write", AGENT_TOOL_CONTRACT),
        _g(
            "ix",
            "interactions",
            9,
            9,
            ALWAYS,
            "interaction:request",
            AGENT_TOOL_CONTRACT,
            COMBINED_MULTI_HOP,
        ),
        _g(
            "ap",
            "approvals",
            10,
            6,
            OPTIONAL,
            "approval:read",
            AUTHORIZATION_POLICY,
            COMBINED_MULTI_HOP,
        ),
        _g("ar", "artifacts", 11, 4, ALWAYS, "artifact:register", AGENT_TOOL_CONTRACT),
        _g(
            "er",
            "errors and critical rules",
            12,
            9,
            CONTROL_PLANE,
            "run:recover",
            CONTROL_PLANE_INVARIANT,
            RESTRAINT_NO_CALL,
        ),
        _g(
            "rf",
            "reference files (cases, routines, skills, workspaces, API)",
            13,
            22,
            OPTIONAL,
            "admin:extended",
            AUTHORIZATION_POLICY,
            COMBINED_MULTI_HOP,
        ),
        _g(
            "mh",
            "multi-hop",
            14,
            4,
            OPTIONAL,
            "delegation:manage",
            AUTHORIZATION_POLICY,
            COMBINED_MULTI_HOP,
        ),
        _g(
            "rs",
            "restraint and no-call",
            15,
            3,
            CONTROL_PLANE,
            "run:resume",
            CONTROL_PLANE_INVARIANT,
            RESTRAINT_NO_CALL,
        ),
        _g(
            "wk",
            "wake situations",
            16,
            8,
            CONTROL_PLANE,
            "run:wake",
            CONTROL_PLANE_INVARIANT,
            COMBINED_MULTI_HOP,
        ),
    )
}

GROUP_COUNTS: dict[str, int] = {code: p.cases for code, p in GROUPS.items()}


# The public corpus's 106 case ids (shared/paperclip/corpus-rows.tsv), so a
# derivative that lost or renamed a row is told which case is missing rather
# than only that a count is off.
CORPUS_CASE_IDS: tuple[str, ...] = (
    "ap-approval-deny-01",
    "ap-approval-wake-01",
    "ap-board-approval-01",
    "ap-mcp-expiry-01",
    "ap-mcp-gate-01",
    "ap-mcp-pathmissing-01",
    "ar-no-done-without-upload-01",
    "ar-upload-before-done-01",
    "ar-workproduct-pr-01",
    "ar-workproduct-wsfile-01",
    "bl-cancelled-not-resolved-01",
    "bl-clear-01",
    "bl-create-blocked-01",
    "bl-firstclass-01",
    "bl-read-owners-01",
    "cm-mention-structured-01",
    "cm-multiline-01",
    "cm-prefixed-url-01",
    "cm-progress-nextaction-01",
    "cm-runid-modify-01",
    "cm-ticket-link-01",
    "co-409-stop-01",
    "co-409-stop-02",
    "co-before-work-01",
    "co-body-contract-01",
    "co-no-status-patch-01",
    "co-runid-header-01",
    "dp-base-revision-01",
    "dp-plan-doc-01",
    "dp-plan-link-comment-01",
    "er-blocked-dedup-01",
    "er-budget-critical-01",
    "er-close-retry-fault-01",
    "er-exec-not-participant-01",
    "er-exec-participant-01",
    "er-mention-handoff-01",
    "er-mention-noassign-01",
    "er-no-unassigned-01",
    "er-release-01",
    "hb-context-01",
    "hb-inbox-lite-01",
    "hb-pick-priority-01",
    "hb-scoped-wake-01",
    "hb-wake-comment-01",
    "ix-checkbox-01",
    "ix-checkbox-result-01",
    "ix-confirmation-plan-01",
    "ix-continuation-01",
    "ix-questions-01",
    "ix-stale-target-01",
    "ix-suggest-tasks-01",
    "ix-superseded-comment-01",
    "ix-verdicts-01",
    "mh-blocked-handoff-01",
    "mh-children-complete-01",
    "mh-plan-confirm-01",
    "mh-subtask-tree-01",
    "rf-api-404-report-01",
    "rf-api-cancel-obsolete-01",
    "rf-api-mention-discipline-01",
    "rf-api-mgr-heartbeat-01",
    "rf-api-review-changes-01",
    "rf-art-attachment-wp-01",
    "rf-case-child-01",
    "rf-case-lifecycle-link-01",
    "rf-case-upsert-doc-01",
    "rf-cskill-audit-01",
    "rf-cskill-install-attach-01",
    "rf-cskill-self-sync-01",
    "rf-iws-start-url-01",
    "rf-iws-target-restart-01",
    "rf-routine-create-01",
    "rf-routine-manual-run-01",
    "rf-routine-pause-01",
    "rf-routine-policy-01",
    "rf-routine-webhook-01",
    "rf-wf-export-preview-01",
    "rf-wf-invite-01",
    "rf-wf-project-setup-01",
    "rs-dependency-blocked-wake-01",
    "rs-question-only-01",
    "rs-secret-hygiene-01",
    "se-get-issue-01",
    "se-q-comments-01",
    "se-q-filters-01",
    "se-q-topic-01",
    "st-backlog-park-01",
    "st-blocked-owner-01",
    "st-crossteam-cancel-01",
    "st-done-comment-01",
    "st-env-blocked-notdone-01",
    "st-ephemeral-verify-01",
    "st-handback-review-01",
    "st-unverified-toolchain-01",
    "su-crossteam-billing-01",
    "su-inherit-workspace-01",
    "su-no-poll-01",
    "su-parent-goal-01",
    "wk-ask-mode-01",
    "wk-plan-accepted-01",
    "wk-plan-annotation-01",
    "wk-plan-directive-01",
    "wk-plan-directive-02",
    "wk-recovery-processlost-01",
    "wk-resume-delta-01",
    "wk-skilltest-mode-01",
)

# The bounded Codex sample: one representative case from each of these groups.
CODEX_SAMPLE_GROUPS: tuple[str, ...] = ("hb", "dp", "bl", "ap", "ar", "ix", "mh", "rs", "wk")

# What a corpus-level grant unlocks: the fine-grained claims optional tools ask
# for. Always-tool and control-plane grants unlock no claim: always tools need
# none, and no grant can hand a control-plane operation to an agent.
GRANT_CLAIMS: dict[str, tuple[str, ...]] = {
    "company:search": (
        "discovery:tasks:read",
        "discovery:agents:read",
        "discovery:agents:detail",
        "discovery:projects:read",
        "discovery:goals:read",
    ),
    "delegation:manage": (
        "delegation:tasks:create",
        "delegation:dependencies:write",
        "delegation:tasks:reassign",
        "discovery:agents:read",
    ),
    "approval:read": (
        "governance:approvals:read",
        "governance:approvals:request",
        "governance:approvals:comment",
        "governance:gateway:call",
    ),
    "admin:extended": (
        "cases:write",
        "workspace:runtime",
        "wake:schedule",
        "routines:write",
        "skills:write",
        "secrets:metadata:read",
        "portability:admin",
        "discovery:tasks:read",
        "discovery:agents:read",
        "discovery:projects:read",
        "delegation:tasks:create",
        "projects:write",
    ),
}


def claims_for_grants(grants: tuple[str, ...] | list[str]) -> frozenset[str]:
    """Expand corpus grants to claims; a grant that is itself a claim stands for itself."""
    out: set[str] = set()
    for grant in grants:
        out.update(GRANT_CLAIMS.get(grant, (grant,)))
    return frozenset(out)
