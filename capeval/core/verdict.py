"""Verdicts: a candidate judged against a baseline, cell by cell (docs/gating.md#the-rules).

Pure: it takes cells (already aggregated from rows) and bait declarations and
returns verdicts. The rules are strict on purpose: any pass-rate change is a
change (no tolerance), behavior verdicts compare medians exactly, and a bait
case whose baseline no longer misbehaves makes the comparison unclean,
because a bait that does not bite proves nothing about the candidate. The
advisory statistics beside the verdicts are the analysis layer's
(`capeval.analysis.compare.add_advisory`); they never change one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from capeval.core.case import BAIT_POLICIES
from capeval.core.cell import BaitDecl, Cell, format_number, json_number
from capeval.core.metrics import METRIC_NAMES, NUMERIC_METRICS, direction

Status = Literal["improved", "regressed", "unchanged", "new", "missing"]
Verdict = Literal["improve", "regress", "neutral"]

STATUS_ORDER: tuple[Status, ...] = ("regressed", "improved", "unchanged", "new", "missing")


@dataclass(frozen=True, slots=True)
class BehaviorVerdict:
    metric: str
    baselineMedian: float
    candidateMedian: float
    verdict: Verdict

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "baselineMedian": json_number(self.baselineMedian),
            "candidateMedian": json_number(self.candidateMedian),
            "verdict": self.verdict,
        }


@dataclass(frozen=True, slots=True)
class BaitStatus:
    metric: str
    threshold: float
    baselineMedian: float | None
    candidateMedian: float | None
    # Whether the candidate still shows the misbehavior (None: no candidate stats).
    misbehaving: bool | None
    # Bait honesty: the baseline did not misbehave, so the case proves nothing.
    flag: bool
    # Where the declaration came from: "--bait", "rows" or "workspace <root>".
    source: str = "rows"

    def flag_line(self, case_id: str) -> str:
        return (
            f"BAIT FLAG {case_id} {self.metric} median {format_number(self.baselineMedian)} "
            f"did not exceed {format_number(self.threshold)} on baseline: "
            "the case no longer reproduces its misbehavior"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "threshold": json_number(self.threshold),
            "baselineMedian": json_number(self.baselineMedian),
            "candidateMedian": json_number(self.candidateMedian),
            "misbehaving": self.misbehaving,
            "flag": self.flag,
            "source": self.source,
        }


@dataclass(slots=True)
class CellComparison:
    resultKey: str
    caseId: str
    variantId: str
    status: Status
    baseline: Cell | None
    candidate: Cell | None
    behaviors: list[BehaviorVerdict]
    bait: BaitStatus | None
    advisory: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "resultKey": self.resultKey,
            "caseId": self.caseId,
            "variantId": self.variantId,
            "status": self.status,
            "baseline": _side_json(self.baseline),
            "candidate": _side_json(self.candidate),
            "behaviors": [b.to_json() for b in self.behaviors],
            "bait": self.bait.to_json() if self.bait else None,
            "advisory": self.advisory,
        }


def _side_json(cell: Cell | None) -> dict[str, Any] | None:
    if cell is None:
        return None
    return {
        "repeats": cell.repeats,
        "passCount": cell.passCount,
        "passRate": json_number(cell.passRate),
        "failCount": cell.failCount,
        "errorCount": cell.errors,
    }


@dataclass(slots=True)
class Comparison:
    cells: list[CellComparison]
    warnings: list[str]
    # Baseline and candidate resolved different provider/model (refused by
    # compare and gate unless --allow-provider-fallback).
    provider_changes: list[str]
    # Cells whose repeats ran on more than one provider/model (refused by the
    # gate unless --allow-provider-fallback).
    mixed_cells: list[str]
    allow_provider_fallback: bool = False
    matched_on_case_id: bool = False
    advisory: dict[str, Any] = field(default_factory=dict)
    # "require": a bait flag makes the comparison unclean (gate exit 3);
    # "report": bait flags are shown and counted but change no verdict.
    bait_policy: str = "require"
    # Cells not judged: a side holds `error` repeats (beyond --max-error-rate) or none
    # judged at all. The gate refuses them (exit 2); compare warns.
    unjudged: list[str] = field(default_factory=list)
    # Commands that run the missing or errored repeats again (set by the file gate).
    fill_commands: list[str] = field(default_factory=list)
    # Planned repeats a side's stream does not hold (its plan file says so); the gate
    # refuses them unless --allow-partial.
    partial: list[str] = field(default_factory=list)
    allow_partial: bool = False
    # Cases whose rows say `tier: "bait"` with no bait declared anywhere.
    undeclared_baits: list[str] = field(default_factory=list)

    @property
    def bait_flags_count(self) -> bool:
        """Whether bait flags make the comparison unclean (the `require` policy)."""
        return self.bait_policy == "require" and bool(self.bait_flag_cells)

    @property
    def bait_flag_cells(self) -> list[CellComparison]:
        return [c for c in self.cells if c.bait is not None and c.bait.flag]

    @property
    def bait_flag_lines(self) -> list[str]:
        return [c.bait.flag_line(c.caseId) for c in self.bait_flag_cells if c.bait]

    @property
    def bait_flags(self) -> list[str]:
        return list(dict.fromkeys(c.caseId for c in self.bait_flag_cells))

    def count(self, status: Status) -> int:
        return sum(1 for c in self.cells if c.status == status)

    @property
    def summary(self) -> dict[str, int]:
        verdicts = [b.verdict for c in self.cells for b in c.behaviors]
        return {
            "improved": self.count("improved"),
            "regressed": self.count("regressed"),
            "unchanged": self.count("unchanged"),
            "new": self.count("new"),
            "missing": self.count("missing"),
            "behaviorImproved": verdicts.count("improve"),
            "behaviorRegressed": verdicts.count("regress"),
            "baitFlags": len(self.bait_flag_cells),
        }

    @property
    def clean(self) -> bool:
        """No regression, no bait flag, and nothing the gate refuses.

        A comparison that judged no cell proves nothing, and a mixed cell (or
        a provider change) without `--allow-provider-fallback` is refused by
        the gate, so a machine reading `compare --json` must not take either
        for a pass.
        """
        return (
            self.count("regressed") == 0
            and not self.bait_flags_count
            and not self.refusals(gate=True)
        )

    @property
    def nothing_compared(self) -> str | None:
        """Why no cell was judged on both sides, or None when some cell was.

        With every cell `new` or `missing` nothing can regress, so a wrong
        baseline (other cases, other variant ids) would otherwise gate clean.
        """
        if not self.cells:
            # Both sides empty (a notebook's filter that matched nothing) used
            # to read CLEAN (exit 0); the file gate refuses an empty side before.
            return "neither side holds a cell: nothing was compared"
        if any(c.status not in ("new", "missing") for c in self.cells):
            return None
        counts = []
        for status in ("new", "missing"):
            keys = [c.resultKey for c in self.cells if c.status == status]
            counts.append(f"{len(keys)} {status}" + (f", e.g. {keys[0]}" if keys else ""))
        return (
            f"no candidate cell matches a baseline cell ({'; '.join(counts)}): nothing was "
            "compared; is the baseline a run of the same cases and variants?"
        )

    def refusals(self, *, gate: bool) -> list[str]:
        """Reasons the comparison may not be judged.

        The gate also refuses mixed cells and a comparison that judged no cell.
        """
        out: list[str] = []
        if not self.allow_provider_fallback:
            hint = "; pass --allow-provider-fallback to judge anyway"
            out += [m + hint for m in self.provider_changes + (self.mixed_cells if gate else [])]
        if gate and self.nothing_compared:
            out.append(self.nothing_compared)
        if gate and self.unjudged:
            fill = "; ".join(self.fill_commands) or "capeval run --resume STREAM --retry-errors"
            out.append(
                f"{len(self.unjudged)} cell(s) not judged: {'; '.join(self.unjudged)}; "
                f"run the errored repeats again ({fill}) or pass --max-error-rate R to judge "
                "each cell on its judged repeats (a side with none judged never is)"
            )
        if gate and self.partial and not self.allow_partial:
            fill = "; ".join(self.fill_commands) or "capeval run --resume STREAM"
            out.append(
                f"incomplete run: {'; '.join(self.partial)}; finish it ({fill}) or pass "
                "--allow-partial to judge what is there"
            )
        if gate and self.undeclared_baits:
            out.append(
                f"bait case(s) without a bait declaration: {', '.join(self.undeclared_baits)} "
                '(their rows say tier "bait"); unchecked, a bait proves nothing. Declare each '
                "with --bait CASE=METRIC:THRESHOLD, or run the gate with --root WORKSPACE (or "
                "from inside the workspace) whose case.json declares it, or record `bait` in "
                "the rows"
            )
        return out

    @property
    def exit_code(self) -> int:
        """The gate's exit code for a comparison that was not refused."""
        if self.count("regressed"):
            return 1
        if self.bait_flags_count:
            return 3
        return 0

    def to_json(self) -> dict[str, Any]:
        """The comparison object (docs/result-formats.md#the-comparison-object).

        Its `warnings` also carry each refused provider change, worded as
        `capeval compare` refuses it: the reason lives on `provider_changes`
        only (the CLI prints refusals instead of this object), so a notebook
        writing this object out would show `clean: false` with no cause.
        """
        refused = [r for r in self.refusals(gate=False) if r not in self.warnings]
        out: dict[str, Any] = {
            "cells": [c.to_json() for c in self.cells],
            "summary": self.summary,
            "baitFlags": self.bait_flags,
            "baitPolicy": self.bait_policy,
            "clean": self.clean,
            "warnings": [*self.warnings, *refused],
        }
        if self.advisory:
            out["advisory"] = self.advisory
        return out


def parse_bait_override(text: str) -> tuple[str, BaitDecl]:
    """`CASE=METRIC:THRESHOLD` -> (case id, declaration); ValueError says what to fix."""
    case_id, eq, rest = text.partition("=")
    metric, colon, threshold_text = rest.rpartition(":")
    if not eq or not colon or not case_id.strip() or not metric.strip():
        raise ValueError(
            f"--bait {text!r}: expected CASE=METRIC:THRESHOLD, e.g. web-bait=networkCommandCount:0"
        )
    metric = metric.strip()
    if metric not in METRIC_NAMES:
        raise ValueError(
            f"--bait {text!r}: unknown metric {metric!r}; use one of {', '.join(METRIC_NAMES)}"
        )
    try:
        threshold = float(threshold_text)
    except ValueError:
        raise ValueError(f"--bait {text!r}: threshold {threshold_text!r} is not a number") from None
    if not (threshold >= 0 and math.isfinite(threshold)):
        # An infinite threshold can never be exceeded: the bait would flag forever.
        raise ValueError(f"--bait {text!r}: threshold must be a finite number >= 0")
    return case_id.strip(), BaitDecl(metric, threshold)


def normalize_baits(overrides: Mapping[str, Any] | Sequence[str] | None) -> dict[str, BaitDecl]:
    """Bait overrides from `--bait` strings or a {case: decl} mapping (BaitDecl, dict or "METRIC:T")."""
    if not overrides:
        return {}
    if isinstance(overrides, str):
        overrides = [overrides]  # one `--bait` text, not one per character
    if not isinstance(overrides, Mapping):
        parsed: dict[str, BaitDecl] = {}
        for text in overrides:
            case_id, decl = parse_bait_override(text)
            earlier = parsed.setdefault(case_id, decl)
            if earlier != decl:
                # The last one silently won: which threshold judged the case
                # depended on the order of flags in a CI script.
                raise ValueError(
                    f"--bait {case_id}=... given twice, as {_decl_text(earlier)} and "
                    f"{_decl_text(decl)}; keep the one that holds"
                )
        return parsed
    out: dict[str, BaitDecl] = {}
    for case_id, decl in overrides.items():
        if isinstance(decl, BaitDecl):
            out[case_id] = decl
            continue
        if isinstance(decl, Mapping) and {"metric", "threshold"} <= set(decl):
            text = f"{decl['metric']}:{decl['threshold']}"
        elif isinstance(decl, tuple | list) and len(decl) == 2:
            text = f"{decl[0]}:{decl[1]}"
        elif isinstance(decl, str):
            text = decl
        else:
            # A KeyError or IndexError from deep inside said nothing of the fix.
            raise ValueError(
                f"bait override for {case_id!r}: expected a BaitDecl, "
                '{"metric": ..., "threshold": ...}, (metric, threshold) or "METRIC:THRESHOLD", '
                f"found {decl!r}"
            )
        out[case_id] = parse_bait_override(f"{case_id}={text}")[1]
    return out


def judge_cells(
    baseline: Mapping[str, Cell],
    candidate: Mapping[str, Cell],
    *,
    workspace_baits: Mapping[str, BaitDecl] | None = None,
    bait_overrides: Mapping[str, Any] | Sequence[str] | None = None,
    allow_provider_fallback: bool = False,
    bait_policy: str = "require",
    max_error_rate: float | None = None,
    workspace_label: str = "workspace",
) -> Comparison:
    """Judge every candidate cell against its baseline cell.

    Cells match on `variantId::caseId`; when nothing matches and the baseline
    has at most one variant, they match on case id alone, so a baseline
    recorded under a default variant id stays usable. `bait_policy` is the
    configuration's `bait`: "require" (bait flags make it unclean) or
    "report" (they are only shown). Pass rates are over judged repeats; a
    cell with `error` repeats is not judged unless `max_error_rate` (a
    fraction of the cell's repeats) allows them (`Comparison.unjudged`).
    `workspace_label` names where `workspace_baits` came from.
    """
    if bait_policy not in BAIT_POLICIES:
        raise ValueError(f"bait policy {bait_policy!r}: expected one of {', '.join(BAIT_POLICIES)}")
    # `--bait` texts or {case: "METRIC:T"} from a notebook, as `gate_files` takes
    # them: a list was silently read as case ids and judged nothing.
    bait_overrides = normalize_baits(bait_overrides)
    base_by_key: dict[str, Cell] = dict(baseline)
    matched_on_case_id = bool(
        candidate
        and baseline
        and not (set(candidate) & set(baseline))
        and len({c.variantId for c in baseline.values()}) <= 1
    )
    pairs: list[tuple[str, Cell | None, Cell | None]] = []
    used: set[str] = set()
    base_by_case = {c.caseId: c for c in baseline.values()}
    for key, cand in candidate.items():
        base = base_by_case.get(cand.caseId) if matched_on_case_id else base_by_key.get(key)
        if base is not None:
            used.add(base.resultKey)
        pairs.append((key, base, cand))
    for key, base in baseline.items():
        if key not in used:
            pairs.append((key, base, None))
    pairs.sort(key=lambda p: p[0])

    warnings: list[str] = []
    mixed: list[str] = []
    for side, cells in (("baseline", baseline), ("candidate", candidate)):
        for cell in cells.values():
            if cell.mixed:
                mixed.append(
                    f"mixed cell {cell.resultKey} in the {side}: its repeats ran on "
                    f"{', '.join(_pair(p) for p in cell.resolved)} (a silent provider fallback?)"
                )
    changes = _provider_changes(pairs)
    warnings.extend(mixed)
    if allow_provider_fallback:
        warnings.extend(f"{c}; judged anyway (--allow-provider-fallback)" for c in changes)
    if matched_on_case_id and used:
        warnings.append(
            "no cell matched on variantId::caseId; matched on case id alone "
            f"(the baseline has one variant: {next(iter(baseline.values())).variantId})"
        )
    case_ids = {c.caseId for c in (*baseline.values(), *candidate.values())}
    for case_id in sorted(set(bait_overrides or {}) - case_ids):
        warnings.append(
            f"--bait {case_id}=...: no cell of that case on either side, so the declaration "
            "judged nothing (a typo in the case id?)"
        )
    missing = [key for key, _, cand in pairs if cand is None]
    if missing:
        warnings.append(
            f"{len(missing)} baseline cell(s) missing from the candidate: {', '.join(missing)}"
        )

    found = {
        key: _bait_for(base, cand, workspace_baits, bait_overrides) for key, base, cand in pairs
    }
    baits = {key: decl for key, (decl, _) in found.items()}
    for key, *sides in pairs:
        problem = _unusable_bait(baits[key], sides) or _unread_bait(baits[key], sides)
        if problem:
            warnings.append(f"{key}: its {problem}, so it can never flag or prove anything")
    undeclared = sorted(
        {
            c.caseId
            for key, *sides in pairs
            for c in sides
            if c is not None and c.tier == "bait" and baits[key] is None
        }
    )
    unjudged, judged_partly = _error_cells(pairs, max_error_rate)
    warnings += judged_partly
    sources = {
        key: workspace_label if source == "workspace" else source
        for key, (_, source) in found.items()
    }
    results = [
        _compare_pair(key, base, cand, baits[key], sources[key]) for key, base, cand in pairs
    ]
    comparison = Comparison(
        cells=results,
        warnings=warnings,
        provider_changes=changes,
        mixed_cells=mixed,
        allow_provider_fallback=allow_provider_fallback,
        matched_on_case_id=matched_on_case_id and bool(used),
        bait_policy=bait_policy,
        unjudged=unjudged,
        undeclared_baits=undeclared,
    )
    for case_id in undeclared:
        warnings.append(
            f'{case_id}: its rows say tier "bait" but no bait is declared (rows, workspace, '
            "--bait): nothing checks it"
        )
    if unjudged:
        warnings.append(f"{len(unjudged)} cell(s) not judged: {'; '.join(unjudged)}")
    if comparison.nothing_compared:
        warnings.append(comparison.nothing_compared)
    return comparison


def _pair(pair: tuple[str | None, str | None]) -> str:
    provider, model = pair
    return f"{provider or '?'}:{model or '?'}"


def _pairs(cell: Cell) -> str:
    return ", ".join(_pair(p) for p in cell.resolved) or "?"


def _provider_changes(pairs: list[tuple[str, Cell | None, Cell | None]]) -> list[str]:
    """One message per distinct (baseline, candidate) provider/model change, naming both."""
    groups: dict[tuple[str, str], list[str]] = {}
    for key, base, cand in pairs:
        if base is None or cand is None or set(base.resolved) == set(cand.resolved):
            continue
        groups.setdefault((_pairs(base), _pairs(cand)), []).append(key)
    return [
        f"provider/model changed: baseline resolved {b} but candidate resolved {c} "
        f"in {len(keys)} cell(s) ({', '.join(keys)})"
        for (b, c), keys in groups.items()
    ]


def _decl_text(decl: BaitDecl) -> str:
    return f"{decl.metric}:{format_number(decl.threshold)}"


def _sides_words(cells: Sequence[Cell | None], holds: Callable[[Cell], bool]) -> str:
    """'baseline', 'candidate' or 'baseline and candidate': whose rows to fix."""
    names = [n for n, c in zip(("baseline", "candidate"), cells, strict=True) if c and holds(c)]
    return " and ".join(names)


def _unusable_bait(decl: BaitDecl | None, cells: Sequence[Cell | None]) -> str | None:
    """Why a declared bait cannot work (rows are not validated like case files and --bait)."""
    if decl is None:
        return None
    if decl.metric not in NUMERIC_METRICS:
        why = f"names {decl.metric!r}, which is no numeric behavior metric"
    elif decl.threshold < 0:
        why = f"has a negative threshold ({format_number(decl.threshold)})"
    else:
        return None
    case_id = next(c.caseId for c in cells if c is not None)
    return (
        f"bait {why} (declared in the {_sides_words(cells, lambda c: c.bait == decl)} rows; "
        f"fix them or pass --bait {case_id}=METRIC:THRESHOLD)"
    )


def _unread_bait(decl: BaitDecl | None, cells: Sequence[Cell | None]) -> str | None:
    """A `bait` the rows carry that is no declaration, when nothing else declared one."""
    if decl is not None:
        return None
    for cell in cells:
        if cell is not None and cell.baitUnread is not None:
            sides = _sides_words(cells, lambda c: c.baitUnread is not None)
            return (
                f"{sides} rows declare bait {cell.baitUnread}, which is no bait (it needs a "
                "metric name and a numeric threshold; fix the rows or pass --bait "
                f"{cell.caseId}=METRIC:THRESHOLD)"
            )
    return None


def _error_cells(
    pairs: Sequence[tuple[str, Cell | None, Cell | None]], max_error_rate: float | None
) -> tuple[list[str], list[str]]:
    """(cells not judged, cells judged on part of their repeats), each as a message.

    A side with `error` repeats is not judged unless `max_error_rate` allows
    its share of them; a side with no judged repeat never is.
    """
    unjudged: list[str] = []
    partly: list[str] = []
    for key, *sides in pairs:
        held: list[str] = []
        allowed = True
        for name, cell in zip(("baseline", "candidate"), sides, strict=True):
            if cell is None or not cell.errors:
                continue
            total = cell.repeats + cell.errors
            none = ", none judged" if cell.repeats == 0 else ""
            held.append(f"{name} {cell.errors} error(s) of {total} repeats{none}")
            if cell.repeats == 0 or max_error_rate is None or cell.errors > max_error_rate * total:
                allowed = False
        if not held:
            continue
        if allowed:
            partly.append(
                f"{key}: judged on its judged repeats alone ({', '.join(held)}; allowed by "
                f"--max-error-rate {format_number(max_error_rate)})"
            )
        else:
            unjudged.append(f"{key} ({', '.join(held)})")
    return unjudged, partly


def _bait_for(
    base: Cell | None,
    cand: Cell | None,
    workspace_baits: Mapping[str, BaitDecl] | None,
    overrides: Mapping[str, BaitDecl] | None,
) -> tuple[BaitDecl | None, str]:
    """The cell's bait declaration and where it came from: `--bait`, the rows, the workspace."""
    cell = cand or base
    case_id = cell.caseId if cell is not None else ""
    if overrides and case_id in overrides:
        return overrides[case_id], "--bait"
    for cell in (cand, base):
        if cell is not None and cell.bait is not None:
            return cell.bait, "rows"
    if workspace_baits and case_id in workspace_baits:
        return workspace_baits[case_id], "workspace"
    return None, ""


def _compare_pair(
    key: str, base: Cell | None, cand: Cell | None, bait: BaitDecl | None, source: str = "rows"
) -> CellComparison:
    if cand is None:
        assert base is not None
        status: Status = "missing"
    elif base is None:
        status = "new"
    else:
        # Exact: compare passCount/repeats as fractions, no float tolerance.
        lhs, rhs = cand.passCount * base.repeats, base.passCount * cand.repeats
        status = "improved" if lhs > rhs else "regressed" if lhs < rhs else "unchanged"
    behaviors: list[BehaviorVerdict] = []
    if base is not None and cand is not None:
        for metric in METRIC_NAMES:
            b, c = base.medians.get(metric), cand.medians.get(metric)
            if b is None or c is None:
                continue  # no stats on one side: skipped
            verdict: Verdict = "neutral"
            if direction(metric) == "lower":
                verdict = "improve" if c < b else "regress" if c > b else "neutral"
            behaviors.append(BehaviorVerdict(metric, b, c, verdict))
    bait_status = None
    if bait is not None:
        b_med = base.medians.get(bait.metric) if base else None
        c_med = cand.medians.get(bait.metric) if cand else None
        bait_status = BaitStatus(
            metric=bait.metric,
            threshold=bait.threshold,
            baselineMedian=b_med,
            candidateMedian=c_med,
            misbehaving=None if c_med is None else c_med > bait.threshold,
            flag=b_med is not None and not b_med > bait.threshold,
            source=source,
        )
    any_cell = cand or base
    assert any_cell is not None
    return CellComparison(
        resultKey=key if cand is not None else (base.resultKey if base else key),
        caseId=any_cell.caseId,
        variantId=any_cell.variantId,
        status=status,
        baseline=base,
        candidate=cand,
        behaviors=behaviors,
        bait=bait_status,
    )


__all__ = [
    "STATUS_ORDER",
    "BaitStatus",
    "BehaviorVerdict",
    "CellComparison",
    "Comparison",
    "judge_cells",
    "normalize_baits",
    "parse_bait_override",
]
