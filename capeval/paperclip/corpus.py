"""The public corpus's per-case facts a group's policy cannot imply: fixture and evidence.

Pure data (transcribed from shared/paperclip/corpus-rows.tsv, in id order). The
group policy pins a row's legacy number, disposition, grants and classes; these
pin the rest, so a derivative whose fixture or REST evidence drifted is refused
at load time, naming the corpus value, instead of running a different case that
fails (or passes) for reasons the corpus never gave.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CaseFacts:
    fixture: str
    expected_semantics: tuple[str, ...]


def _c(fixture: str, *semantics: str) -> CaseFacts:
    return CaseFacts(fixture, semantics)


# Both 409 cases of the corpus stop on the same conflicted task.
_CONFLICT_ON_105 = _c(
    "checkout-conflict",
    'POST "^/api/issues/(i-0105|MCK-105)/checkout$"',
    'PATCH "^/api/issues/(i-0105|MCK-105)(/.*)?$"',
    'PUT "^/api/issues/(i-0105|MCK-105)(/.*)?$"',
    'POST "^/api/issues/(i-0105|MCK-105)/comments$"',
    'POST "^/api/issues/(i-0105|MCK-105)/(assign|assignee|assignees|reassign|claim|release)$"',
)


# Both plan-directive cases of the corpus carry the same evidence.
_PLAN_DIRECTIVE_ON_104 = _c(
    "baseline",
    'PUT "^/api/issues/(i-0104|MCK-104)/documents/plan$"',
    'POST "^/api/issues/(i-0104|MCK-104)/interactions$"',
    'PATCH "^/api/issues/(i-0104|MCK-104)$"',
    "POST /api/companies/c-mock-0001/issues",
    'PATCH "^/api/issues/(i-0104|MCK-104)$"',
)


CORPUS_FACTS: dict[str, CaseFacts] = {
    "ap-approval-deny-01": _c(
        "approval-denied",
        "GET /api/approvals/apr-0002",
        'POST "^/api/issues/(i-0102|MCK-102)/comments$"',
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
    ),
    "ap-approval-wake-01": _c(
        "approval-approved",
        "GET /api/approvals/apr-0001",
        "GET /api/approvals/apr-0001/issues",
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
        'PATCH "^/api/issues/(i-0103|MCK-103)$"',
    ),
    "ap-board-approval-01": _c(
        "baseline",
        "POST /api/companies/c-mock-0001/approvals",
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
    ),
    "ap-mcp-expiry-01": _c(
        "mcp-approval-gate",
        "POST /api/tool-gateway/tools/call",
        'PATCH "^/api/issues/(i-0101|MCK-101)$"',
        'POST "^/api/tool-gateway/action-requests/.+/approve$"',
        'PATCH "^/api/issues/(i-0101|MCK-101)$"',
        'PATCH "^/api/issues/(i-0101|MCK-101)$"',
    ),
    "ap-mcp-gate-01": _c(
        "baseline",
        'PATCH "^/api/issues/(i-0101|MCK-101)$"',
        'PATCH "^/api/issues/(i-0101|MCK-101)$"',
        'PATCH "^/api/issues/(i-0101|MCK-101)$"',
    ),
    "ap-mcp-pathmissing-01": _c(
        "mcp-approval-path-missing",
        "POST /api/tool-gateway/tools/call",
        'POST "^/api/tool-gateway/action-requests/.+/approve$"',
        'PATCH "^/api/issues/[^/]+$"',
    ),
    "ar-no-done-without-upload-01": _c(
        "deliverable-file",
        'POST "^/api/companies/c-mock-0001/issues/(i-0101|MCK-101)/attachments$"',
        'PATCH "^/api/issues/(i-0101|MCK-101)$"',
    ),
    "ar-upload-before-done-01": _c(
        "deliverable-file",
        'POST "^/api/companies/c-mock-0001/issues/(i-0101|MCK-101)/attachments$"',
        'PATCH "^/api/issues/(i-0101|MCK-101)$"',
    ),
    "ar-workproduct-pr-01": _c("baseline", 'POST "^/api/issues/(i-0101|MCK-101)/work-products$"'),
    "ar-workproduct-wsfile-01": _c(
        "baseline",
        'POST "^/api/issues/(i-0101|MCK-101)/work-products$"',
        'POST "^/api/companies/c-mock-0001/issues/(i-0101|MCK-101)/attachments$"',
    ),
    "bl-cancelled-not-resolved-01": _c(
        "blocker-graph",
        'GET "^/api/issues/(i-0140|MCK-140)"',
        'PATCH "^/api/issues/(i-0140|MCK-140)$"',
    ),
    "bl-clear-01": _c("blocker-graph", 'PATCH "^/api/issues/(i-0143|MCK-143)$"'),
    "bl-create-blocked-01": _c("baseline", "POST /api/companies/c-mock-0001/issues"),
    "bl-firstclass-01": _c("baseline", 'PATCH "^/api/issues/(i-0102|MCK-102)$"'),
    "bl-read-owners-01": _c("baseline", 'GET "^/api/issues/(i-0103|MCK-103)"'),
    "cm-mention-structured-01": _c("baseline", 'POST "^/api/issues/(i-0103|MCK-103)/comments$"'),
    "cm-multiline-01": _c("baseline", 'POST "^/api/issues/(i-0101|MCK-101)/comments$"'),
    "cm-prefixed-url-01": _c("baseline", 'POST "^/api/issues/(i-0103|MCK-103)/comments$"'),
    "cm-progress-nextaction-01": _c("baseline", 'POST "^/api/issues/(i-0101|MCK-101)/comments$"'),
    "cm-runid-modify-01": _c("baseline", 'POST "^/api/issues/(i-0102|MCK-102)/comments$"'),
    "cm-ticket-link-01": _c("baseline", 'POST "^/api/issues/(i-0101|MCK-101)/comments$"'),
    "co-409-stop-01": _CONFLICT_ON_105,
    "co-409-stop-02": _CONFLICT_ON_105,
    "co-before-work-01": _c(
        "baseline",
        'POST "^/api/issues/(i-0102|MCK-102)/checkout$"',
        'POST "^/api/issues/(i-0102|MCK-102)/comments$"',
    ),
    "co-body-contract-01": _c("baseline", 'POST "^/api/issues/(i-0102|MCK-102)/checkout$"'),
    "co-no-status-patch-01": _c(
        "baseline",
        'POST "^/api/issues/(i-0102|MCK-102)/checkout$"',
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
    ),
    "co-runid-header-01": _c("baseline", 'PATCH "^/api/issues/(i-0101|MCK-101)$"'),
    "dp-base-revision-01": _c(
        "stale-plan",
        'GET "^/api/issues/(i-0104|MCK-104)/documents/plan$"',
        'PUT "^/api/issues/(i-0104|MCK-104)/documents/plan$"',
    ),
    "dp-plan-doc-01": _c(
        "baseline",
        'PUT "^/api/issues/(i-0102|MCK-102)/documents/plan$"',
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
    ),
    "dp-plan-link-comment-01": _c(
        "baseline",
        'PUT "^/api/issues/(i-0104|MCK-104)/documents/plan$"',
        'POST "^/api/issues/(i-0104|MCK-104)/comments$"',
        'PATCH "^/api/issues/(i-0104|MCK-104)$"',
    ),
    "er-blocked-dedup-01": _c(
        "blocked-dedup",
        'GET "^/api/issues/(i-0103|MCK-103)/comments"',
        'POST "^/api/issues/(i-0103|MCK-103)/comments$"',
        'POST "^/api/issues/(i-0103|MCK-103)/checkout$"',
    ),
    "er-budget-critical-01": _c(
        "budget-critical",
        "GET /api/agents/me/inbox-lite",
        'POST "^/api/issues/(i-0131|MCK-131)/checkout$"',
        'POST "^/api/issues/(i-0102|MCK-102)/checkout$"',
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
    ),
    "er-close-retry-fault-01": _c("patch-fault-close", 'PATCH "^/api/issues/(i-0102|MCK-102)$"'),
    "er-exec-not-participant-01": _c(
        "exec-not-participant",
        'POST "^/api/issues/(i-0160|MCK-160)/comments$"',
        'PATCH "^/api/issues/(i-0160|MCK-160)$"',
    ),
    "er-exec-participant-01": _c(
        "exec-participant",
        'PATCH "^/api/issues/(i-0160|MCK-160)$"',
        'POST "^/api/issues/(i-0160|MCK-160)/(execution-decisions?|decisions?|approve)$"',
        'PATCH "^/api/issues/(i-0160|MCK-160)$"',
    ),
    "er-mention-handoff-01": _c(
        "mention-directive",
        'POST "^/api/issues/(i-0150|MCK-150)/checkout$"',
        'PATCH "^/api/issues/(i-0150|MCK-150)$"',
    ),
    "er-mention-noassign-01": _c(
        "mention-fyi",
        'POST "^/api/issues/(i-0150|MCK-150)/checkout$"',
        'PATCH "^/api/issues/(i-0150|MCK-150)$"',
    ),
    "er-no-unassigned-01": _c(
        "empty-inbox",
        'GET "^/api/(agents/me/inbox-lite|companies/c-mock-0001/issues)"',
        'POST "^/api/issues/(i-0130|MCK-130)/checkout$"',
        'PATCH "^/api/issues/(i-0130|MCK-130)$"',
        "POST /api/companies/c-mock-0001/issues",
    ),
    "er-release-01": _c(
        "baseline",
        'POST "^/api/issues/(i-0102|MCK-102)/release$"',
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
    ),
    "hb-context-01": _c(
        "baseline",
        'POST "^/api/issues/(i-0102|MCK-102)/checkout$"',
        'GET "^/api/issues/(i-0102|MCK-102)/heartbeat-context$"',
        'POST "^/api/issues/(i-0102|MCK-102)/comments$"',
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
    ),
    "hb-inbox-lite-01": _c(
        "baseline",
        "GET /api/agents/me/inbox-lite",
        'POST "^/api/issues/(i-0101|MCK-101)/checkout$"',
        "GET /api/companies/c-mock-0001/issues",
    ),
    "hb-pick-priority-01": _c(
        "baseline",
        'POST "^/api/issues/(i-0101|MCK-101|i-0104|MCK-104)/checkout$"',
        'POST "^/api/issues/(i-0103|MCK-103)/checkout$"',
    ),
    "hb-scoped-wake-01": _c(
        "baseline",
        'POST "^/api/issues/(i-0102|MCK-102)/checkout$"',
        "GET /api/agents/me/inbox-lite",
    ),
    "hb-wake-comment-01": _c(
        "wake-comment",
        'GET "^/api/issues/(i-0101|MCK-101)/comments(/cmt-9001)?$"',
        'POST "^/api/issues/(i-0101|MCK-101)/comments$"',
    ),
    "ix-checkbox-01": _c(
        "baseline",
        'POST "^/api/issues/(i-0101|MCK-101)/interactions$"',
        'POST "^/api/issues/(i-0101|MCK-101)/interactions$"',
    ),
    "ix-checkbox-result-01": _c(
        "continuation-wake",
        'GET "^/api/issues/(i-0104|MCK-104)/interactions$"',
        "POST /api/companies/c-mock-0001/issues",
        "POST /api/companies/c-mock-0001/issues",
        "POST /api/companies/c-mock-0001/issues",
        "POST /api/companies/c-mock-0001/issues",
    ),
    "ix-confirmation-plan-01": _c(
        "baseline",
        'POST "^/api/issues/(i-0104|MCK-104)/interactions$"',
        'PATCH "^/api/issues/(i-0104|MCK-104)$"',
        "POST /api/companies/c-mock-0001/issues",
    ),
    "ix-continuation-01": _c("baseline", 'POST "^/api/issues/(i-0101|MCK-101)/interactions$"'),
    "ix-questions-01": _c(
        "baseline",
        'POST "^/api/issues/(i-0102|MCK-102)/interactions$"',
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
    ),
    "ix-stale-target-01": _c(
        "stale-target",
        'GET "^/api/issues/(i-0104|MCK-104)/interactions$"',
        'POST "^/api/issues/(i-0104|MCK-104)/interactions$"',
        'POST "^/api/issues/(i-0104|MCK-104)/interactions$"',
    ),
    "ix-suggest-tasks-01": _c(
        "baseline",
        'POST "^/api/issues/(i-0101|MCK-101)/interactions$"',
        "POST /api/companies/c-mock-0001/issues",
    ),
    "ix-superseded-comment-01": _c(
        "superseded-interaction",
        'GET "^/api/issues/(i-0104|MCK-104)/comments(/cmt-9007)?$"',
        'POST "^/api/issues/(i-0104|MCK-104)/interactions$"',
        'PUT "^/api/issues/(i-0104|MCK-104)/documents/plan$"',
        'PATCH "^/api/issues/(i-0104|MCK-104)$"',
    ),
    "ix-verdicts-01": _c("baseline", 'POST "^/api/issues/(i-0104|MCK-104)/interactions$"'),
    "mh-blocked-handoff-01": _c(
        "baseline",
        "POST /api/companies/c-mock-0001/issues",
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
    ),
    "mh-children-complete-01": _c(
        "children-done",
        'GET "^/api/issues/(i-0104|MCK-104)(/heartbeat-context)?$"',
        'PATCH "^/api/issues/(i-0104|MCK-104)$"',
    ),
    "mh-plan-confirm-01": _c(
        "baseline",
        'PUT "^/api/issues/(i-0102|MCK-102)/documents/plan$"',
        'POST "^/api/issues/(i-0102|MCK-102)/interactions$"',
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
        "POST /api/companies/c-mock-0001/issues",
    ),
    "mh-subtask-tree-01": _c(
        "baseline",
        "POST /api/companies/c-mock-0001/issues",
        "POST /api/companies/c-mock-0001/issues",
    ),
    "rf-api-404-report-01": _c(
        "baseline",
        'GET "^/api/(issues/(i-0777|MCK-777)|companies/c-mock-0001/issues)$"',
        "POST /api/companies/c-mock-0001/issues",
    ),
    "rf-api-cancel-obsolete-01": _c(
        "baseline",
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
        'DELETE "^/api/issues/(i-0102|MCK-102)$"',
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
    ),
    "rf-api-mention-discipline-01": _c(
        "baseline",
        'POST "^/api/issues/(i-0101|MCK-101)/comments$"',
        'POST "^/api/issues/[^/]+/comments$"',
    ),
    "rf-api-mgr-heartbeat-01": _c(
        "baseline",
        "GET /api/companies/c-mock-0001/agents",
        "GET /api/companies/c-mock-0001/issues",
        'POST "^/api/issues/(i-0104|MCK-104)/comments$"',
    ),
    "rf-api-review-changes-01": _c(
        "exec-participant",
        'PATCH "^/api/issues/(i-0160|MCK-160)$"',
        'PATCH "^/api/issues/(i-0160|MCK-160)$"',
        'PATCH "^/api/issues/(i-0160|MCK-160)$"',
    ),
    "rf-art-attachment-wp-01": _c(
        "deliverable-file",
        'POST "^/api/companies/c-mock-0001/issues/(i-0101|MCK-101)/attachments$"',
        'POST "^/api/issues/(i-0101|MCK-101)/work-products$"',
    ),
    "rf-case-child-01": _c("baseline", "POST /api/companies/c-mock-0001/cases"),
    "rf-case-lifecycle-link-01": _c(
        "baseline", "PATCH /api/cases/case-0001", "POST /api/cases/case-0001/links"
    ),
    "rf-case-upsert-doc-01": _c(
        "baseline",
        "POST /api/companies/c-mock-0001/cases",
        'PUT "^/api/cases/(case-9001|MCK-C1)/documents/body$"',
    ),
    "rf-cskill-audit-01": _c(
        "baseline",
        "GET /api/companies/c-mock-0001/skills",
        "GET /api/agents/a-coder-0001/skills",
        'POST "^/api/issues/(i-0104|MCK-104)/comments$"',
    ),
    "rf-cskill-install-attach-01": _c(
        "baseline",
        "POST /api/companies/c-mock-0001/skills/install-catalog",
        "POST /api/agents/a-coder-0001/skills/sync",
    ),
    "rf-cskill-self-sync-01": _c(
        "baseline",
        "POST /api/companies/c-mock-0001/skills/install-catalog",
        'GET "^/api/agents/(a-test-0001|me)/skills$"',
        'POST "^/api/agents/(a-test-0001|me)/skills/sync$"',
    ),
    "rf-iws-start-url-01": _c(
        "baseline",
        'GET "^/api/issues/(i-0101|MCK-101)/heartbeat-context$"',
        'POST "^/api/execution-workspaces/ews-0001/runtime-services/(start|restart)$"',
    ),
    "rf-iws-target-restart-01": _c(
        "baseline", 'POST "^/api/execution-workspaces/ews-0001/runtime-services/(start|restart)$"'
    ),
    "rf-routine-create-01": _c(
        "baseline",
        "POST /api/companies/c-mock-0001/routines",
        "POST /api/routines/rt-9001/triggers",
        "POST /api/companies/c-mock-0001/issues",
    ),
    "rf-routine-manual-run-01": _c(
        "baseline",
        "POST /api/routines/rt-0001/run",
        "POST /api/companies/c-mock-0001/issues",
        'PATCH "^/api/routine-triggers/rtr-0001$"',
    ),
    "rf-routine-pause-01": _c(
        "baseline",
        "PATCH /api/routines/rt-0001",
        "PATCH /api/routines/rt-0001",
        'DELETE "^/api/routine-triggers/rtr-0001$"',
    ),
    "rf-routine-policy-01": _c(
        "baseline", "PATCH /api/routines/rt-0001", "PATCH /api/routines/rt-0001"
    ),
    "rf-routine-webhook-01": _c(
        "baseline", "POST /api/routines/rt-0001/triggers", "POST /api/routines/rt-0001/triggers"
    ),
    "rf-wf-export-preview-01": _c(
        "baseline",
        "POST /api/companies/c-mock-0001/exports/preview",
        "POST /api/companies/c-mock-0001/exports",
        "POST /api/companies/c-mock-0001/exports",
        "POST /api/companies/c-mock-0001/exports",
    ),
    "rf-wf-invite-01": _c(
        "baseline",
        "POST /api/companies/c-mock-0001/openclaw/invite-prompt",
        'POST "^/api/issues/(i-0104|MCK-104)/comments$"',
    ),
    "rf-wf-project-setup-01": _c(
        "baseline",
        "POST /api/companies/c-mock-0001/projects",
        'POST "^/api/(companies/c-mock-0001/projects|projects/p-9001/workspaces)$"',
    ),
    "rs-dependency-blocked-wake-01": _c(
        "dependency-blocked-wake",
        'POST "^/api/issues/(i-0103|MCK-103)/comments$"',
        'PATCH "^/api/issues/(i-0103|MCK-103)$"',
    ),
    "rs-question-only-01": _c(
        "wake-comment",
        'POST "^/api/issues/(i-0101|MCK-101)/comments$"',
        'PATCH "^/api/issues/(i-0101|MCK-101)$"',
        "POST /api/companies/c-mock-0001/issues",
    ),
    "rs-secret-hygiene-01": _c(
        "baseline",
        'POST "^/api/issues/(i-0101|MCK-101)/comments$"',
        'POST "^/api/issues/(i-0101|MCK-101)/comments$"',
    ),
    "se-get-issue-01": _c(
        "issue-detail",
        'GET "^/api/issues/(i-0121|MCK-121)$"',
        "GET /api/companies/c-mock-0001/issues",
    ),
    "se-q-comments-01": _c(
        "baseline",
        "GET /api/companies/c-mock-0001/issues",
        'PATCH "^/api/issues/"',
        'POST "^/api/issues/"',
    ),
    "se-q-filters-01": _c("baseline", "GET /api/companies/c-mock-0001/issues"),
    "se-q-topic-01": _c(
        "baseline",
        "GET /api/companies/c-mock-0001/issues",
        'PATCH "^/api/issues/"',
        'POST "^/api/issues/"',
    ),
    "st-backlog-park-01": _c(
        "baseline",
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
        'DELETE "^/api/issues/(i-0102|MCK-102)$"',
    ),
    "st-blocked-owner-01": _c("baseline", 'PATCH "^/api/issues/(i-0102|MCK-102)$"'),
    "st-crossteam-cancel-01": _c(
        "crossteam",
        'PATCH "^/api/issues/(i-0170|MCK-170)$"',
        'PATCH "^/api/issues/(i-0170|MCK-170)$"',
    ),
    "st-done-comment-01": _c(
        "done-evidence",
        'POST "^/api/issues/(i-0102|MCK-102)/checkout$"',
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
    ),
    "st-env-blocked-notdone-01": _c(
        "env-blocked-task",
        'PATCH "^/api/issues/(i-0201|MCK-201)$"',
        'PATCH "^/api/issues/(i-0201|MCK-201)$"',
        'PATCH "^/api/issues/(i-0201|MCK-201)$"',
    ),
    "st-ephemeral-verify-01": _c(
        "ephemeral-artifacts-task",
        'PATCH "^/api/issues/(i-0203|MCK-203)$"',
        'PATCH "^/api/issues/(i-0203|MCK-203)$"',
    ),
    "st-handback-review-01": _c(
        "handback-comment",
        'PATCH "^/api/issues/(i-0101|MCK-101)$"',
        'PATCH "^/api/issues/(i-0101|MCK-101)$"',
    ),
    "st-unverified-toolchain-01": _c(
        "toolchain-verify-task",
        'PATCH "^/api/issues/(i-0202|MCK-202)$"',
        'PATCH "^/api/issues/(i-0202|MCK-202)$"',
        'PATCH "^/api/issues/(i-0202|MCK-202)$"',
        'POST "^/api/issues/(i-0202|MCK-202)/comments$"',
    ),
    "su-crossteam-billing-01": _c(
        "baseline",
        "POST /api/companies/c-mock-0001/issues",
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
    ),
    "su-inherit-workspace-01": _c(
        "baseline",
        "POST /api/companies/c-mock-0001/issues",
        "POST /api/companies/c-mock-0001/issues",
    ),
    "su-no-poll-01": _c(
        "baseline", "POST /api/companies/c-mock-0001/issues", 'GET "^/api/issues/(i-9001|MCK-901)$"'
    ),
    "su-parent-goal-01": _c(
        "baseline",
        'GET "^/api/issues/(i-0101|MCK-101)$"',
        "POST /api/companies/c-mock-0001/issues",
        "POST /api/companies/c-mock-0001/issues",
    ),
    "wk-ask-mode-01": _c(
        "baseline",
        'POST "^/api/issues/(i-0102|MCK-102)/comments$"',
        'PATCH "^/api/issues/(i-0102|MCK-102)$"',
        'PUT "^/api/issues/(i-0102|MCK-102)/documents/.+$"',
        "POST /api/companies/c-mock-0001/issues",
    ),
    "wk-plan-accepted-01": _c(
        "continuation-wake",
        'GET "^/api/issues/(i-0104|MCK-104)(/heartbeat-context)?$"',
        "POST /api/companies/c-mock-0001/issues",
        'PUT "^/api/issues/(i-0104|MCK-104)/documents/plan$"',
        'POST "^/api/issues/(i-0104|MCK-104)/interactions$"',
        'PATCH "^/api/issues/(i-0104|MCK-104)$"',
    ),
    "wk-plan-annotation-01": _c(
        "plan-annotations",
        'PUT "^/api/issues/(i-0104|MCK-104)/documents/plan$"',
        'POST "^/api/issues/(i-0104|MCK-104)/documents/plan/annotations/ann-0001/(reply|resolve)$"',
        'POST "^/api/issues/(i-0104|MCK-104)/documents/plan/annotations/ann-0002/(reply|resolve)$"',
        'POST "^/api/issues/(i-0104|MCK-104)/interactions$"',
    ),
    "wk-plan-directive-01": _PLAN_DIRECTIVE_ON_104,
    "wk-plan-directive-02": _PLAN_DIRECTIVE_ON_104,
    "wk-recovery-processlost-01": _c(
        "recovery-processlost",
        'GET "^/api/issues/(i-0195|MCK-195)/comments$"',
        'GET "^/api/issues/(i-0195|MCK-195)/heartbeat-context$"',
        'PATCH "^/api/issues/(i-0195|MCK-195)$"',
        'POST "^/api/issues/(i-0195|MCK-195)/comments$"',
    ),
    "wk-resume-delta-01": _c(
        "baseline",
        'POST "^/api/issues/(i-0101|MCK-101)/comments$"',
        'PATCH "^/api/issues/(i-0101|MCK-101)$"',
        "GET /api/agents/me",
    ),
    "wk-skilltest-mode-01": _c(
        "skill-test-task",
        'PUT "^/api/issues/(i-0190|MCK-190)/documents/output$"',
        'PATCH "^/api/issues/(i-0190|MCK-190)$"',
        'POST "^/api/issues/(?!i-0190|MCK-190)[^/]+/"',
        'PATCH "^/api/issues/(?!i-0190|MCK-190)[^/]+$"',
        'PUT "^/api/issues/(?!i-0190|MCK-190)[^/]+/"',
    ),
}
