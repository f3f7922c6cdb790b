"""Case directories for tests, laid out as a workspace holds them.

`evals/capability/cases/<id>/case.json` and `verify.sh`, with the fixture
under `evals/capability/fixtures/<id>`: valid unless a test says otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CASES = "evals/capability/cases"
FIXTURES = "evals/capability/fixtures"


def case_fields(case_id: str, **changes: Any) -> dict[str, Any]:
    """A valid case.json object for `case_id`, with `changes` applied."""
    return {
        "id": case_id,
        "tier": "simple",
        "title": case_id,
        "fixture": f"{FIXTURES}/{case_id}",
        "prompt": "Fix it.",
        **changes,
    }


def write_case(
    root: Path,
    case_id: str,
    *,
    verify: str | None = "exit 0\n",
    fixture: dict[str, str] | None = None,
    text: str | None = None,
    oracle: bool = True,
    trajectories: dict[str, list[dict[str, Any]]] | None = None,
    **changes: Any,
) -> Path:
    """Write a case and its fixture folder under `root`; returns the case directory.

    `verify=None` leaves the grader out; `fixture` maps file names to their
    text; `text` is written as case.json verbatim (for malformed files);
    `oracle=False` leaves out the oracle trajectory every case ships;
    `trajectories` maps trajectory names to their turns (an `oracle` entry
    replaces the default one-turn oracle).
    """
    fixture_dir = root / FIXTURES / case_id
    fixture_dir.mkdir(parents=True, exist_ok=True)
    for name, content in (fixture or {}).items():
        (fixture_dir / name).write_text(content)
    case_dir = root / CASES / case_id
    case_dir.mkdir(parents=True, exist_ok=True)
    if text is None:
        text = json.dumps(case_fields(case_id, **changes))
    (case_dir / "case.json").write_text(text, encoding="utf-8")
    if verify is not None:
        (case_dir / "verify.sh").write_text(verify)
    plays = dict(trajectories or {})
    if oracle:
        plays.setdefault("oracle", [{"text": "done", "toolCalls": []}])
    if plays:
        (case_dir / "trajectories").mkdir(exist_ok=True)
    for name, turns in plays.items():
        (case_dir / "trajectories" / f"{name}.json").write_text(json.dumps({"turns": turns}))
    return case_dir
