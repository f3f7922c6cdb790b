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
