"""From the derivative's REST evidence to semantic operations.

Pure. Each `expectedSemantics` entry is a method plus a literal path or a
quoted regular expression. `concrete_path` picks one path the expression
matches (the first alternative; "another task" for a negative look-ahead or a
wildcard), and `classify` names the catalog operation that path stands for,
with the task or resource it targets. Paths no agent operation covers map to
an operation name the catalog does not know, so authorization answers
`absent` for them, exactly as it should for an endpoint agents never get.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OTHER_TASK = "i-0199"  # a task that exists in no fixture's run scope


@dataclass(frozen=True)
class Semantic:
    method: str
    path: str  # concrete
    raw: str


@dataclass(frozen=True)
class Target:
    operation: str  # "" for a status patch: the row's intent decides the operation
    task: str | None = None
    resource: str | None = None  # approval id, routine id, document key...
    detail: str | None = None  # sub-kind: attachments/work-products, start/restart, ...


METHODS: tuple[str, ...] = ("GET", "POST", "PUT", "PATCH", "DELETE")
_LITERAL = re.compile(r"/\S*")


def entry_problem(entry: str) -> str | None:
    """Why `entry` is not `METHOD /path` or `METHOD "regex"`; None when it is one.

    `parse` takes anything and `classify` maps what it does not know to an
    operation no catalog has, which authorization then calls absent: a typo
    would quietly become a refused probe that passes. The loader asks this
    first, so a malformed entry is a derivative problem instead.
    """
    method, sep, rest = entry.partition(" ")
    if not sep or method not in METHODS:
        return f"method {method!r} is not one of {', '.join(METHODS)}"
    if len(rest) >= 2 and rest.startswith('"') and rest.endswith('"'):
        pattern = rest[1:-1]
        try:
            re.compile(pattern)
        except re.error as exc:
            return f"the quoted pattern does not compile ({exc})"
        if not pattern.removeprefix("^").startswith("/"):
            return "the quoted pattern must match a path starting with '/'"
        return None
    if not _LITERAL.fullmatch(rest):
        return "the path must start with '/' and contain no spaces (quote a pattern)"
    return None


def parse(entry: str) -> Semantic:
    method, _, rest = entry.strip().partition(" ")
    rest = rest.strip()
    if rest.startswith('"') and rest.endswith('"'):
        return Semantic(method, concrete_path(rest[1:-1]), entry)
    return Semantic(method, rest, entry)


def concrete_path(pattern: str) -> str:
    """One path the regular expression matches, chosen deterministically."""
    p = pattern.removeprefix("^").removesuffix("$")
    p = re.sub(r"\(\?!([^)]*)\)\[\^/\]\+", OTHER_TASK, p)
    p = re.sub(r"\(/[^()]*\)\?", "", p)  # optional suffix groups: leave them out
    while True:  # innermost groups first, down to the first alternative of each
        q = re.sub(r"\(([^()|]*)(\|[^()]*)?\)", r"\1", p)
        if q == p:
            break
        p = q
    p = p.replace("[^/]+", OTHER_TASK).replace(".+", "x").replace("?", "")
    if p.endswith("/api/issues/"):
        p += OTHER_TASK
    return p


_ISSUE = r"/api/issues/(?P<task>[^/]+)"
_COMPANY = r"/api/companies/[^/]+"

# (method regex, path regex, operation or "" for a status patch)
_RULES: tuple[tuple[str, str, str], ...] = (
    ("GET", _ISSUE + r"(/heartbeat-context)?", "get_task_context"),
    ("GET", _ISSUE + r"/(comments|interactions)(/.*)?", "get_task_history"),
    ("GET", _ISSUE + r"/documents/(?P<res>[^/]+)", "read_document"),
    ("GET", r"/api/agents/me/inbox-lite", "select_work"),
    ("GET", r"/api/agents/me", "get_agent"),
    ("GET", _COMPANY + r"/issues", "search_tasks"),
    ("GET", _COMPANY + r"/agents", "list_agents"),
    ("GET", r"/api/approvals/(?P<res>[^/]+)", "get_approval"),
    ("GET", r"/api/approvals/(?P<res>[^/]+)/issues", "get_approval_context"),
    ("GET", _COMPANY + r"/skills", "list_company_skills"),
    ("GET", r"/api/agents/[^/]+/skills", "list_company_skills"),
    ("POST", _ISSUE + r"/checkout", "checkout_task"),
    ("POST", _ISSUE + r"/release", "release_task"),
    ("POST", _ISSUE + r"/comments", "report_progress"),
    ("POST", _ISSUE + r"/interactions", "request_human_input"),
    ("POST", _ISSUE + r"/(assign|assignee|assignees|reassign|claim)", "reassign_task"),
    ("POST", _ISSUE + r"/(execution-decisions?|decisions?|approve)", "submit_execution_decision"),
    ("POST", _ISSUE + r"/documents/[^/]+/annotations/.*", "resolve_document_annotation"),
    ("POST", _ISSUE + r"/work-products", "register_deliverable"),
    ("POST", _COMPANY + r"/issues/(?P<task>[^/]+)/attachments", "register_deliverable"),
    ("POST", _COMPANY + r"/issues", "create_task"),
    ("POST", _COMPANY + r"/approvals", "request_approval"),
    ("POST", r"/api/tool-gateway/tools/call", "call_gateway_tool"),
    ("POST", r"/api/tool-gateway/action-requests/[^/]+/approve", "decide_approval"),
    ("POST", _ISSUE, "report_progress"),
    ("POST", _ISSUE + r"/.*", "write_task_subresource"),
    ("PATCH", _ISSUE, ""),
    ("PATCH", _ISSUE + r"/.*", ""),
    ("PUT", _ISSUE + r"/documents/(?P<res>[^/]+)", "write_document"),
    ("PUT", _ISSUE + r"(/.*)?", ""),
    ("DELETE", _ISSUE, "delete_task"),
    ("POST", _COMPANY + r"/cases", "create_case"),
    ("PATCH", r"/api/cases/(?P<res>[^/]+)", "update_case"),
    ("POST", r"/api/cases/(?P<res>[^/]+)/links", "link_case"),
    ("PUT", r"/api/cases/(?P<res>[^/]+)/documents/[^/]+", "write_case_document"),
    (
        "POST",
        r"/api/execution-workspaces/(?P<res>[^/]+)/runtime-services/(?P<d>[a-z]+)",
        "control_workspace_runtime",
    ),
    ("POST", _COMPANY + r"/routines", "create_routine"),
    ("POST", r"/api/routines/(?P<res>[^/]+)/triggers", "add_routine_trigger"),
    ("POST", r"/api/routines/(?P<res>[^/]+)/run", "run_routine"),
    ("PATCH", r"/api/routines/(?P<res>[^/]+)", "update_routine"),
    ("PATCH", r"/api/routine-triggers/(?P<res>[^/]+)", "update_routine_trigger"),
    ("DELETE", r"/api/routine-triggers/(?P<res>[^/]+)", "update_routine_trigger"),
    ("POST", _COMPANY + r"/skills/install-catalog", "install_company_skill"),
    ("POST", r"/api/agents/(?P<res>[^/]+)/skills/sync", "sync_agent_skills"),
    ("POST", _COMPANY + r"/exports/preview", "preview_company_export"),
    ("POST", _COMPANY + r"/exports", "export_company"),
    ("POST", _COMPANY + r"/openclaw/invite-prompt", "create_agent_invite"),
    ("POST", _COMPANY + r"/projects", "create_project"),
    ("POST", r"/api/projects/(?P<res>[^/]+)/workspaces", "create_project_workspace"),
)


def classify(sem: Semantic) -> Target:
    """The operation a concrete REST call stands for; unknown endpoints get a `rest:` name."""
    for method, path, operation in _RULES:
        if sem.method != method:
            continue
        m = re.fullmatch(path, sem.path)
        if m is None:
            continue
        groups = m.groupdict()
        detail = groups.get("d")
        if operation == "register_deliverable":
            detail = "work-products" if sem.path.endswith("work-products") else "attachments"
        return Target(operation, groups.get("task"), groups.get("res"), detail)
    return Target(f"rest:{sem.method} {sem.path}")
