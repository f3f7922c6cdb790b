"""What an installed capeval (a wheel, no checkout) carries and finds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
         "-q", "-w", str(out)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    (found,) = out.glob("capeval-*.whl")
    return found


def test_the_wheel_carries_the_named_queries(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for sql in sorted((ROOT / "analysis").glob("*.sql")):
        assert f"capeval/builtin_queries/{sql.name}" in names


def test_the_wheel_carries_the_viewer_page(wheel: Path, tmp_path: Path) -> None:
    # `capeval view` inlines these into its one HTML file; a wheel without
    # them would serve nothing.
    names = set(zipfile.ZipFile(wheel).namelist())
    for asset in sorted((ROOT / "capeval" / "view" / "assets").iterdir()):
        assert f"capeval/view/assets/{asset.name}" in names
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    code = "from capeval.view.page import html; print(len(html()))"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(proc.stdout) > 10_000


def test_the_wheel_carries_the_workspace_templates(wheel: Path) -> None:
    # `capeval init` and `capeval new case` read them from the installed package.
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = ROOT / "capeval" / "templates"
    for path in sorted(p for p in templates.rglob("*") if p.is_file()):
        assert f"capeval/templates/{path.relative_to(templates).as_posix()}" in names


def test_an_installed_capeval_inits_a_workspace_outside_any_checkout(
    wheel: Path, tmp_path: Path
) -> None:
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    proc = subprocess.run(
        [sys.executable, "-m", "capeval", "init", "ws"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ws" / "evals/capability/cases/fix-greeting/solution/solve.sh").is_file()


def test_an_installed_capeval_lists_its_queries_outside_any_workspace(
    wheel: Path, tmp_path: Path
) -> None:
    # Found beside the sources before; an installed package has no analysis/ there.
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    code = (
        "import json, capeval; from capeval.analysis.queries import list_queries; "
        "print(json.dumps([capeval.__file__, [q.name for q in list_queries()]]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
        check=True,
    )
    where, names = json.loads(proc.stdout)
    assert Path(where).is_relative_to(target)  # the wheel's copy, not the checkout
    assert names == sorted(p.stem for p in (ROOT / "analysis").glob("*.sql"))


def test_the_wheel_is_pure_python(wheel: Path) -> None:
    # `pip install` needs no compiler on any platform, and every user reads
    # result files through the same code.
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    compiled = (".so", ".pyd", ".dll", ".dylib", ".c", ".cpp", ".h")
    assert [n for n in names if n.endswith(compiled)] == []
    with zipfile.ZipFile(wheel) as zf:
        wheel_meta = next(n for n in names if n.endswith(".dist-info/WHEEL"))
        meta = zf.read(wheel_meta).decode()
    assert "Root-Is-Purelib: true" in meta and "Tag: py3-none-any" in meta, meta
