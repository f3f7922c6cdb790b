"""`capeval merge`: join the shard streams of one sharded run into one run.

Exit codes: 0 every triple of the run is in the merged stream, 1 some shard
or triple is missing (the merged stream is still written: `capeval run
--resume` on it runs what is missing), 2 bad input (shards of different
plans or runs, a shard twice, a row that is not its shard's, an output that
exists).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from capeval.commands.common import cannot_write, exit_with, fail, root_option, shown_path

if TYPE_CHECKING:
    from capeval.runner.merge import Merged


def _fail(message: str) -> NoReturn:
    fail("merge", message)


def _say(message: str) -> None:
    click.echo(f"capeval merge: {message}", err=True)


@click.command("merge")
@click.argument("shards", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "-o",
    "--output",
    "output",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="The merged row stream to write (a new file; its plan is written beside it).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write the merged run as a v3 results JSON here.",
)
@root_option
@click.option("--quiet", "-q", is_flag=True, help="Only problems, no summary line.")
def merge(
    shards: tuple[Path, ...], output: Path, out: Path | None, root: Path | None, quiet: bool
) -> None:
    """Join SHARD streams (`capeval run --shard I/N`) into one run (exit 0 complete, 1 incomplete, 2 bad input)."""
    from capeval.runner.merge import MergeError, merge, write_merged
    from capeval.runner.options import counted, plan_path

    resolved = {p.resolve() for p in shards}
    for target, flag in ((output, "-o"), (out, "--out")):
        if target is None:
            continue
        if target.resolve() in resolved or target.resolve() in {
            plan_path(p).resolve() for p in shards
        }:
            _fail(f"{flag} {target} is one of the shards (or a shard's plan); pass a new path")
    if output.exists() and (not output.is_file() or output.stat().st_size > 0):
        _fail(f"-o {output} exists; merge writes a new stream: pass another path or remove it")
    if plan_path(output).exists():
        _fail(f"-o {output}: {plan_path(output).name} exists beside it; pass another path")
    if out is not None and out.resolve() == output.resolve():
        _fail("--out is the v3 file, -o the row stream: pass two paths")
    try:
        merged = merge(list(shards))
    except MergeError as exc:
        _fail(str(exc))
    for message in merged.warnings:
        _say(f"warning: {message}")
    try:
        write_merged(merged, output, root=root)
        if out is not None:
            _write_v3(merged, out)
    except OSError as exc:
        _fail(cannot_write(out if out is not None and output.exists() else output, exc))

    for index in merged.missing_shards:
        owed = len(merged.owed_by(index))
        if not owed:  # more shards than triples: that shard had nothing to run
            continue
        _say(f"shard {index}/{merged.count} is missing: no file given ({counted(owed, 'repeat')})")
    given = {s.shard.index for s in merged.shards}
    missing = merged.missing
    for s in merged.shards:
        lost = [t for t in missing if merged.owner[t] == s.shard.index]
        if lost:
            shown = ", ".join(f"{v} {c} #{r}" for v, c, r in lost[:5])
            more = f", ... ({len(lost) - 5} more)" if len(lost) > 5 else ""
            _say(
                f"shard {s.shard} ({shown_path(s.path)}): {len(lost)} of "
                f"{len(merged.owed_by(s.shard.index))} repeats missing: {shown}{more}"
            )
    complete = not missing
    from capeval.core.outcome import ERROR, row_outcome
    from capeval.results.supersede import supersede

    errored = [r for r in supersede(merged.rows) if row_outcome(r) == ERROR]
    if errored:
        # Held, so not missing; but measured nothing, and the gate will not judge their cells.
        _say(
            f"{counted(len(errored), 'repeat')} measured nothing (outcome error); the gate "
            f"will not judge their cells: run them again with capeval run --resume "
            f"{shown_path(output)} --retry-errors"
        )
    if not quiet or not complete:
        summary = (
            f"merged {len(given)} of {merged.count} shards of run {merged.run_id}: "
            f"{len(merged.planned) - len(missing)} of {len(merged.planned)} repeats -> "
            f"{shown_path(output)}"
        )
        if not complete:
            summary += f"; run the missing ones with: capeval run --resume {shown_path(output)}"
        click.echo(summary, err=not complete)
    exit_with(0 if complete else 1)


def _write_v3(merged: Merged, out: Path) -> None:
    from capeval.results.v3 import write_v3

    plan = merged.shards[0].plan
    variants = (plan.get("resolved") or {}).get("variants") or []
    starts = [str(s.plan["runStartedAt"]) for s in merged.shards if s.plan.get("runStartedAt")]
    ends = [str(r["finishedAt"]) for r in merged.rows if isinstance(r.get("finishedAt"), str)]
    one = variants[0] if len(variants) == 1 else {}
    write_v3(
        out,
        merged.rows,
        started_at=min(starts) if starts else None,
        finished_at=max(ends) if ends else None,
        provider=one.get("provider"),
        model=one.get("model"),
        repeats=int(plan["repeats"]),
        variants=[
            {k: v[k] for k in ("id", "provider", "model") if v.get(k) is not None} for v in variants
        ],
    )
