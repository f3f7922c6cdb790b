"""`capeval run --baseline` takes the gate's judging flags, as its refusals name them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clirun import capeval
from tests.runhelpers import write_case

pytestmark = pytest.mark.slow

# The first call (counter at 0) measures nothing, the product says so through
# its hook; every later call writes done.txt and passes.
AGENT = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "alt 1.0"; exit 0; fi
count=$(cat "{counter}" 2>/dev/null || echo 0)
echo $((count + 1)) > "{counter}"
if [ "$count" = 0 ]; then
  printf '%s' '{{"status": "failed", "turnsUsed": 0, "toolCallCount": 0, "turns": [],
    "outcome": "error", "errorKind": "rate_limit", "providerStatus": 429}}' | sh "$CAPEVAL_HOOK" postRun
  exit 1
fi
echo ok > "$1/done.txt"
printf '%s' '{{"status": "done", "turnsUsed": 0, "toolCallCount": 0, "turns": []}}' | sh "$CAPEVAL_HOOK" postRun
"""

CONFIG = """
[agents.alt]
type = "command"
command = "bin/alt.sh {workdir} {prompt}"
skip_permissions_args = []
"""


def test_max_error_rate_judges_a_run_with_error_repeats(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    agent = tmp_path / "bin" / "alt.sh"
    agent.parent.mkdir()
    agent.write_text(AGENT.format(counter=tmp_path / "calls"))
    agent.chmod(0o755)
    (tmp_path / "capeval.toml").write_text(CONFIG)
    run = ("run", "--matrix", "v=p:m@alt", "--repeats", "2", "--retries", "0", "-q")
    (tmp_path / "calls").write_text("1")  # the baseline: two passes
    base_path = tmp_path / "base2.jsonl"
    assert capeval(*run, "--jsonl", base_path, cwd=tmp_path).returncode == 0
    (tmp_path / "calls").write_text("0")  # the candidate: one error, one pass
    args = (*run, "--jsonl", "cand.jsonl", "--baseline", base_path)
    refused = capeval(*args, cwd=tmp_path)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "pass --max-error-rate R" in refused.stderr
    (tmp_path / "calls").write_text("0")
    judged = capeval(*run, "--jsonl", "cand2.jsonl", "--baseline", base_path,
                     "--max-error-rate", "0.5", cwd=tmp_path)  # fmt: skip
    assert judged.returncode == 0, judged.stdout + judged.stderr
    assert "allowed by --max-error-rate 0.5" in judged.stdout + judged.stderr
    alone = capeval(*run, "--jsonl", "c3.jsonl", "--max-error-rate", "0.5", cwd=tmp_path)
    assert alone.returncode == 2 and "pass --baseline too" in alone.stderr
