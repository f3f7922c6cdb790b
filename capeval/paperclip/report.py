"""The parity report and the configuration row stream, as files.

Everything written here is a pure function of the derivative and the code:
no timestamps, sorted keys, stable ordering, so two runs give identical bytes
and a diff between two reports is a real change. Files are written to a
temporary name and renamed into place, so an interrupted run never leaves a
half-written report behind.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from capeval.paperclip.policy import ASSERTION_CLASSES, GROUPS
from capeval.paperclip.suite import (
    BINDING_PARITY,
    CODEX_SAMPLE,
    CONTROL_PLANE_NAMES,
    ConfigResult,
    SuiteResult,
)
from capeval.results.output import write_output

DEFAULT_OUT = Path(".capeval/evidence/paperclip")
REPORT_JSON = "eval-parity-report.json"
REPORT_MD = "eval-parity-report.md"
ROWS_JSONL = "eval-parity-rows.jsonl"


def rows_text(result: SuiteResult) -> str:
    return "".join(
        json.dumps(r.to_row(), sort_keys=True, ensure_ascii=False) + "\n" for r in result.results
    )


def write_rows(result: SuiteResult, path: Path) -> None:
    write_output(path, rows_text(result))


def summary(result: SuiteResult) -> dict[str, Any]:
    """The verdict and its totals, shared by the report and `capeval paperclip run --json`.

    `passed`/`failed`/`checks` count every pass/fail unit, the whole-suite
    checks (binding parity, Codex sample) included, so `verdict` and the
    totals always agree with the exit code.
    """
    return {
        "verdict": "passed" if result.ok else "failed",
        "passed": result.passed,
        "failed": result.failed,
        "checks": result.checks,
        "configurations": len(result.results),
        "configurationsPassed": result.configurations_passed,
        "configurationsFailed": result.configurations_failed,
        "parity": {
            "fakeAgent": len(result.fake_agent_operations),
            "codex": len(result.codex_operations),
            "identical": result.parity,
        },
        "boundedCodexSample": [
            {
                k: item[k]
                for k in ("caseId", "group", "operation", "presentInCodex", "expectedPresent")
            }
            for item in result.codex_sample
        ],
        "boundedCodexSampleSkipped": result.codex_sample_skipped,
        "suiteChecks": [c.to_json() for c in result.suite_checks],
    }


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
        **summary(result),
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
        "controlPlaneOperations": list(CONTROL_PLANE_NAMES),
        "operationCounts": result.operation_counts(),
        "refusedAttempts": result.refused_attempts(),
        "uncountedExecutions": result.uncounted_executions(),
        "results": [_result_entry(r) for r in result.results],
        "failures": [f.to_json() for f in result.failures],
    }


def _result_entry(r: ConfigResult) -> dict[str, Any]:
    """One configuration in the fake-agent matrix."""
    operation, decision = r.headline()
    return {
        "caseId": r.row.id,
        "group": r.row.group,
        "grants": r.grants,
        "operation": operation,
        "authorizationDecision": decision,
        "operations": [s.operation for s, _ in r.calls],
        "stateDiffSize": len(r.diff),
        "passed": r.passed,
    }


def verdict_line(report: dict[str, Any]) -> str:
    """The one-line verdict of a `summary` (or report): the Markdown headline and the
    CLI's last line, so the two never word it differently."""
    checks = {c["check"]: c for c in report["suiteChecks"]}
    parity, sample = report["parity"], report["boundedCodexSample"]
    parts = [
        f"{report['configurationsPassed']}/{report['configurations']} configurations",
        f"binding parity {parity['fakeAgent']}/{parity['codex']}"
        + _mark(checks.get(BINDING_PARITY)),
        f"Codex sample {sum(s['presentInCodex'] == s['expectedPresent'] for s in sample)}"
        f"/{len(sample)}" + _mark(checks.get(CODEX_SAMPLE)),
    ]
    return (
        f"{report['passed']} passed, {report['failed']} failed of {report['checks']} checks: "
        f"{', '.join(parts)}"
    )


def _mark(check: dict[str, Any] | None) -> str:
    return "" if check is None or check["passed"] else " FAILED"


def render_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Paperclip conformance: parity report",
        "",
        f"**{report['verdict'].upper()}**: {verdict_line(report)}.",
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
    lines += _suite_checks_md(report)
    lines += _sample_md(report)
    lines += _matrix_md(report)
    lines += ["", "## Surface (fake agent = Codex)", ""]
    lines += [f"- `{name}`" for name in report["fakeAgentOperations"]]
    lines += _executions_md(report)
    lines += _failures_md(report)
    return "\n".join(lines) + "\n"


def _suite_checks_md(report: dict[str, Any]) -> list[str]:
    lines = ["", "## Suite checks", "", "| check | result | detail |", "|---|---|---|"]
    for c in report["suiteChecks"]:
        lines.append(f"| {c['check']} | {'pass' if c['passed'] else 'FAIL'} | {c['detail']} |")
    return lines


def _sample_md(report: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "## Bounded Codex sample",
        "",
        "| case | group | operation | in Codex surface |",
        "|---|---|---|---|",
    ]
    for item in report["boundedCodexSample"]:
        lines.append(
            f"| {item['caseId']} | {item['group']} | `{item['operation'] or '-'}` | "
            f"{'yes' if item['presentInCodex'] else 'no'} |"
        )
    if report["boundedCodexSampleSkipped"]:
        skipped = ", ".join(report["boundedCodexSampleSkipped"])
        lines += ["", f"Not sampled (no rows in this run): {skipped}."]
    return lines


def _matrix_md(report: dict[str, Any]) -> list[str]:
    """The fake-agent matrix, one line a case: each configuration's headline decision,
    state diff size and verdict (the JSON's `results` has every call)."""
    lines = [
        "",
        "## Fake-agent matrix",
        "",
        "Per configuration: headline decision, state diff size, verdict.",
        "",
        "| case | headline operation | granted / single | ungranted |",
        "|---|---|---|---|",
    ]
    by_case: dict[str, dict[str, dict[str, Any]]] = {}
    for r in report["results"]:
        by_case.setdefault(r["caseId"], {})[r["grants"]] = r
    for case_id, configs in by_case.items():
        main = configs.get("granted") or configs.get("single") or {}
        ungranted = configs.get("ungranted")
        lines.append(
            f"| {case_id} | `{main.get('operation') or '-'}` | {_cell(main)} | "
            f"{_cell(ungranted) if ungranted else '-'} |"
        )
    return lines


def _cell(r: dict[str, Any]) -> str:
    return (
        f"{r['authorizationDecision']}, {r['stateDiffSize']}, {'pass' if r['passed'] else 'FAIL'}"
    )


def _executions_md(report: dict[str, Any]) -> list[str]:
    lines = ["", "## Operation executions", "", "Calls that ran (allowed).", ""]
    lines += ["| operation | executions |", "|---|---:|"]
    lines += [f"| `{op}` | {n} |" for op, n in report["operationCounts"].items()]
    lines += ["", "## Refused attempts", "", "| operation | absent | denied |", "|---|---:|---:|"]
    for op, by in report["refusedAttempts"].items():
        lines.append(f"| `{op}` | {by.get('absent', 0)} | {by.get('denied', 0)} |")
    if report["uncountedExecutions"]:
        lines += ["", "Executed but never coverage (test-only escape hatch):", ""]
        lines += [f"- `{op}`: {n}" for op, n in report["uncountedExecutions"].items()]
    return lines


def _failures_md(report: dict[str, Any]) -> list[str]:
    lines = ["", "## Failures", ""]
    if not report["failures"]:
        lines.append("None.")
    for f in report["failures"]:
        diff = "; ".join(
            f"{c['entity']}[{c['id']}].{c['field']}: {c['before']!r} -> {c['after']!r}"
            for c in f["stateDiff"][:8]
        )
        why = f" ({f['reason']})" if f.get("reason") else ""
        lines.append(
            f"- {f['caseId']} [{f['assertionClass']}] `{f['operation'] or '-'}` "
            f"decision={f['decision'] or '-'}{why}: {f['message']} (diff: {diff or 'empty'})"
        )
    return lines


def write_report(result: SuiteResult, out_dir: str | Path) -> tuple[Path, Path, Path]:
    """Write the row stream, then the JSON and Markdown reports computed from it."""
    from capeval.paperclip.counts import group_counts

    out_dir = Path(out_dir)  # a notebook passes a string, as load_frame and connect allow
    rows_path = out_dir / ROWS_JSONL
    write_rows(result, rows_path)
    report = build_report(result, group_counts(rows_path))
    json_path, md_path = out_dir / REPORT_JSON, out_dir / REPORT_MD
    write_output(json_path, json.dumps(report, indent=2, sort_keys=True) + "\n")
    write_output(md_path, render_markdown(report))
    return json_path, md_path, rows_path
