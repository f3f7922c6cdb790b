"""The CLI entry point stays lean: help never imports the analysis stack."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from capeval.cli import COMMANDS, main

HEAVY = ("polars", "duckdb", "scipy", "matplotlib")


def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0, result.output
    for name in COMMANDS:
        assert name in result.output


def test_help_imports_no_heavy_library() -> None:
    code = (
        "import sys\n"
        "from capeval.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout
