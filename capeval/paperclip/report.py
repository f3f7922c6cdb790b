"""The parity report and the configuration row stream, as files.

Everything written here is a pure function of the derivative, the code and
the live rows folded in: sorted keys, stable ordering, so two runs give
identical bytes and a diff between two reports is a real change. The one
exception is the `live` section's timestamps and model ids, which come from
the live turns and which the section names in its `nondeterministic` list.
Files are written to a temporary name and renamed into place, so an
interrupted run never leaves a half-written report behind.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from capeval.core.paperclip.policy import ASSERTION_CLASSES, GROUPS
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


# What the `live` section holds that two live runs of the same rows need not agree on.
LIVE_NONDETERMINISTIC: tuple[str, ...] = (
    "agents.*.startedAt",
    "agents.*.finishedAt",
    "agents.*.models",
)


def live_section(summary: dict[str, Any]) -> dict[str, Any]:
    """The report's `live` section from `counts.live_summary`: totals, per-agent facts,
    per-group pass rates (per grant configuration, and per agent over both) and the
    turns that did not pass. Pass rates are passed / (passed + failed): an `error` turn
    (the measurement did not happen) is counted apart and left out."""
    agents = summary["agents"]
    totals = {k: sum(a[k] for a in agents.values()) for k in ("turns", "passed", "failed", "error")}
    judged = totals["passed"] + totals["failed"]
    return {
        "nondeterministic": list(LIVE_NONDETERMINISTIC),
        **totals,
        "passRate": round(totals["passed"] / judged, 4) if judged else None,
        "agents": agents,
        "groups": summary["groups"],
        "matrix": summary["matrix"],
        "failures": summary["failures"],
    }


def build_report(
    result: SuiteResult,
    group_counts: dict[str, dict[str, int]],
    live: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The report object; `group_counts` comes from the analysis layer over the row stream,
    `live` (a `live_section`, or None when no live rows were folded in) likewise over
    the live rows."""
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
        "live": live,
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
    lines += _live_md(report.get("live"))
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


def _rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def _live_md(live: dict[str, Any] | None) -> list[str]:
    lines = ["", "## Live conformance", ""]
    if live is None:
        return [*lines, "No live rows folded in (`capeval paperclip live`, then `report`)."]
    lines += [
        f"{live['turns']} turns: {live['passed']} passed, {live['failed']} failed, "
        f"{live['error']} error; pass rate {_rate(live['passRate'])} (passed / (passed + "
        "failed): an error turn measured nothing and is left out). Not deterministic: "
        + ", ".join(f"`{k}`" for k in live["nondeterministic"])
        + ".",
        "",
        "| agent | version | models | scripted | turns | passed | failed | error | first turn | last turn |",
        "|---|---|---|---|---:|---:|---:|---:|---|---|",
    ]
    for name, a in live["agents"].items():
        lines.append(
            f"| {name} | {', '.join(a['agentVersions']) or '-'} | {', '.join(a['models']) or '-'} "
            f"| {'yes' if a['scripted'] else 'no'} | {a['turns']} | {a['passed']} | {a['failed']} "
            f"| {a['error']} | {a['startedAt'] or '-'} | {a['finishedAt'] or '-'} |"
        )
    agents = list(live["agents"])
    lines += [
        "",
        "Pass rate per group and agent (both grant configurations; passed/judged, errors apart):",
        "",
        "| group | " + " | ".join(agents) + " |",
        "|---|" + "---|" * len(agents),
    ]
    for group, by_agent in live["matrix"].items():
        cells = []
        for name in agents:
            c = by_agent.get(name)
            if c is None:
                cells.append("-")
                continue
            err = f", {c['error']} error" if c["error"] else ""
            cells.append(f"{_rate(c['passRate'])} ({c['passed']}/{c['passed'] + c['failed']}{err})")
        lines.append(f"| {group} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| group | agent | grants | turns | passed | failed | error | pass rate |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for g in live["groups"]:
        lines.append(
            f"| {g['group']} | {g['agent']} | {g['grants']} | {g['turns']} | {g['passed']} "
            f"| {g['failed']} | {g['error']} | {_rate(g['passRate'])} |"
        )
    lines += ["", "### Live turns that did not pass", ""]
    if not live["failures"]:
        lines.append("None.")
    for turn in live["failures"]:
        head = f"- {turn['agent']} {turn['caseId']}:{turn['grants']} repeat {turn['repeat']} ({turn['outcome']})"
        lines.append(head)
        for f in turn["failures"]:
            why = f" ({f['reason']})" if f.get("reason") else ""
            lines.append(
                f"  - [{f['assertionClass']}] `{f['operation'] or '-'}` "
                f"decision={f['decision'] or '-'}{why}: {f['message']}"
            )
    return lines


# What every live row holds for the report to count it.
_LIVE_KEYS = ("caseId", "group", "grants", "agent", "outcome")


def read_live_rows(paths: Sequence[str | Path]) -> tuple[list[dict[str, Any]], list[str]]:
    """The live rows of `paths`, read by the result stream reader (a torn last line is a
    warning, any other bad line an error naming file and line), and the warnings.

    A file named twice (or by two names) is read once, with a warning, as every result
    reader reads it; turns a file shares with an earlier one (a copy of a matrix's rows:
    the same run, agent, configuration and repeat) are counted in both, with the
    readers' warning.

    Raises `ResultFileError` for a row that is no live turn's (a suite row, a capability
    row, a live row from before turns had an outcome and an agent)."""
    from collections import Counter

    from capeval.core.outcome import OUTCOMES
    from capeval.results.errors import ResultFileError
    from capeval.results.jsonl import read_jsonl
    from capeval.results.overlap import distinct_files, shared_repeats_warning

    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    hint = "pass the live-rows.jsonl that `capeval paperclip live` writes"
    seen: dict[tuple[Any, ...], str] = {}  # a turn -> the first file that held it
    for path in distinct_files(paths, on_warning=warnings.append):
        try:
            found, passed_over = read_jsonl(path)
        except ResultFileError as exc:  # e.g. the suite's own rows, which are no result rows
            raise ResultFileError(exc.path, f"{exc.message}; {hint}", line=exc.line) from exc
        warnings += passed_over
        for i, row in enumerate(found, 1):
            missing = [k for k in _LIVE_KEYS if not isinstance(row.get(k), str)]
            if missing or row["outcome"] not in OUTCOMES:
                what = f"no {', '.join(missing)}" if missing else f"outcome {row['outcome']!r}"
                raise ResultFileError(
                    path,
                    f"row {i} is not a live turn's row ({what}); {hint} (run the matrix again "
                    "for rows from before live turns had an outcome)",
                )
        turns = {
            (row["runId"], row["agent"], row["caseId"], row["grants"], row.get("repeat"))
            for row in found
            if isinstance(row.get("runId"), str)
        }
        shared = Counter(seen[t] for t in turns if seen.get(t, str(path)) != str(path))
        for other, count in shared.items():
            warnings.append(shared_repeats_warning(path, count, other))
        for turn in turns:
            seen.setdefault(turn, str(path))
        rows += found
    return rows, warnings


def write_report(
    result: SuiteResult, out_dir: str | Path, *, live_rows: Sequence[str | Path] = ()
) -> tuple[Path, Path, Path]:
    """Write the row stream, then the JSON and Markdown reports computed from it and from
    the live rows in `live_rows` (files `capeval paperclip live` wrote), if any.

    The live rows are read and checked (`read_live_rows`) before DuckDB counts them, so
    a torn last line is passed over as every result reader passes it over."""
    import tempfile

    from capeval.paperclip.counts import group_counts, live_summary

    out_dir = Path(out_dir)  # a notebook passes a string, as load_frame and connect allow
    rows_path = out_dir / ROWS_JSONL
    write_rows(result, rows_path)
    live = None
    if live_rows:
        rows, _ = read_live_rows(live_rows)
        with tempfile.TemporaryDirectory(prefix="capeval-live-report-") as tmp:
            checked = Path(tmp) / "live-rows.jsonl"
            checked.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
            live = live_section(live_summary([checked]))
    report = build_report(result, group_counts(rows_path), live)
    json_path, md_path = out_dir / REPORT_JSON, out_dir / REPORT_MD
    write_output(json_path, json.dumps(report, indent=2, sort_keys=True) + "\n")
    write_output(md_path, render_markdown(report))
    return json_path, md_path, rows_path
