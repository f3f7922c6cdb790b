"""The parity report and the configuration row stream, as files.

Everything written here is a pure function of the derivative and the code:
no timestamps, sorted keys, stable ordering, so two runs give identical bytes
and a diff between two reports is a real change. Files are written to a
temporary name and renamed into place, so an interrupted run never leaves a
half-written report behind.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from capeval.paperclip.policy import ASSERTION_CLASSES, GROUPS
from capeval.paperclip.suite import CONTROL_PLANE_NAMES, SuiteResult

DEFAULT_OUT = Path(".capeval/evidence/paperclip")
REPORT_JSON = "eval-parity-report.json"
REPORT_MD = "eval-parity-report.md"
ROWS_JSONL = "eval-parity-rows.jsonl"


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def rows_text(result: SuiteResult) -> str:
    return "".join(
        json.dumps(r.to_row(), sort_keys=True, ensure_ascii=False) + "\n" for r in result.results
    )


def write_rows(result: SuiteResult, path: Path) -> None:
    _atomic_write(path, rows_text(result))


def build_report(result: SuiteResult, group_counts: dict[str, dict[str, int]]) -> dict[str, Any]:
    """The report object; `group_counts` comes from the analysis layer over the row stream."""
    classes: Counter[str] = Counter()
    class_cases: dict[str, set[str]] = {c: set() for c in ASSERTION_CLASSES}
    for r in result.results:
        for c in r.row.assertionClasses:
            classes[c] += 1
            class_cases[c].add(r.row.id)
    return {
        "schemaVersion": 1,
        "groups": {g: v["cases"] for g, v in sorted(group_counts.items())},
        "groupDetails": {
            g: {**v, "area": GROUPS[g].area, "disposition": GROUPS[g].disposition}
            for g, v in sorted(group_counts.items())
            if g in GROUPS
        },
        "assertionClasses": {
            c: {"cases": len(class_cases[c]), "configurations": classes[c]}
            for c in ASSERTION_CLASSES
        },
        "fakeAgentOperations": result.fake_agent_operations,
        "codexOperations": result.codex_operations,
        "parity": {
            "fakeAgent": len(result.fake_agent_operations),
            "codex": len(result.codex_operations),
            "identical": result.parity,
        },
        "boundedCodexSample": [
            {k: item[k] for k in ("caseId", "group", "operation", "presentInCodex")}
            for item in result.codex_sample
        ],
        "controlPlaneOperations": list(CONTROL_PLANE_NAMES),
        "operationCounts": result.operation_counts(),
        "results": [
            {
                "caseId": r.row.id,
                "group": r.row.group,
                "grants": r.grants,
                "authorizationDecision": r.decision(),
                "operations": [s.operation for s, _ in r.calls],
                "stateDiffSize": len(r.diff),
                "passed": r.passed,
            }
            for r in result.results
        ],
        "passed": result.passed,
        "failed": result.failed,
        "configurations": len(result.results),
        "failures": [f.to_json() for f in result.failures],
    }


def render_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Paperclip conformance: parity report",
        "",
        f"**{report['passed']} passed, {report['failed']} failed** of "
        f"{report['configurations']} configurations; "
        f"binding parity {report['parity']['fakeAgent']}/{report['parity']['codex']} "
        f"({'identical' if report['parity']['identical'] else 'DIFFERENT'}).",
        "",
        "## Groups",
        "",
        "| group | area | cases | configurations | passed | failed |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for g, v in report["groupDetails"].items():
        lines.append(
            f"| {g} | {v['area']} | {v['cases']} | {v['configurations']} | {v['passed']} | {v['failed']} |"
        )
    lines += [
        "",
        "## Assertion classes",
        "",
        "| class | cases | configurations |",
        "|---|---:|---:|",
    ]
    for c, v in report["assertionClasses"].items():
        lines.append(f"| {c} | {v['cases']} | {v['configurations']} |")
    lines += [
        "",
        "## Bounded Codex sample",
        "",
        "| case | group | operation | in Codex surface |",
        "|---|---|---|---|",
    ]
    for item in report["boundedCodexSample"]:
        lines.append(
            f"| {item['caseId']} | {item['group']} | `{item['operation']}` | "
            f"{'yes' if item['presentInCodex'] else 'no'} |"
        )
    lines += ["", "## Surface (fake agent = Codex)", ""]
    lines += [f"- `{name}`" for name in report["fakeAgentOperations"]]
    lines += ["", "## Operation executions", "", "| operation | executions |", "|---|---:|"]
    lines += [f"| `{op}` | {n} |" for op, n in report["operationCounts"].items()]
    lines += ["", "## Failures", ""]
    if not report["failures"]:
        lines.append("None.")
    for f in report["failures"]:
        diff = "; ".join(
            f"{c['entity']}[{c['id']}].{c['field']}: {c['before']!r} -> {c['after']!r}"
            for c in f["stateDiff"][:8]
        )
        lines.append(
            f"- {f['caseId']} [{f['assertionClass']}] `{f['operation'] or '-'}` "
            f"decision={f['decision'] or '-'}: {f['message']} (diff: {diff or 'empty'})"
        )
    return "\n".join(lines) + "\n"


def write_report(result: SuiteResult, out_dir: Path) -> tuple[Path, Path, Path]:
    """Write the row stream, then the JSON and Markdown reports computed from it."""
    from capeval.analysis.paperclip_counts import group_counts

    rows_path = out_dir / ROWS_JSONL
    write_rows(result, rows_path)
    report = build_report(result, group_counts(rows_path))
    json_path, md_path = out_dir / REPORT_JSON, out_dir / REPORT_MD
    _atomic_write(json_path, json.dumps(report, indent=2, sort_keys=True) + "\n")
    _atomic_write(md_path, render_markdown(report))
    return json_path, md_path, rows_path
