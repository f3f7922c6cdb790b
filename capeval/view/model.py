"""The viewer's pages as data, built from what the analysis layer computes.

Nothing here reads a result file itself:

- the repeats are `capeval.analysis.frame.load_frame`'s rows; a repeat that
  a run's stream and its v3 export both hold is shown once, from the copy the
  history views keep (`capeval.analysis.history`, view `repeats`);
- the runs table and the pass-rate trend are the history views;
- a cell's aggregates are `capeval.analysis.cells.cells_from_frame`'s, its
  intervals `capeval.analysis.stats`'s;
- a baseline-vs-candidate matrix is the gate's own comparison
  (`capeval.analysis.gatecheck.gate_files`), advisory statistics included;
- a repeat's transcript is its artifact folder's run summary
  (`capeval.view.transcript`).

Each page is one JSON-ready dict, addressed by a key (`index`, `matrix-0`,
`cell-0-3`, `repeat-c-17`, `paperclip`, `pcase-5`), built when first asked
for: a run of 10,000 repeats costs one frame, and a transcript is read only
when its page is opened.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capeval import __version__
from capeval.core.metrics import METRIC_NAMES, direction
from capeval.view.files import Roots, folders_of
from capeval.view.transcript import no_evidence, repeat_evidence

if TYPE_CHECKING:
    import polars as pl

    from capeval.core.cell import BaitDecl, Cell
    from capeval.core.verdict import Comparison
    from capeval.view.paperclip import Explorer

OUTCOMES = ("passed", "failed", "error")
CANDIDATE = "c"  # the repeats of the paths given
BASELINE = "b"  # the repeats of --baseline
KEY = re.compile(r"^[a-z]+(?:-[A-Za-z0-9]+)*$")
# Row fields a repeat page lists as they are (the rest are in the metrics and tokens).
_ROW_FIELDS = (
    "resultKey",
    "id",
    "title",
    "tier",
    "variantId",
    "provider",
    "model",
    "requestedProvider",
    "requestedModel",
    "agent",
    "agentType",
    "agentVersion",
    "passed",
    "outcome",
    "status",
    "repeat",
    "agentExitCode",
    "verifyExitCode",
    "durationMs",
    "agentDurationMs",
    "verifyDurationMs",
    "turnsUsed",
    "toolCallCount",
    "maxTurns",
    "overBudget",
    "skipPermissions",
    "costUsd",
    "sessionId",
    "error",
    "textPreview",
    "runId",
    "runStartedAt",
    "startedAt",
    "finishedAt",
    "capevalVersion",
    "gitCommit",
    "gitDirty",
    "artifacts",
    "source",
)
_TOKENS = {
    "tokenInput": "input",
    "tokenOutput": "output",
    "tokenCacheRead": "cacheRead",
    "tokenCacheWrite": "cacheWrite",
    "tokenThinking": "thinking",
}


def outcome_of(row: Mapping[str, Any]) -> str:
    """The row's `outcome` when it holds one of `OUTCOMES`, else passed/failed from `passed`."""
    stated = row.get("outcome")
    if isinstance(stated, str) and stated in OUTCOMES:
        return stated
    return "passed" if row.get("passed") is True else "failed"


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    return value


def _shown(path: str | Path) -> str:
    """A path as the user would type it: relative to the working directory when under it."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (OSError, ValueError):
        return str(path)


@dataclass
class _Set:
    """The repeats of one side: every row of its files, numbered."""

    name: str
    frame: pl.DataFrame
    rows: list[dict[str, Any]]


@dataclass
class _CellRef:
    key: str
    caseId: str
    variantId: str
    # side name -> (row numbers into that side's set, the aggregated cell)
    sides: dict[str, tuple[list[int], Cell]] = field(default_factory=dict)


@dataclass
class _Matrix:
    kind: str  # "run" or "comparison"
    title: str
    cells: list[_CellRef]
    summary: dict[str, Any]
    comparison: Comparison | None = None


class Viewer:
    """The pages of one viewer: `page(key)` builds (and keeps) one, `page_keys()` lists them all."""

    def __init__(
        self,
        paths: Sequence[str | Path],
        *,
        baseline: Sequence[str | Path] = (),
        root: Path | None = None,
        derivative: Path | None = None,
        paperclip: Sequence[str | Path] = (),
        static: bool = False,
        seed: int = 0,
    ) -> None:
        self.paths = [Path(p) for p in paths]
        self.baseline_paths = [Path(p) for p in baseline]
        self.static = static
        self.seed = seed
        self.warnings: list[str] = []
        self.roots = Roots(folders_of([*self.paths, *self.baseline_paths]))
        self._pages: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.sets: dict[str, _Set] = {}
        self.matrices: list[_Matrix] = []
        self.runs: list[dict[str, Any]] = []
        self.trend: list[dict[str, Any]] = []
        self._baits = self._workspace_baits(root)
        self.bait_policy = self._bait_policy(root)
        self._load()
        self._explorer_args = (derivative, root, list(paperclip))
        self._explorer: Explorer | None = None

    @property
    def explorer(self) -> Explorer:
        """The Paperclip explorer, loaded when its page is first asked for."""
        if self._explorer is None:
            from capeval.view.paperclip import load_explorer

            derivative, root, rows = self._explorer_args
            self._explorer = load_explorer(derivative=derivative, root=root, rows=rows)
        return self._explorer

    # -- loading ----------------------------------------------------------------

    def _warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    @staticmethod
    def _bait_policy(root: Path | None) -> str:
        """The workspace's `bait` policy, as `capeval gate` would judge by it."""
        from capeval.config import read_bait_policy
        from capeval.core.problems import ProblemsError
        from capeval.workspace import find_root

        try:
            return read_bait_policy(find_root(explicit=root))
        except ProblemsError:
            return "require"

    def _workspace_baits(self, root: Path | None) -> dict[str, BaitDecl]:
        from capeval.analysis.gatecheck import workspace_baits
        from capeval.core.problems import ProblemsError

        try:
            return workspace_baits(root, False, self.warnings)
        except ProblemsError:
            return {}

    def _load_set(self, name: str, paths: Sequence[Path]) -> _Set:
        import polars as pl

        from capeval.analysis.frame import load_frame

        # A run's matrices keep each repeat once, as the history views do; a comparison
        # pools every file, as the gate does (`_run_matrices`, `_comparison_matrix`), so
        # with a baseline both copies do count there.
        once = name == CANDIDATE and not self.baseline_paths
        frame = (
            load_frame(paths, on_warning=self._warn, counted_once=once) if paths else pl.DataFrame()
        )
        if frame.height:
            frame = frame.with_row_index("_row")
        rows = frame.to_dicts() if frame.height else []
        return _Set(name, frame, rows)

    def _load(self) -> None:
        from capeval.analysis import history

        self.sets[CANDIDATE] = self._load_set(CANDIDATE, self.paths)
        con = history.open_db(schema=False)
        try:
            report = history.scan(con, self.paths) if self.paths else None
            if report is not None:
                for path, why in report.skipped:
                    self._warn(f"skipped {_shown(path)}: {why}")
                for message in report.warnings:
                    self._warn(message)
            if report is not None and report.files_seen:
                self.runs = history.runs(con)
                self.trend = history.records(
                    con,
                    # An `error` repeat measured nothing: in no rate, as in the runs
                    # view (`repeats` are the judged ones, as a cell's are).
                    "SELECT runId, min(runStartedAt) AS startedAt, variantId, "
                    "count_if(outcome <> 'error') AS repeats, "
                    "CAST(count_if(passed) AS BIGINT) AS passed, "
                    "count_if(passed) / nullif(count_if(outcome <> 'error'), 0) AS passRate "
                    "FROM repeats GROUP BY runId, variantId "
                    "ORDER BY startedAt NULLS FIRST, runId, variantId",
                )
                kept = history.records(
                    con, 'SELECT runId, variantId, id, "repeat", source FROM repeats'
                )
            else:
                kept = []
        finally:
            con.close()
        for run in self.runs:
            run["sources"] = [_shown(s) for s in run.get("sources") or []]
        self._run_matrices(kept)
        if self.baseline_paths:
            self.sets[BASELINE] = self._load_set(BASELINE, self.baseline_paths)
            self._comparison_matrix()

    def _run_matrices(self, kept: list[dict[str, Any]]) -> None:
        """One matrix per run, of the repeats the history views keep (each repeat once)."""
        cand = self.sets[CANDIDATE]
        if not cand.rows:
            return
        keep = {(k["runId"], k["variantId"], k["id"], k["repeat"], k["source"]) for k in kept}
        real: dict[str, str] = {}
        by_run: dict[str, list[int]] = {}
        for row in cand.rows:
            source = str(row.get("source"))
            if source not in real:
                real[source] = os.path.realpath(source)
            identity = (row.get("runId"), row.get("variantId"), row.get("id"), row.get("repeat"))
            if row.get("repeat") is None or (*identity, real[source]) in keep:
                by_run.setdefault(str(row.get("runId")), []).append(row["_row"])
        order = [run["runId"] for run in self.runs if run["runId"] in by_run]
        order += [r for r in by_run if r not in order]
        info = {run["runId"]: run for run in self.runs}
        for run_id in order:
            numbers = by_run[run_id]
            cells = self._cells(cand, numbers)
            run = info.get(run_id, {})
            self.matrices.append(
                _Matrix(
                    "run",
                    run_id,
                    cells,
                    {
                        "runId": run_id,
                        "startedAt": run.get("startedAt"),
                        "repeats": len(numbers),
                        "passed": sum(1 for n in numbers if cand.rows[n].get("passed") is True),
                        "cells": len(cells),
                        "variants": sorted({c.variantId for c in cells}),
                        "sources": run.get("sources", []),
                    },
                )
            )

    def _cells(self, side: _Set, numbers: Sequence[int]) -> list[_CellRef]:
        """The cells of some rows of a side, aggregated by the analysis layer."""
        import polars as pl

        from capeval.analysis.cells import cells_from_frame
        from capeval.core.aggregate import row_result_key

        groups: dict[str, list[int]] = {}
        for n in numbers:
            groups.setdefault(row_result_key(side.rows[n]), []).append(n)
        subset = side.frame.filter(pl.col("_row").is_in(list(numbers)))
        cells = cells_from_frame(subset)
        out = []
        for key, cell in cells.items():
            ref = _CellRef(key, cell.caseId, cell.variantId)
            ref.sides[side.name] = (groups.get(key, []), cell)
            out.append(ref)
        return out

    def _comparison_matrix(self) -> None:
        """The baseline against every candidate path, judged by the gate's own comparison."""
        from capeval.analysis.frame import expand_paths
        from capeval.analysis.gatecheck import gate_files
        from capeval.results.errors import ResultFileError

        # The gate takes files; folders are searched as load_frame searches them.
        try:
            base = expand_paths(self.baseline_paths, on_warning=self._warn)
            cand = expand_paths(self.paths, on_warning=self._warn)
        except ResultFileError as exc:
            self._warn(f"comparison: {exc}")
            return
        result = gate_files(base, cand, advisory=True, gate=False, bait_policy=self.bait_policy)
        for error in result.errors:
            self._warn(f"comparison: {error}")
        comparison = result.comparison
        if comparison is None:
            return
        if not comparison.advisory:
            from capeval.analysis.compare import add_advisory

            add_advisory(comparison, seed=self.seed)
        groups: dict[str, dict[str, list[int]]] = {}
        from capeval.core.aggregate import row_result_key

        for name in (BASELINE, CANDIDATE):
            by_key: dict[str, list[int]] = {}
            for row in self.sets[name].rows:
                by_key.setdefault(row_result_key(row), []).append(row["_row"])
            groups[name] = by_key
        cells = []
        for cmp in comparison.cells:
            ref = _CellRef(cmp.resultKey, cmp.caseId, cmp.variantId)
            for name, cell in ((BASELINE, cmp.baseline), (CANDIDATE, cmp.candidate)):
                if cell is not None:
                    ref.sides[name] = (groups[name].get(cell.resultKey, []), cell)
            cells.append(ref)
        summary = comparison.summary
        self.matrices.insert(
            0,
            _Matrix(
                "comparison",
                "baseline vs candidate",
                cells,
                {
                    "baseline": [_shown(p) for p in self.baseline_paths],
                    "candidate": [_shown(p) for p in self.paths],
                    "summary": summary,
                    "clean": comparison.clean,
                    "exitCode": result.exit_code,
                    "cells": len(cells),
                    "variants": sorted({c.variantId for c in cells}),
                    "baitFlags": comparison.bait_flag_lines,
                },
                comparison,
            ),
        )

    # -- pages ------------------------------------------------------------------

    def page_keys(self) -> Iterator[str]:
        """Every page's key: what an export writes."""
        yield "index"
        for m, matrix in enumerate(self.matrices):
            yield f"matrix-{m}"
            for c in range(len(matrix.cells)):
                yield f"cell-{m}-{c}"
        for name, side in self.sets.items():
            for n in range(len(side.rows)):
                yield f"repeat-{name}-{n}"
        yield "paperclip"
        for i in range(len(self.explorer.rows)):
            yield f"pcase-{i}"

    def page(self, key: str) -> dict[str, Any] | None:
        """The data of the page `key`, or None when there is no such page."""
        if not KEY.match(key):
            return None
        # One page at a time: the server's threads share the cache.
        with self._lock:
            if key not in self._pages:
                built = self._build(key)
                if built is None:
                    return None
                self._pages[key] = built
            return self._pages[key]

    def build(self, key: str) -> dict[str, Any] | None:
        """The page `key` built afresh, not kept (an export writes each page once)."""
        if not KEY.match(key):
            return None
        with self._lock:
            return self._build(key)

    def _build(self, key: str) -> dict[str, Any] | None:
        name, *parts = key.split("-")
        try:
            numbers = [int(p) for p in parts if p.isdigit()]
            if name == "index" and not parts:
                return self._index()
            if name == "matrix" and len(numbers) == 1 == len(parts):
                return self._matrix(numbers[0])
            if name == "cell" and len(numbers) == 2 == len(parts):
                return self._cell(numbers[0], numbers[1])
            if (
                name == "repeat"
                and len(parts) == 2
                and parts[0] in self.sets
                and parts[1].isdigit()
            ):
                return self._repeat(parts[0], int(parts[1]))
            if name == "paperclip" and not parts:
                return self.explorer.index()
            if name == "pcase" and len(numbers) == 1 == len(parts):
                return self.explorer.case(numbers[0])
        except IndexError:
            return None
        return None

    def _index(self) -> dict[str, Any]:
        return {
            "version": __version__,
            "inputs": [_shown(p) for p in self.paths],
            "baseline": [_shown(p) for p in self.baseline_paths],
            "matrices": [
                {"id": m, "kind": matrix.kind, "title": matrix.title, **matrix.summary}
                for m, matrix in enumerate(self.matrices)
            ],
            "runs": self.runs,
            "trend": self.trend,
            "metrics": [{"metric": m, "direction": direction(m)} for m in METRIC_NAMES],
            "warnings": self.warnings,
        }

    def _bait(self, ref: _CellRef) -> BaitDecl | None:
        for _, cell in ref.sides.values():
            if cell.bait is not None:
                return cell.bait
        return self._baits.get(ref.caseId)

    def _side(self, name: str, numbers: Sequence[int], cell: Cell) -> dict[str, Any]:
        rows = self.sets[name].rows
        outcomes = dict.fromkeys(OUTCOMES, 0)
        for n in numbers:
            outcomes[outcome_of(rows[n])] += 1
        return {
            "repeats": cell.repeats,
            "passCount": cell.passCount,
            # No judged repeat (only errors): no rate, not 0%.
            "passRate": cell.passRate if cell.repeats else None,
            "outcomes": outcomes,
            "medians": {m: _number(v) for m, v in cell.medians.items()},
            "mixed": cell.mixed,
            "resolved": [f"{p or '?'}:{m or '?'}" for p, m in cell.resolved],
        }

    def _matrix_cell(self, matrix: _Matrix, c: int) -> dict[str, Any]:
        ref = matrix.cells[c]
        first = next(iter(ref.sides.values()))[1]
        # The case's tier and title from a row (the gate's cells do not carry them).
        row = next((self.sets[name].rows[ns[0]] for name, (ns, _) in ref.sides.items() if ns), {})
        out: dict[str, Any] = {
            "id": c,
            "key": ref.key,
            "caseId": ref.caseId,
            "variantId": ref.variantId,
            "tier": first.tier or row.get("tier"),
            "title": first.title or row.get("title"),
            "sides": {
                name: self._side(name, numbers, cell) for name, (numbers, cell) in ref.sides.items()
            },
        }
        if matrix.comparison is not None:
            cmp = matrix.comparison.cells[c]
            out["status"] = cmp.status
            out["behaviors"] = [b.to_json() for b in cmp.behaviors]
            out["bait"] = cmp.bait.to_json() if cmp.bait else None
            return out
        decl = self._bait(ref)
        if decl is None:
            out["bait"] = None
        else:
            median = _number(first.medians.get(decl.metric))
            out["bait"] = {
                "metric": decl.metric,
                "threshold": _number(decl.threshold),
                "candidateMedian": median,
                "misbehaving": None if median is None else median > decl.threshold,
                "flag": False,
            }
        return out

    def _matrix(self, m: int) -> dict[str, Any]:
        matrix = self.matrices[m]
        cells = [self._matrix_cell(matrix, c) for c in range(len(matrix.cells))]
        variants = list(dict.fromkeys(c["variantId"] for c in cells))
        cases = list(dict.fromkeys(c["caseId"] for c in cells))
        return {
            "id": m,
            "kind": matrix.kind,
            "title": matrix.title,
            **matrix.summary,
            "variants": variants,
            "cases": cases,
            "cells": cells,
        }

    def _cell(self, m: int, c: int) -> dict[str, Any]:
        from capeval.analysis import stats

        matrix = self.matrices[m]
        ref = matrix.cells[c]
        page = self._matrix_cell(matrix, c)
        page["matrix"] = {"id": m, "kind": matrix.kind, "title": matrix.title}
        if matrix.comparison is not None:
            page["advisory"] = matrix.comparison.cells[c].advisory
        else:
            (_, cell) = ref.sides[CANDIDATE]
            values = cell.values or {}
            metrics = [m for m in METRIC_NAMES if values.get(m)]
            intervals = stats.median_intervals([values[m] for m in metrics], self.seed)
            page["advisory"] = {
                "candidate": stats.side_advisory(cell),
                "behaviors": {
                    metric: {"candidateCI": list(ci) if ci else None}
                    for metric, ci in zip(metrics, intervals, strict=True)
                },
            }
        page["repeats"] = {
            name: [self._repeat_summary(name, n) for n in numbers]
            for name, (numbers, _) in ref.sides.items()
        }
        return page

    def _repeat_summary(self, name: str, n: int) -> dict[str, Any]:
        row = self.sets[name].rows[n]
        return {
            "key": f"repeat-{name}-{n}",
            "repeat": row.get("repeat"),
            "runId": row.get("runId"),
            "outcome": outcome_of(row),
            "status": row.get("status"),
            "turnsUsed": row.get("turnsUsed"),
            "toolCallCount": row.get("toolCallCount"),
            "tokenInput": row.get("tokenInput"),
            "tokenOutput": row.get("tokenOutput"),
            "durationMs": _number(row.get("durationMs")),
            "metrics": (
                {m: _number(row.get(m)) for m in METRIC_NAMES}
                if row.get("behaviorsCaptured")
                else None
            ),
            "error": (row.get("error") or "")[:300] or None,
            "hasArtifacts": isinstance(row.get("artifacts"), str),
        }

    def artifact_folder(self, row: Mapping[str, Any]) -> Path | None:
        """A row's artifact folder: its `artifacts` field, relative to its file's folder."""
        artifacts = row.get("artifacts")
        source = row.get("source")
        if not isinstance(artifacts, str) or not artifacts or not isinstance(source, str):
            return None
        return Path(source).parent / artifacts

    def url(self, path: Path) -> str | None:
        return self.roots.url(path, static=self.static)

    def _repeat(self, name: str, n: int) -> dict[str, Any]:
        row = self.sets[name].rows[n]
        folder = self.artifact_folder(row)
        if folder is None:
            evidence = no_evidence(
                "the row names no artifact folder (a run with --no-artifacts, a v3 export, "
                "or a failed copy: see its error)"
            )
        elif self.roots.locate(folder) is None:
            evidence = no_evidence(
                f"the artifact folder {row.get('artifacts')} lies outside the results folders "
                "given; pass its results folder to capeval view"
            )
        else:
            evidence = repeat_evidence(folder, self.url)
        tokens = {key: row.get(column) for column, key in _TOKENS.items()}
        fields = {k: row.get(k) for k in _ROW_FIELDS if row.get(k) is not None}
        source = fields.get("source")
        if isinstance(source, str):
            fields["source"] = _shown(source)
        stored = (
            {m: _number(row.get(m)) for m in METRIC_NAMES} if row.get("behaviorsCaptured") else None
        )
        return {
            "key": f"repeat-{name}-{n}",
            "side": name,
            "caseId": row.get("id"),
            "variantId": row.get("variantId"),
            "resultKey": row.get("resultKey"),
            "repeat": row.get("repeat"),
            "outcome": outcome_of(row),
            "fields": fields,
            "tokens": tokens if any(v is not None for v in tokens.values()) else None,
            "stored": stored,
            "bait": (
                {"metric": row.get("baitMetric"), "threshold": _number(row.get("baitThreshold"))}
                if row.get("baitMetric")
                else None
            ),
            **evidence,
        }


def load_viewer(
    paths: Sequence[str | Path],
    *,
    baseline: Sequence[str | Path] = (),
    root: Path | None = None,
    derivative: Path | None = None,
    paperclip: Sequence[str | Path] = (),
    static: bool = False,
    on_progress: Callable[[str], None] | None = None,
) -> Viewer:
    """The viewer of `paths` (result files or folders), optionally against `baseline`."""
    if on_progress is not None:
        on_progress("loading " + ", ".join(_shown(p) for p in paths))
    return Viewer(
        paths,
        baseline=baseline,
        root=root,
        derivative=derivative,
        paperclip=paperclip,
        static=static,
    )
