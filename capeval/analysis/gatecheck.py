"""The gate over files: read both sides, compare, decide the exit code.

This is the one entry point `capeval gate`, `capeval compare` and
`capeval run --baseline` share, so the three can never disagree on a verdict.
Exit codes (docs/gating.md#exit-codes): 0 clean, 1 a cell's pass rate regressed, 3 nothing
regressed but bait flags make the comparison unclean, 2 bad input or usage
(an unreadable file, a refused provider change, a mixed cell without
`--allow-provider-fallback`, a cell with `error` repeats, a run missing
planned repeats, a bait case declared nowhere). Advisory statistics never
change the code.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.analysis.compare import add_advisory, compare_cells
from capeval.core.cell import BaitDecl, Cell
from capeval.core.verdict import Comparison, normalize_baits
from capeval.results.errors import ResultFileError
from capeval.results.formats import first_rows_search

EXIT_CLEAN = 0
EXIT_REGRESSED = 1
EXIT_BAD_INPUT = 2
EXIT_BAIT_FLAGS = 3


@dataclass(slots=True)
class GateResult:
    exit_code: int
    # Human output: the verdict table, or the reasons the input was refused.
    text: str
    # The comparison object; None when the input was refused or unreadable.
    json: dict[str, Any] | None
    comparison: Comparison | None = None
    errors: list[str] = field(default_factory=list)
    # What reading passed over (a torn line, a skipped row), kept for a refusal:
    # the verdict's own text shows them, a refusal's used to drop them.
    warnings: list[str] = field(default_factory=list)

    def refusal_json(self) -> dict[str, Any]:
        """What `--json` prints instead of the comparison object when there is none."""
        out: dict[str, Any] = {"errors": self.errors}
        if self.warnings:
            out["warnings"] = self.warnings
        out["exitCode"] = self.exit_code
        return out


def workspace_baits(
    root: Path | None,
    explicit: bool,
    warnings: list[str] | None = None,
    *,
    beside: Sequence[Path] = (),
    found_at: list[Path] | None = None,
) -> dict[str, BaitDecl]:
    """Bait declarations of the workspace's cases; {} when there is no workspace.

    The workspace is `--root` (`explicit`), else the nearest one above `root`
    (default: the current directory), else the nearest one above a result
    file of `beside`. `found_at` receives the root used.

    Only each case's `bait` is read (`capeval.workspace.read_baits`): a case
    broken elsewhere still declares its bait. With an explicit `--root` an
    unusable declaration is an error (ProblemsError); a workspace merely found
    around the current directory gives a warning and the usable ones.
    """
    from capeval.core.problems import ProblemsError
    from capeval.workspace import find_root, read_baits

    starts = [root, *(Path(p).resolve().parent for p in beside)]
    found: Path | None = None
    for start in [root] if explicit else starts:
        try:
            found = find_root(explicit=root) if explicit else find_root(start=start)
        except ProblemsError:
            if explicit:
                raise
            continue
        break
    if found is None:
        return {}
    if found_at is not None:
        found_at.append(found)
    baits, problems = read_baits(found)
    if problems:
        if explicit:
            raise ProblemsError(problems)
        if warnings is not None:
            warnings.append(
                f"{len(problems)} workspace case(s) left out of the bait declarations "
                f"(first: {problems[0]}); see capeval validate"
            )
    return {case_id: BaitDecl(b.metric, float(b.threshold)) for case_id, b in baits.items()}


def load_and_compare(
    baseline: Sequence[Path],
    candidates: Sequence[Path],
    *,
    root: Path | None = None,
    explicit_root: bool = False,
    bait_overrides: Mapping[str, BaitDecl] | None = None,
    allow_provider_fallback: bool = False,
    advisory: bool = False,
    with_values: bool | None = None,
    headline: bool = True,
    seed: int = 0,
    bait_policy: str = "require",
    max_error_rate: float | None = None,
    allow_partial: bool = False,
) -> tuple[Comparison, list[str]]:
    """Read both sides and compare them; read warnings come back separately.

    Where a stream's plan file is beside it, the repeats it planned and does
    not hold are named in `Comparison.partial` (and in a warning with
    `allow_partial`).
    """
    from capeval.analysis.fastload import load_sides

    (base_cells, cand_cells), read_warnings = load_sides(
        [baseline, candidates],
        with_values=advisory if with_values is None else with_values,
        headline=headline,
    )
    for role, paths, cells in (
        ("baseline", baseline, base_cells),
        ("candidate", candidates, cand_cells),
    ):
        if not cells:
            # Every cell would be `missing` or `new`: nothing regressed, so an
            # empty run (a crash before the first row, a wrong path) would gate clean.
            skipped = [w for w in read_warnings if any(str(p) in w for p in paths)]
            raise ResultFileError(
                ", ".join(str(p) for p in paths),
                f"the {role} holds no result rows, and a comparison with an empty run proves "
                + (
                    f"nothing; reading it passed over: {'; '.join(skipped)}"
                    if skipped
                    else "nothing; check the path (capeval run prints where its rows go)"
                ),
            )
    from capeval.results.provenance import mixed_writer_warnings

    read_warnings = [*read_warnings, *mixed_writer_warnings(baseline, candidates)]
    overrides = dict(bait_overrides or {})
    ws: dict[str, BaitDecl] = {}
    found_at: list[Path] = []
    if _needs_workspace(base_cells, cand_cells, overrides):
        ws = workspace_baits(
            root,
            explicit_root,
            read_warnings,
            beside=[*candidates, *baseline],
            found_at=found_at,
        )
    comparison = compare_cells(
        base_cells,
        cand_cells,
        workspace_baits=ws,
        bait_overrides=overrides,
        allow_provider_fallback=allow_provider_fallback,
        advisory=advisory,
        seed=seed,
        bait_policy=bait_policy,
        max_error_rate=max_error_rate,
        workspace_label=f"workspace {found_at[0]}" if found_at else "workspace",
    )
    partial, fills = _unfinished(
        (("baseline", baseline, base_cells), ("candidate", candidates, cand_cells)),
        retry=bool(comparison.unjudged),
    )
    comparison.partial, comparison.allow_partial = partial, allow_partial
    comparison.fill_commands = fills
    if partial:
        judged = "; judged what is there (--allow-partial)" if allow_partial else ""
        comparison.warnings.append(f"incomplete run: {'; '.join(partial)}{judged}")
    comparison.warnings[:0] = read_warnings
    return comparison, read_warnings


def _unfinished(
    sides: Sequence[tuple[str, Sequence[Path], Mapping[str, Cell]]], *, retry: bool
) -> tuple[list[str], list[str]]:
    """(what each side's plan files planned and its streams do not hold, the commands that
    finish those streams: with `--retry-errors` when `retry`, for streams with errors)."""
    from capeval.results.planned import planned_runs

    partial: list[str] = []
    fills: list[str] = []
    for role, paths, cells in sides:
        planned, absent = planned_runs(paths)
        # A repeat a stream holds twice (a duplicate) is counted twice in its cell; it
        # must not stand in for a planned repeat the stream does not hold.
        distinct = _distinct_repeats(paths) if planned else {}
        short = []
        for key, count in sorted(planned.items()):
            cell = cells.get(key)
            held = 0 if cell is None else cell.repeats + cell.errors
            held = min(held, distinct.get(key, held))
            if held < count:
                short.append(f"{key} {held} of {count}")
        if short:
            shown = ", ".join(short[:5]) + (f" and {len(short) - 5} more" if len(short) > 5 else "")
            partial.append(f"the {role} holds fewer repeats than its plan: {shown}")
        if absent:
            # A shard file stands for its run: the shards not given are its missing repeats.
            named = ", ".join(f"{shard} of run {run}" for run, shard in absent[:5])
            more = f" and {len(absent) - 5} more" if len(absent) > 5 else ""
            partial.append(
                f"the {role} is part of a sharded run whose other shards are not given: "
                f"shard {named}{more}; give every shard's stream (or capeval merge them)"
            )
        errored = any(c.errors for c in cells.values())
        if short or (retry and errored):
            flag = " --retry-errors" if retry and errored else ""
            for p in paths:
                if p.suffix != ".jsonl":
                    continue
                if first_rows_search(p, _LIVE_ROW) is not None:
                    # `capeval paperclip live` rows: no plan to resume by.
                    fills.append(
                        f"capeval paperclip live --out {shlex.quote(str(p.parent))} --force: a "
                        "live matrix is run again, not resumed, its error turns retried "
                        "(--retries)"
                    )
                else:
                    fills.append(f"capeval run --resume {shlex.quote(str(p))}{flag}")
        fills += [
            f"capeval run --shard {shard} --run-id {shlex.quote(run)} with the run's flags"
            for run, shard in absent
        ]
    return partial, list(dict.fromkeys(fills))


def _distinct_repeats(paths: Sequence[Path]) -> dict[str, int]:
    """{resultKey: distinct (run, repeat) pairs} the JSON Lines streams of `paths` hold.

    Read by DuckDB (three fields a row); where DuckDB cannot read a stream (a torn
    last line), by the reference reader. {} when neither can: the cells' counts stand.
    """
    streams = [p for p in dict.fromkeys(Path(p).resolve() for p in paths) if p.suffix == ".jsonl"]
    if not streams:
        return {}
    from capeval.analysis import engine
    from capeval.analysis.duckfiles import FastPathUnavailable, literal_path
    from capeval.results.columns import sql_str

    duckdb = engine.engine()
    try:
        files = ", ".join(sql_str(literal_path(p)) for p in streams)
        query = (
            'SELECT resultKey, count(DISTINCT [runId::VARCHAR, "repeat"::VARCHAR]) '
            f"FROM read_json([{files}], columns={{'runId': 'JSON', 'resultKey': 'VARCHAR', "
            "'repeat': 'JSON'}, format='newline_delimited', records=true, auto_detect=false, "
            "maximum_object_size=16777216) WHERE resultKey IS NOT NULL GROUP BY 1"
        )
        con = engine.connect()
        try:
            return {str(k): int(n) for k, n in con.execute(query).fetchall()}
        finally:
            con.close()
    except (FastPathUnavailable, duckdb.Error):
        pass  # read by the reference reader below
    from capeval.results.jsonl import read_jsonl

    seen: dict[str, set[tuple[str, str]]] = {}
    try:
        for path in streams:
            for row in read_jsonl(path)[0]:
                key = row.get("resultKey")
                if isinstance(key, str):
                    pair = (str(row.get("runId")), str(row.get("repeat")))
                    seen.setdefault(key, set()).add(pair)
    except (ResultFileError, OSError):
        return {}
    return {key: len(pairs) for key, pairs in seen.items()}


# A key only the rows of a Paperclip live turn have (`capeval.paperclip.live`).
_LIVE_ROW = re.compile(rb'"gatedOperation"\s*:')


def _needs_workspace(
    base: Mapping[str, Cell], cand: Mapping[str, Cell], overrides: Mapping[str, BaitDecl]
) -> bool:
    carried = {c.caseId for c in (*base.values(), *cand.values()) if c.bait is not None}
    cases = {c.caseId for c in (*base.values(), *cand.values())}
    return bool(cases - carried - set(overrides))


def _paths(paths: str | Path | Sequence[str | Path]) -> list[Path]:
    return [Path(paths)] if isinstance(paths, str | Path) else [Path(p) for p in paths]


def gate_files(
    baseline: str | Path | Sequence[str | Path],
    candidates: str | Path | Sequence[str | Path],
    *,
    root: str | Path | None = None,
    bait_overrides: Mapping[str, Any] | Sequence[str] | None = None,
    allow_provider_fallback: bool = False,
    advisory: bool = False,
    gate: bool = True,
    explicit_root: bool = False,
    headline: bool = False,
    seed: int = 0,
    bait_policy: str = "require",
    max_error_rate: float | None = None,
    allow_partial: bool = False,
    strict_torn: bool = False,
) -> GateResult:
    """Compare candidate files against baseline files and decide the exit code.

    `gate=False` gives `capeval compare`'s rules: a mixed cell is only a
    warning there, while the gate refuses it without the flag.
    `headline=True` also reads what reports show (durations, turns, tokens).
    `bait_policy="report"` (the configuration's `bait`) shows bait flags
    without letting them make the comparison unclean (exit 3).
    `max_error_rate`, `allow_partial` and `strict_torn` are the gate's flags
    of those names (docs/gating.md#outcomes).
    """
    from capeval.analysis.report import render_text
    from capeval.core.problems import ProblemsError
    from capeval.results.errors import ResultFileError

    # One path or several on either side: a lone string must not be iterated
    # into one "file" per character.
    base_paths = _paths(baseline)
    cand_paths = _paths(candidates)
    if root is not None:
        root = Path(root)  # a notebook passes a str; workspace lookup needs a Path
    try:
        overrides = normalize_baits(bait_overrides)
        # Statistics wait until the refusal checks pass: they cost seconds.
        comparison, read_warnings = load_and_compare(
            base_paths,
            cand_paths,
            root=root,
            explicit_root=explicit_root,
            bait_overrides=overrides,
            allow_provider_fallback=allow_provider_fallback,
            advisory=False,
            with_values=advisory,
            headline=headline,
            bait_policy=bait_policy,
            max_error_rate=max_error_rate,
            allow_partial=allow_partial,
        )
    except (ResultFileError, ProblemsError, ValueError, OSError) as exc:
        message = str(exc)
        return GateResult(EXIT_BAD_INPUT, f"error: {message}", None, None, [message])
    refusals = comparison.refusals(gate=gate)
    if gate and strict_torn:
        refusals += [
            f"{w} (--strict-torn: a torn last line is refused)"
            for w in read_warnings
            if "torn last line" in w
        ]
    if refusals:
        text = "\n".join(
            [*(f"refused: {r}" for r in refusals), *(f"warning: {w}" for w in read_warnings)]
        )
        return GateResult(EXIT_BAD_INPUT, text, None, comparison, refusals, read_warnings)
    if advisory:
        add_advisory(comparison, seed=seed)
    return GateResult(
        comparison.exit_code, render_text(comparison, gate=gate), comparison.to_json(), comparison
    )
