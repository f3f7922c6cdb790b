"""The Paperclip scenario explorer's data (docs/paperclip.md#the-suite).

Every corpus case of the derivative (`capeval.paperclip.derivative`), with
what the suite does with it: the fake agent's plan, each configuration's
calls with their authorization decision and reason, its field-level state
diff and failures. Those come from running the case's configurations in
process, exactly as `capeval paperclip run` runs them
(`capeval.paperclip.suite.run_configuration`, on the mock control plane:
no credential, no network, nothing outside this process). Rows a
`capeval paperclip run --jsonl` (or `report`) recorded are shown beside them
and compared, and the rows of `capeval paperclip live` turns (their
journals' surface, calls and decisions) where they exist, and a control
plane's journal itself (`python -m capeval.paperclip.mcpserver --journal
FILE`) when one is given: every call Codex made with its decision, reason
and the state diff it caused.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from capeval.paperclip.derivative import Row

EVIDENCE = Path(".capeval") / "evidence" / "paperclip"
SUITE_ROWS = "eval-parity-rows.jsonl"
LIVE_ROWS = Path("live") / "live-rows.jsonl"
# Entities every write touches (audit records, idempotency, the revision):
# listed after the changes that matter, as the suite's failure text does.
BOOKKEEPING = frozenset({"auditRecords", "idempotency", "state"})


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _diff_rows(changes: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    rows = [
        {
            "entity": str(c.get("entity")),
            "id": str(c.get("id")),
            "field": str(c.get("field")),
            "before": _json_text(c.get("before")),
            "after": _json_text(c.get("after")),
            "bookkeeping": c.get("entity") in BOOKKEEPING,
        }
        for c in changes
    ]
    return sorted(rows, key=lambda r: r["bookkeeping"])


def _is_suite_row(obj: Mapping[str, Any]) -> bool:
    return {"caseId", "grants", "stateDiff", "passed"} <= set(obj)


def _is_live_row(obj: Mapping[str, Any]) -> bool:
    # `agentExitCode` since live turns ran on more than one CLI; `codexExitCode` before.
    return {"caseId", "surface"} <= set(obj) and bool({"agentExitCode", "codexExitCode"} & set(obj))


def _journal(file: Path, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A control plane's journal (`capeval.paperclip.mcpserver --journal`) as shown."""
    opened = records[0]
    surfaces = [r.get("operations") for r in records if r.get("kind") == "surface"]
    return {
        "file": str(file),
        "granted": opened.get("granted"),
        "surface": surfaces[-1] if surfaces else None,
        "calls": [
            {
                "operation": r.get("operation"),
                "onSurface": r.get("onSurface"),
                "decision": r.get("decision"),
                "reason": r.get("reason"),
                "ok": r.get("ok"),
                "error": r.get("error"),
                "detail": r.get("detail"),
                "arguments": _json_text(r.get("arguments")),
                "stateDiff": _diff_rows(r.get("stateDiff") or []),
            }
            for r in records
            if r.get("kind") == "call"
        ],
        "errors": [str(r.get("message")) for r in records if r.get("kind") == "error"],
    }


@dataclass
class Explorer:
    rows: list[Row] = field(default_factory=list)
    derivative: str | None = None
    problem: str | None = None
    warnings: list[str] = field(default_factory=list)
    recorded: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    live: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    journals: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    recorded_files: list[str] = field(default_factory=list)
    _computed: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    def read_rows(self, paths: Sequence[Path]) -> None:
        """Suite and live rows from JSON Lines files or folders holding them."""
        files: list[Path] = []
        for path in paths:
            if path.is_dir():
                files += sorted(p for p in path.rglob("*.jsonl") if p.is_file())
            elif path.is_file():
                files.append(path)
            else:
                self.warnings.append(f"paperclip rows: {path}: no such file or folder")
        for file in files:
            self._read_file(file)

    def _read_file(self, file: Path) -> None:
        found = 0
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            self.warnings.append(f"paperclip rows: {file}: cannot read: {exc}")
            return
        objects: list[dict[str, Any]] = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                self.warnings.append(f"paperclip rows: {file}:{number}: not JSON; skipped")
                continue
            if isinstance(obj, dict):
                objects.append(obj)
        if objects and objects[0].get("kind") == "open" and "caseId" in objects[0]:
            # A live turn's journal: what the control plane showed, decided and changed.
            case_id = str(objects[0]["caseId"])
            self.journals.setdefault(case_id, []).append(_journal(file, objects))
            self.recorded_files.append(str(file))
            return
        for obj in objects:
            if _is_live_row(obj):
                self.live.setdefault(str(obj["caseId"]), []).append(obj)
                found += 1
            elif _is_suite_row(obj):
                self.recorded[(str(obj["caseId"]), str(obj["grants"]))] = obj
                found += 1
        if found:
            self.recorded_files.append(str(file))

    def index(self) -> dict[str, Any]:
        from capeval.core.paperclip.policy import ASSERTION_CLASSES, GROUPS

        cases = []
        for i, row in enumerate(self.rows):
            configs = self._configurations(i)
            cases.append(
                {
                    "id": i,
                    "caseId": row.id,
                    "title": row.title,
                    "group": row.group,
                    "assertionClasses": list(row.assertionClasses),
                    "actor": row.actor,
                    "taskMode": row.taskMode,
                    "disposition": row.primaryDisposition,
                    "configurations": len(configs),
                    "passed": all(c["passed"] for c in configs),
                    "recorded": any(c["recorded"] is not None for c in configs),
                    "live": len(self.live.get(row.id, [])) + len(self.journals.get(row.id, [])),
                }
            )
        return {
            "derivative": self.derivative,
            "problem": self.problem,
            "groups": [
                {"code": g.code, "area": g.area, "cases": g.cases, "grant": g.grant}
                for g in GROUPS.values()
            ],
            "assertionClasses": list(ASSERTION_CLASSES),
            "recordedFiles": self.recorded_files,
            "warnings": self.warnings,
            "cases": cases,
        }

    def _configurations(self, i: int) -> list[dict[str, Any]]:
        """Each configuration of case `i`, run in process, with its recorded row beside it."""
        if i in self._computed:
            return self._computed[i]
        from capeval.paperclip.fakeagent import PlanError, auth_context, derive_plan
        from capeval.paperclip.suite import configurations, run_configuration

        row = self.rows[i]
        out: list[dict[str, Any]] = []
        try:
            plan = derive_plan(row)
        except PlanError as exc:
            self._computed[i] = [
                {"grants": g, "passed": False, "planError": str(exc), "recorded": None}
                for g in configurations(row)
            ]
            return self._computed[i]
        for grants in configurations(row):
            result = run_configuration(row, grants, plan=plan)
            # As JSON, as a recorded row holds it (tuples read back as lists).
            computed = json.loads(json.dumps(result.to_row(), default=str))
            recorded = self.recorded.get((row.id, grants))
            claims = auth_context(row, plan.run_task, granted=grants != "ungranted").claims
            out.append(
                {
                    "grants": grants,
                    "claims": sorted(claims),
                    "passed": recorded["passed"] is True if recorded else result.passed,
                    "computedPassed": result.passed,
                    "controlPlaneActions": list(result.control_plane_actions),
                    "calls": [
                        {
                            "operation": step.operation,
                            "kind": step.kind,
                            "source": step.source,
                            "arguments": _json_text(step.args),
                            "decision": res.decision.decision,
                            "reason": res.decision.reason,
                            "missingClaims": list(res.decision.missing_claims),
                            "ok": res.ok,
                            "error": res.error,
                            "detail": res.detail,
                            "entityId": res.entity_id,
                            "replayed": res.replayed,
                        }
                        for step, res in result.calls
                    ],
                    "stateDiff": _diff_rows(computed["stateDiff"]),
                    "failures": [
                        {**f, "stateDiff": None, "stepDiff": _diff_rows(f.get("stepDiff") or [])}
                        for f in computed["failures"]
                    ],
                    "recorded": None if recorded is None else self._recorded(recorded, computed),
                }
            )
        self._computed[i] = out
        return out

    @staticmethod
    def _recorded(recorded: Mapping[str, Any], computed: Mapping[str, Any]) -> dict[str, Any]:
        """A recorded row as shown, and whether this capeval's suite computes the same."""
        same = all(
            recorded.get(k) == computed.get(k)
            for k in ("operations", "decisions", "passed", "stateDiff")
        )
        return {
            "passed": recorded.get("passed"),
            "operation": recorded.get("operation"),
            "authorizationDecision": recorded.get("authorizationDecision"),
            "operations": recorded.get("operations"),
            "decisions": recorded.get("decisions"),
            "stateDiffSize": recorded.get("stateDiffSize"),
            "stateDiff": _diff_rows(recorded.get("stateDiff") or []),
            "failures": [
                {
                    **{k: v for k, v in f.items() if k not in ("stateDiff", "stepDiff")},
                    "stepDiff": _diff_rows(f.get("stepDiff") or []),
                }
                for f in recorded.get("failures") or []
                if isinstance(f, dict)
            ],
            "sameAsComputed": same,
        }

    def case(self, i: int) -> dict[str, Any]:
        from capeval.core.paperclip.policy import GROUPS
        from capeval.paperclip.fakeagent import PlanError, derive_plan

        row = self.rows[i]
        group = GROUPS.get(row.group)
        try:
            plan = derive_plan(row)
            plan_json: dict[str, Any] | None = {
                "fixture": plan.fixture,
                "seed": plan.seed,
                "runTask": plan.run_task,
                "role": plan.role,
                "taskMode": plan.task_mode,
                "steps": [{**s.to_json(), "arguments": _json_text(s.args)} for s in plan.steps],
            }
            plan_error = None
        except PlanError as exc:
            plan_json, plan_error = None, str(exc)
        return {
            "id": i,
            "caseId": row.id,
            "title": row.title,
            "group": row.group,
            "groupArea": group.area if group else None,
            "groupGrant": group.grant if group else None,
            "legacyGroup": row.legacyGroup,
            "fixture": row.fixture,
            "actor": row.actor,
            "taskMode": row.taskMode,
            "scenario": row.scenario,
            "expectedOutcome": row.expectedOutcome,
            "disposition": row.primaryDisposition,
            "requiredGrants": list(row.requiredGrants),
            "assertionClasses": list(row.assertionClasses),
            "expectedSemantics": list(row.expectedSemantics),
            "plan": plan_json,
            "planError": plan_error,
            "configurations": self._configurations(i),
            "live": [
                {
                    k: r.get(k)
                    for k in (
                        "agent",
                        "grants",
                        "repeat",
                        "outcome",
                        "operation",
                        "surface",
                        "operations",
                        "decisions",
                        "stateDiffSize",
                        "agentExitCode",
                        "codexExitCode",
                        "durationMs",
                        "model",
                        "passed",
                        "failures",
                    )
                }
                for r in self.live.get(row.id, [])
            ],
            "journals": self.journals.get(row.id, []),
        }


def load_explorer(
    *, derivative: Path | None = None, root: Path | None = None, rows: Sequence[str | Path] = ()
) -> Explorer:
    """The explorer of `derivative` (default: the checkout's), with recorded rows.

    Without `rows`, the workspace's evidence folder (`.capeval/evidence/paperclip/`,
    where `capeval paperclip report` and `live` write) is read when it exists.
    """
    from capeval.core.problems import ProblemsError
    from capeval.paperclip.derivative import find_derivative, load_derivative

    explorer = Explorer()
    try:
        path = derivative or find_derivative(root)
        explorer.rows = load_derivative(path)
        explorer.derivative = str(path)
    except ProblemsError as exc:
        explorer.problem = "; ".join(str(p) for p in exc.problems[:3])
        return explorer
    given = [Path(p) for p in rows]
    if not given:
        base = root if root is not None else Path(explorer.derivative).parents[2]
        evidence = base / EVIDENCE
        given = [p for p in (evidence / SUITE_ROWS, evidence / LIVE_ROWS) if p.is_file()]
    explorer.read_rows(given)
    return explorer
