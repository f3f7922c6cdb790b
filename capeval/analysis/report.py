"""Renderings of a comparison: the terminal table, Markdown, JSON, JUnit XML, HTML.

Pure text builders over a `Comparison`; the `report` command writes them.
The terminal table and the Markdown report put regressions first, because
that is what a reader of a failed CI step is looking for; every BAIT FLAG
line is printed exactly as the spec words it so that logs can be grepped.
matplotlib is imported only when an HTML report is built.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from capeval.core.cell import Cell, format_value
from capeval.core.verdict import STATUS_ORDER, BaitStatus, CellComparison, Comparison

VERDICT_WORDS = {0: "CLEAN", 1: "REGRESSED", 3: "UNCLEAN (bait flags)"}
# Under the configuration's `bait = "report"`, said wherever bait flags are listed.
BAIT_REPORTED = '(bait = "report": bait flags are shown and change no verdict)'
FORMATS = ("md", "json", "junit", "html")


def gate_verdict(comparison: Comparison) -> tuple[str, int]:
    """What `capeval gate` would answer: its word and exit code.

    `compare` shows comparisons the gate refuses (mixed cells, no cell
    matched); those must not read `CLEAN (exit 0)` beside a `clean: false`.
    """
    if comparison.refusals(gate=True):
        return "REFUSED", 2
    code = comparison.exit_code
    return VERDICT_WORDS[code], code


def verdict_line(comparison: Comparison, *, gate: bool = True) -> str:
    """The last line: the gate's exit, or for `compare` (which exits 0) what the gate would do.

    `gate: REGRESSED (exit 1)` under a compare that exited 0 read as a lie.
    """
    word, code = gate_verdict(comparison)
    why = "; see the warnings" if code == 2 else ""
    if not gate:
        return f"verdict: {word} (capeval gate would exit {code}{why})"
    return f"gate: {word} (exit {code}){why}"


def _rate(cell: Cell | None) -> str:
    """passed/judged (rate), and the `error` repeats (not measured) when there are any."""
    if cell is None:
        return "-"
    errors = f" +{cell.errors} error" if cell.errors else ""
    return f"{cell.passCount}/{cell.repeats} ({cell.passRate:.0%}){errors}"


def _interval(advisory: dict[str, Any], side: str) -> str:
    wilson = advisory.get(side, {}).get("wilson") if advisory else None
    if not wilson:
        return ""
    return f" [{wilson[0]:.2f}, {wilson[1]:.2f}]"


def _ordered(comparison: Comparison) -> list[CellComparison]:
    rank = {s: i for i, s in enumerate(STATUS_ORDER)}
    return sorted(comparison.cells, key=lambda c: (rank[c.status], c.resultKey))


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)
    ]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return out


def summary_line(comparison: Comparison) -> str:
    s = comparison.summary
    return (
        f"{s['regressed']} regressed, {s['improved']} improved, {s['unchanged']} unchanged, "
        f"{s['new']} new, {s['missing']} missing; behavior: {s['behaviorRegressed']} regressed, "
        f"{s['behaviorImproved']} improved; {s['baitFlags']} bait flag(s)"
    )


def bait_sources(comparison: Comparison) -> list[str]:
    """Where each bait case's declaration came from (`--bait`, the rows, a workspace)."""
    found: dict[str, str] = {}
    for cell in comparison.cells:
        if cell.bait is not None:
            decl = f"{cell.bait.metric} > {format_value(cell.bait.threshold)}"
            found.setdefault(
                cell.caseId, f"  {cell.caseId}: {decl}, declared by {cell.bait.source}"
            )
    if not found:
        return []
    return ["", "bait declarations:", *(found[k] for k in sorted(found))]


def render_text(comparison: Comparison, *, gate: bool = True) -> str:
    """The human answer of `capeval gate`, or of `capeval compare` with `gate=False`."""
    lines: list[str] = []
    rows = []
    for cell in _ordered(comparison):
        adv = cell.advisory
        rows.append(
            [
                cell.status.upper() if cell.status in ("regressed", "improved") else cell.status,
                cell.resultKey,
                _rate(cell.baseline) + _interval(adv, "baseline"),
                _rate(cell.candidate) + _interval(adv, "candidate"),
                _advisory_note(adv),
            ]
        )
    lines += _table(["status", "cell", "baseline", "candidate", "notes"], rows)
    changes = [(c, b) for c in _ordered(comparison) for b in c.behaviors if b.verdict != "neutral"]
    if changes:
        lines += ["", "behavior changes (medians, lower is better):"]
        changes.sort(key=lambda cb: (cb[1].verdict != "regress", cb[0].resultKey, cb[1].metric))
        table = _table(
            ["verdict", "cell", "metric", "baseline", "candidate"],
            [
                [
                    b.verdict.upper(),
                    c.resultKey,
                    b.metric,
                    format_value(b.baselineMedian),
                    format_value(b.candidateMedian),
                ]
                for c, b in changes
            ],
        )
        lines += ["  " + line for line in table]
    flags = comparison.bait_flag_lines
    if flags:
        lines.append("")
        lines += flags
        if comparison.bait_policy != "require":
            lines.append(BAIT_REPORTED)
    lines += bait_sources(comparison)
    if comparison.warnings:
        lines.append("")
        lines += [f"warning: {w}" for w in comparison.warnings]
    lines += ["", summary_line(comparison), verdict_line(comparison, gate=gate)]
    return "\n".join(lines)


def _advisory_note(advisory: dict[str, Any]) -> str:
    notes = []
    if advisory.get("flakyBaseline"):
        notes.append("flaky baseline")
    test = advisory.get("exactTest")
    if test:
        notes.append(f"{test['test']} p={test['pValue']:.3g}")
        ci = test.get("differenceCI")
        if ci:
            # Newcombe's interval for candidate minus baseline: how big the change may be.
            notes.append(f"diff {test['difference']:+.2f} [{ci[0]:+.2f}, {ci[1]:+.2f}]")
    return "; ".join(notes)


# -- Markdown ---------------------------------------------------------------


def _headline(comparison: Comparison) -> list[list[str]]:
    """Pass rate over all repeats; time, turns and tokens as totals and as means.

    The gate procedure compares a 5-repeat candidate with a 3-repeat baseline,
    so totals alone would make an unchanged agent look 67% costlier: each total
    names the repeats it sums, and a mean per repeat stands beside it. Both
    are over the repeats that reported the value (a stream without token
    counts is unknown, not zero).
    """

    # Each cell once: matched on case id alone, one baseline cell stands
    # beside every candidate variant of its case and was counted per variant.
    sides = tuple(
        list({cell.resultKey: cell for cell in side if cell is not None}.values())
        for side in (
            [c.baseline for c in comparison.cells],
            [c.candidate for c in comparison.cells],
        )
    )

    def rate(cells: Sequence[Cell]) -> str:
        repeats, passes = sum(c.repeats for c in cells), sum(c.passCount for c in cells)
        return f"{passes}/{repeats} ({passes / repeats:.1%})" if repeats else "-"

    def total(cells: Sequence[Cell], field: str, count: str, fmt: Callable[[float], str]) -> str:
        n = sum(getattr(c, count) for c in cells)
        if not n:
            return "-"
        return f"{fmt(sum(getattr(c, field) for c in cells))} ({n:,} repeat{'s' * (n != 1)})"

    def mean(cells: Sequence[Cell], field: str, count: str, fmt: Callable[[float], str]) -> str:
        n = sum(getattr(c, count) for c in cells)
        return fmt(sum(getattr(c, field) for c in cells) / n) if n else "-"

    measures = (
        ("wall time", "durationMs", "durationReported", _duration, _duration),
        ("turns", "turnsUsed", "turnsReported", lambda v: f"{v:,.0f}", lambda v: f"{v:,.1f}"),
        (
            "input tokens",
            "tokenInput",
            "tokenReported",
            lambda v: f"{v:,.0f}",
            lambda v: f"{v:,.0f}",
        ),
    )
    rows = [["pass rate", *(rate(cells) for cells in sides)]]
    for label, field, count, fmt_total, fmt_mean in measures:
        rows.append([f"{label} (total)", *(total(c, field, count, fmt_total) for c in sides)])
        rows.append(
            [f"{label} per repeat (mean)", *(mean(c, field, count, fmt_mean) for c in sides)]
        )
    return rows


def _duration(ms: float) -> str:
    seconds = ms / 1000
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.1f} s"


# A line break inside a table cell ends the table: every later row (the
# regressions come first) renders as loose text. Case ids from a foreign file
# may hold one, so control characters are shown escaped, as JUnit shows them.
_MD_CONTROL = re.compile("[\x00-\x1f\x7f]")


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def esc(text: str) -> str:
        text = _MD_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
        return text.replace("|", "\\|")

    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return out


def _md_title(baseline_name: str, candidate_name: str) -> list[str]:
    return [
        "# capeval gate report",
        "",
        f"Baseline: {_code(baseline_name)} · Candidate: {_code(candidate_name)}",
        "",
    ]


def _html_title(baseline_name: str, candidate_name: str) -> str:
    return (
        f"<h1>capeval gate report</h1><p>Baseline <code>{html.escape(baseline_name)}</code>, "
        f"candidate <code>{html.escape(candidate_name)}</code></p>"
    )


BEHAVIOR_CHANGE_HEADER = [
    "verdict",
    "cell",
    "metric",
    "baseline median",
    "candidate median",
    "difference CI",
]
NO_BEHAVIOR_CHANGE = "No lower-is-better metric changed its median."
BAIT_HEADER = [
    "case",
    "metric",
    "threshold",
    "baseline median",
    "candidate median",
    "candidate misbehaves",
    "honesty",
    "declared by",
]
NO_BAITS = "No bait cases in this comparison."


def _code(text: str) -> str:
    """A code span a backtick in the text cannot end early: its fence is a longer run (CommonMark)."""
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _plain(text: str) -> str:
    return text


def _behavior_change_rows(comparison: Comparison, key: Callable[[str], str]) -> list[list[str]]:
    """Every non-neutral behavior verdict with its advisory difference interval.

    Shared by the Markdown and HTML reports so the two can never disagree.
    Regressions come first, as in the text output: they are what a reviewer
    must act on. (`sorted` is stable: within a verdict, cells keep their order.)
    """
    rows: list[list[str]] = []
    for c in _ordered(comparison):
        for b in c.behaviors:
            if b.verdict == "neutral":
                continue
            ci = (
                c.advisory.get("behaviors", {}).get(b.metric, {}).get("differenceCI")
                if c.advisory
                else None
            )
            rows.append(
                [
                    b.verdict,
                    key(c.resultKey),
                    b.metric,
                    format_value(b.baselineMedian),
                    format_value(b.candidateMedian),
                    f"[{format_value(ci[0])}, {format_value(ci[1])}]" if ci else "",
                ]
            )
    return sorted(rows, key=lambda r: r[0] != "regress")


def _bait_rows(comparison: Comparison, key: Callable[[str], str]) -> list[list[str]]:
    """Every bait cell with both medians and its honesty status."""
    return [
        [
            key(c.resultKey),
            c.bait.metric,
            format_value(c.bait.threshold),
            format_value(c.bait.baselineMedian)
            if c.bait.baselineMedian is not None
            else "no stats",
            format_value(c.bait.candidateMedian)
            if c.bait.candidateMedian is not None
            else "no stats",
            {True: "yes", False: "no", None: "-"}[c.bait.misbehaving],
            _honesty(c.bait),
            c.bait.source,
        ]
        for c in comparison.cells
        if c.bait
    ]


def render_markdown(
    comparison: Comparison, *, baseline_name: str = "baseline", candidate_name: str = "candidate"
) -> str:
    """The gate report: headline, verdict, per-cell table, behavior changes, baits, intervals."""
    word, code = gate_verdict(comparison)
    lines = [
        *_md_title(baseline_name, candidate_name),
        f"**Verdict: {word}** (exit {code}) — {summary_line(comparison)}",
        "",
        *_md_table(["", "baseline", "candidate"], _headline(comparison)),
        "",
        "## Cells",
        "",
    ]
    rows = []
    for cell in _ordered(comparison):
        adv = cell.advisory
        rows.append(
            [
                f"**{cell.status}**" if cell.status == "regressed" else cell.status,
                _code(cell.resultKey),
                _rate(cell.baseline) + _interval(adv, "baseline"),
                _rate(cell.candidate) + _interval(adv, "candidate"),
                _advisory_note(adv) or "",
            ]
        )
    lines += _md_table(["status", "cell", "baseline", "candidate", "advisory"], rows)
    lines += ["", "## Behavior changes", ""]
    changes = _behavior_change_rows(comparison, _code)
    if changes:
        lines += _md_table(BEHAVIOR_CHANGE_HEADER, changes)
    else:
        lines.append(NO_BEHAVIOR_CHANGE)
    lines += ["", "## Baits", ""]
    baits = _bait_rows(comparison, _code)
    if baits:
        lines += _md_table(BAIT_HEADER, baits)
        if comparison.bait_flag_lines:
            lines += ["", "```", *comparison.bait_flag_lines, "```"]
            if comparison.bait_policy != "require":
                lines += ["", BAIT_REPORTED]
    else:
        lines.append(NO_BAITS)
    if comparison.warnings:
        lines += ["", "## Warnings", "", *(f"- {w}" for w in comparison.warnings)]
    if comparison.advisory:
        lines += ["", "## Advisory statistics", "", *_md_advisory(comparison.advisory)]
    return "\n".join(lines) + "\n"


ADVISORY_HEADER = [
    "variant",
    "baseline pass rate (case bootstrap)",
    "candidate",
    "paired cases",
    "sign test p",
    "Wilcoxon p",
]


def _advisory_preamble(advisory: dict[str, Any]) -> str:
    return (
        "Advisory only: these never change the gate's exit code. "
        f"{advisory.get('note', '')}".rstrip()
    )


def _advisory_rows(advisory: dict[str, Any], key: Callable[[str], str]) -> list[list[str]]:
    """Per variant: pass rate with a case-resampling interval and the paired comparison."""
    rows = []
    for variant, v in sorted(advisory.get("variants", {}).items()):
        base, cand = v.get("baseline"), v.get("candidate")
        paired = v.get("paired") or {}
        rows.append(
            [
                key(variant),
                _rate_ci(base),
                _rate_ci(cand),
                str(paired.get("cases", "-")),
                f"{paired['signTestP']:.3g}" if paired.get("signTestP") is not None else "-",
                f"{paired['wilcoxonP']:.3g}" if paired.get("wilcoxonP") is not None else "-",
            ]
        )
    return rows


def _md_advisory(advisory: dict[str, Any]) -> list[str]:
    lines = [_advisory_preamble(advisory), ""]
    rows = _advisory_rows(advisory, _code)
    if rows:
        lines += _md_table(ADVISORY_HEADER, rows)
    return lines


def _rate_ci(side: dict[str, Any] | None) -> str:
    if not side:
        return "-"
    ci = side.get("ci")
    text = f"{side['passRate']:.1%}"
    if ci:
        text += f" [{ci[0]:.1%}, {ci[1]:.1%}]"
    return text


# -- JSON and JUnit -----------------------------------------------------------


def render_json(comparison: Comparison) -> str:
    obj = comparison.to_json()
    obj["exitCode"] = gate_verdict(comparison)[1]
    return json.dumps(obj, indent=2) + "\n"


def _honesty(bait: BaitStatus) -> str:
    """The bait-honesty column: only a baseline that misbehaved proves the case reproduces."""
    if bait.flag:
        return "FLAG"
    if bait.baselineMedian is None:
        return "unproven (no baseline stats)"
    return "reproduces"


# XML 1.0 refuses most control characters even escaped; a case id from a
# foreign file may hold one, and one bad id must not make the whole report
# unreadable to the CI system.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_text(text: str) -> str:
    return _XML_INVALID.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def render_junit(comparison: Comparison) -> str:
    """One testcase per cell; a regression (or a bait flag) is a failure CI systems show."""
    from xml.etree import ElementTree as ET  # only JUnit needs it: not on the gate's start-up

    baits = comparison.bait_policy == "require"  # under "report" a flag fails no testcase
    failed = [c for c in comparison.cells if _junit_failure(c, baits)]
    errored = [c for c in comparison.cells if _junit_error(c) and not _junit_failure(c, baits)]
    suite = ET.Element(
        "testsuite",
        name="capeval gate",
        tests=str(len(comparison.cells)),
        failures=str(len(failed)),
        errors=str(len(errored)),
        # A missing cell with a bait flag is a failure, not also a skip: the
        # counts must add up to what the testcases say.
        skipped=str(
            sum(
                1
                for c in comparison.cells
                if c.status == "missing" and not _junit_failure(c, baits)
            )
        ),
    )
    for cell in comparison.cells:
        case = ET.SubElement(
            suite, "testcase", classname=_xml_text(cell.variantId), name=_xml_text(cell.caseId)
        )
        failure = _junit_failure(cell, baits)
        failure = _xml_text(failure) if failure else None
        error = _junit_error(cell)
        if failure:
            ET.SubElement(case, "failure", message=failure, type=_junit_type(cell)).text = failure
        elif error:
            # Not measured is no failure of the agent: CI shows it as an error.
            ET.SubElement(case, "error", message=error, type="not-measured").text = error
        elif cell.status == "missing":
            ET.SubElement(case, "skipped", message="cell missing from the candidate")
        out = [f"{cell.status}: baseline {_rate(cell.baseline)}, candidate {_rate(cell.candidate)}"]
        if not baits and cell.bait and cell.bait.flag:
            out.append(f"{cell.bait.flag_line(cell.caseId)} {BAIT_REPORTED}")
        out += [
            f"{b.metric}: {format_value(b.baselineMedian)} -> {format_value(b.candidateMedian)} ({b.verdict})"
            for b in cell.behaviors
            if b.verdict != "neutral"
        ]
        ET.SubElement(case, "system-out").text = _xml_text("\n".join(out))
    if comparison.warnings:
        # A comparison judged with a fallback, a mixed cell or a dropped row
        # must not read as an ordinary one where CI shows only this file.
        ET.SubElement(suite, "system-err").text = _xml_text(
            "\n".join(f"warning: {w}" for w in comparison.warnings)
        )
    return _junit_document(suite)


def _junit_document(suite: Any) -> str:
    from xml.etree import ElementTree as ET

    suites = ET.Element("testsuites")
    suites.append(suite)
    ET.indent(suites)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )


def _junit_type(cell: CellComparison) -> str:
    """What failed, for CI systems that group failures by type: a bait flag on an
    unchanged cell is no "unchanged" failure. A regression wins (the message
    lists the flag too)."""
    return "regressed" if cell.status == "regressed" else "bait-flag"


def _junit_error(cell: CellComparison) -> str | None:
    """The cell's `error` repeats (not measured), per side, or None when it has none."""
    sides = [
        f"{name} {side.errors} error repeat(s) of {side.repeats + side.errors}"
        for name, side in (("baseline", cell.baseline), ("candidate", cell.candidate))
        if side is not None and side.errors
    ]
    return ("not measured: " + ", ".join(sides)) if sides else None


def _junit_failure(cell: CellComparison, baits: bool = True) -> str | None:
    """Every reason the cell fails, one per line: a regressed bait cell keeps its flag line
    (`baits` False: bait flags fail nothing, the `report` policy)."""
    reasons = []
    if cell.status == "regressed":
        reasons.append(f"pass rate regressed: {_rate(cell.baseline)} -> {_rate(cell.candidate)}")
    if baits and cell.bait and cell.bait.flag:
        reasons.append(cell.bait.flag_line(cell.caseId))
    return "\n".join(reasons) or None


# -- HTML ---------------------------------------------------------------------


def render_html(
    comparison: Comparison, *, baseline_name: str = "baseline", candidate_name: str = "candidate"
) -> str:
    """One self-contained file: the Markdown report's content plus embedded PNG plots."""
    body = [_html_title(baseline_name, candidate_name)]
    word, code = gate_verdict(comparison)
    body.append(
        f"<p><strong>Verdict: {html.escape(word)}</strong> (exit {code}) — {html.escape(summary_line(comparison))}</p>"
    )
    body.append(_html_table(["", "baseline", "candidate"], _headline(comparison)))
    body.append("<h2>Pass rate per cell</h2>")
    plotted = _plotted_cells(comparison)
    if len(plotted) < len(comparison.cells):
        body.append(
            f"<p>The {len(plotted)} cells shown of {len(comparison.cells):,}: regressions first, "
            "then improvements, new, missing and unchanged ones; the table below lists every cell.</p>"
        )
    body.append(
        f'<img alt="pass rate per cell, baseline vs candidate" src="data:image/png;base64,{_pass_rate_plot(plotted)}">'
    )
    if any(b.verdict != "neutral" for c in comparison.cells for b in c.behaviors):
        body.append("<h2>Behavior verdicts per metric</h2>")
        body.append(
            '<img alt="behavior verdicts per metric" '
            f'src="data:image/png;base64,{_behavior_plot(comparison)}">'
        )
    body.append("<h2>Cells</h2>")
    rows = [
        [
            c.status,
            c.resultKey,
            _rate(c.baseline) + _interval(c.advisory, "baseline"),
            _rate(c.candidate) + _interval(c.advisory, "candidate"),
            _advisory_note(c.advisory),
        ]
        for c in _ordered(comparison)
    ]
    body.append(_html_table(["status", "cell", "baseline", "candidate", "advisory"], rows))
    changes = _behavior_change_rows(comparison, _plain)
    body.append("<h2>Behavior changes</h2>")
    body.append(
        _html_table(BEHAVIOR_CHANGE_HEADER, changes)
        if changes
        else f"<p>{html.escape(NO_BEHAVIOR_CHANGE)}</p>"
    )
    body.append("<h2>Baits</h2>")
    baits = _bait_rows(comparison, _plain)
    body.append(_html_table(BAIT_HEADER, baits) if baits else f"<p>{html.escape(NO_BAITS)}</p>")
    if comparison.bait_flag_lines:
        body.append("<pre>" + html.escape("\n".join(comparison.bait_flag_lines)) + "</pre>")
        if comparison.bait_policy != "require":
            body.append(f"<p>{html.escape(BAIT_REPORTED)}</p>")
    if comparison.warnings:
        body.append(
            "<h2>Warnings</h2><ul>"
            + "".join(f"<li>{html.escape(w)}</li>" for w in comparison.warnings)
            + "</ul>"
        )
    if comparison.advisory:
        body.append("<h2>Advisory statistics</h2>")
        body.append(f"<p>{html.escape(_advisory_preamble(comparison.advisory))}</p>")
        rows = _advisory_rows(comparison.advisory, _plain)
        if rows:
            body.append(_html_table(ADVISORY_HEADER, rows))
    return _html_page(body)


def _html_page(body: Sequence[str]) -> str:
    style = (
        "body{font-family:sans-serif;max-width:72em;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}"
        "img{max-width:100%}"
    )
    return (
        '<!doctype html>\n<html><head><meta charset="utf-8"><title>capeval gate report</title>'
        f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _png_base64(fig: Any) -> str:
    """The figure as base64 PNG, for an <img> inside the one HTML file."""
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return base64.b64encode(buf.getvalue()).decode("ascii")


# Cells one plot shows: a row each, so thousands of cells made a PNG 70,000
# pixels tall that took 20 s to draw and no one could read.
PLOT_CELLS = 60


_PLOT_ORDER = ("regressed", "improved", "new", "missing", "unchanged")


def _plotted_cells(comparison: Comparison, limit: int = PLOT_CELLS) -> list[CellComparison]:
    """Every cell when they fit; else the changed ones first, which a reader looks for."""
    rank = {s: i for i, s in enumerate(_PLOT_ORDER)}
    return sorted(comparison.cells, key=lambda c: (rank[c.status], c.resultKey))[:limit]


def _pass_rate_plot(plotted: Sequence[CellComparison]) -> str:
    """Baseline vs candidate pass rate per cell, with Wilson intervals when computed; base64 PNG."""
    # A bare Figure draws without pyplot, so building a report never switches
    # the backend of a notebook that calls it.
    from matplotlib.figure import Figure

    from capeval.analysis.plots import colour

    cells = sorted(plotted, key=lambda c: c.resultKey)
    fig = Figure(figsize=(8, max(2.0, 0.3 * len(cells) + 1.3)))
    ax = fig.add_subplot()
    sides = ((-0.15, "baseline", colour(0), "o"), (0.15, "candidate", colour(1), "s"))
    for offset, side, color, marker in sides:
        ys, xs, lo, hi = [], [], [], []
        for i, cell in enumerate(cells):
            c = cell.baseline if side == "baseline" else cell.candidate
            if c is None:
                continue
            ys.append(i + offset)
            xs.append(c.passRate)
            wilson = cell.advisory.get(side, {}).get("wilson") if cell.advisory else None
            lo.append(c.passRate - wilson[0] if wilson else 0)
            hi.append(wilson[1] - c.passRate if wilson else 0)
        ax.errorbar(xs, ys, xerr=[lo, hi], fmt=marker, color=color, label=side, capsize=2)
    ax.set_yticks(range(len(cells)), [c.resultKey for c in cells], fontsize=7)
    ax.set_xlim(-0.05, 1.05)
    ax.set_xlabel("pass rate")
    ax.invert_yaxis()
    # Above the axes: inside them, it covered the points at pass rate 0 of the bottom rows.
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2, fontsize=7, frameon=False)
    return _png_base64(fig)


def _behavior_plot(comparison: Comparison) -> str:
    """Cells whose median improved / regressed, per lower-is-better metric; base64 PNG."""
    from matplotlib.figure import Figure

    from capeval.core.metrics import METRIC_NAMES, direction

    metrics = [m for m in METRIC_NAMES if direction(m) == "lower"]
    counts = {m: [0, 0] for m in metrics}
    for cell in comparison.cells:
        for b in cell.behaviors:
            if b.metric in counts and b.verdict != "neutral":
                counts[b.metric][0 if b.verdict == "improve" else 1] += 1
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    from capeval.analysis.plots import OKABE_ITO

    fig = Figure(figsize=(8, 0.35 * len(metrics) + 1.3))
    ax = fig.add_subplot()
    ys = range(len(metrics))
    # Blue and vermillion (Okabe-Ito), the regressions hatched too: red against
    # green is the pair the common colour-vision deficiencies cannot tell apart.
    ax.barh(ys, [counts[m][0] for m in metrics], color=OKABE_ITO[0], label="improve")
    ax.barh(ys, [-counts[m][1] for m in metrics], color=OKABE_ITO[5], hatch="//",
            edgecolor="white", label="regress")  # fmt: skip
    ax.set_yticks(ys, metrics, fontsize=7)
    ax.axvline(0, color="#444444", linewidth=0.8)
    # Whole cells on both sides, counted as positive numbers either way.
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{abs(x):g}"))
    ax.set_xlabel("cells (regress left, improve right)")
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2, fontsize=7, frameon=False)
    return _png_base64(fig)


def render(
    comparison: Comparison,
    fmt: str,
    *,
    baseline_name: str = "baseline",
    candidate_name: str = "candidate",
) -> str:
    if fmt == "md":
        return render_markdown(
            comparison, baseline_name=baseline_name, candidate_name=candidate_name
        )
    if fmt == "json":
        return render_json(comparison)
    if fmt == "junit":
        return render_junit(comparison)
    if fmt == "html":
        return render_html(comparison, baseline_name=baseline_name, candidate_name=candidate_name)
    raise ValueError(f"unknown report format {fmt!r}; use one of {', '.join(FORMATS)}")


# -- a comparison the gate refused ---------------------------------------------


def render_refusal(
    errors: Sequence[str],
    fmt: str,
    *,
    baseline_name: str = "baseline",
    candidate_name: str = "candidate",
) -> str:
    """The report when the gate judged nothing (exit 2): the reasons, in the asked format.

    A CI step summary that is empty, or stale, hides why the gate failed; this
    one says it was refused and why.
    """
    if fmt == "md":
        lines = [
            *_md_title(baseline_name, candidate_name),
            "**Verdict: REFUSED** (exit 2) — nothing was judged:",
            "",
            *(f"- {e}" for e in errors),
        ]
        return "\n".join(lines) + "\n"
    if fmt == "json":
        return json.dumps({"errors": list(errors), "exitCode": 2}, indent=2) + "\n"
    if fmt == "junit":
        from xml.etree import ElementTree as ET

        suite = ET.Element("testsuite", name="capeval gate", tests="1", failures="0", errors="1")
        case = ET.SubElement(suite, "testcase", classname="capeval gate", name="comparison")
        error = ET.SubElement(case, "error", message="comparison refused", type="refused")
        error.text = _xml_text("\n".join(errors))
        return _junit_document(suite)
    if fmt == "html":
        return _html_page(
            [
                _html_title(baseline_name, candidate_name),
                "<p><strong>Verdict: REFUSED</strong> (exit 2) — nothing was judged:</p>",
                "<ul>" + "".join(f"<li>{html.escape(e)}</li>" for e in errors) + "</ul>",
            ]
        )
    raise ValueError(f"unknown report format {fmt!r}; use one of {', '.join(FORMATS)}")
