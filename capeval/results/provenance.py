"""Which implementation wrote a result file, read from its head.

capeval reads result files of the original TypeScript harness, and a team
moving over will gate capeval's candidates against a baseline that harness
froze. Pass rates mean the same on both sides; some behavior counts do not
quite: capeval reads a few shell forms further than the metrics' literal
words (docs/behavior-metrics.md#where-capeval-counts-differently: `do sed -i`, `then curl`, `perl -pi`,
`/usr/bin/curl`, `# comments`), so on the same stream its counts can be
higher. Such a comparison is allowed, but its behavior verdicts (and a bait's
baseline median) may partly be that difference, and the user should hear it.

Every row capeval writes carries `capevalVersion`; the original harness's rows
do not. Only each file's first 64 KiB of rows is read: cheap enough for every gate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from capeval.results.formats import first_rows_search

_MARK = re.compile(re.escape(b'"capevalVersion"'))


def written_by_capeval(path: str | Path) -> bool:
    """True when the file's first rows were written by capeval."""
    return first_rows_search(path, _MARK) is not None


def mixed_writer_warnings(
    baseline: Sequence[str | Path], candidate: Sequence[str | Path]
) -> list[str]:
    """One warning when one side was written by capeval and the other was not."""
    base = {written_by_capeval(p) for p in baseline}
    cand = {written_by_capeval(p) for p in candidate}
    if base == {False} and True in cand:
        other, ours = "baseline", "candidate"
    elif cand == {False} and True in base:
        other, ours = "candidate", "baseline"
    else:
        return []
    return [
        f"the {other} was not written by capeval (its rows carry no capevalVersion) and the "
        f"{ours} was: capeval counts a few shell forms the literal rules miss (`do sed -i`, "
        "`then curl`, `perl -pi`; docs/behavior-metrics.md#where-capeval-counts-differently), so behavior verdicts and bait "
        "medians may partly reflect that; pass-rate verdicts are unaffected"
    ]
