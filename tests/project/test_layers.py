"""The package's layers point only down, and no module imports itself back.

Read from the source (every `import`, at module level or inside a function),
so a lazy import cannot hide an arrow. The layers, lowest first, and what
each may use, are stated in docs/development.md.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "capeval"

# Each layer may import the layers listed for it (and itself, without loops).
LAYERS: dict[str, set[str]] = {
    "core": set(),
    "interrupt": set(),
    "results": {"core"},
    "config": {"core"},
    "workspace": {"core", "config"},
    "scaffold": {"core", "config", "workspace"},
    "proc": {"core"},
    "isolation": {"core", "proc"},
    "agents": {"core", "proc", "isolation", "results"},
    "runner": {"core", "proc", "isolation", "agents", "results", "config", "workspace"},
    "analysis": {"core", "results", "config", "workspace"},
    "paperclip": {"core", "proc", "agents", "runner", "results", "workspace"},
    "commands": {
        "core",
        "interrupt",
        "results",
        "config",
        "workspace",
        "proc",
        "isolation",
        "agents",
        "runner",
        "analysis",
        "paperclip",
        "view",
        "scaffold",
        "cli",
    },
    # The viewer: a top layer that shows what the analysis layer computes
    # (and the Paperclip suite, run in process); it never runs an agent.
    "view": {"core", "results", "config", "workspace", "analysis", "paperclip"},
    "cli": {"interrupt", "commands"},
    "__main__": {"cli"},
}
# Libraries the runner (and what it stands on) never loads: a run must not pay
# for the analysis stack, and must not break when it is missing.
ANALYSIS_STACK = ("polars", "duckdb", "_duckdb", "scipy", "matplotlib", "numpy")
NO_ANALYSIS_STACK = (
    "core",
    "results",
    "config",
    "workspace",
    "proc",
    "isolation",
    "agents",
    "runner",
)


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[str]:
    """Every module `name` imports, capeval's resolved to the module (not the package)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            subs = [f"{target}.{alias.name}" for alias in node.names]
            found = [s for s in subs if s in MODULES]
            yield from found or [target]


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "capeval" or len(parts) == 1:
        return None
    return parts[1]


EDGES = {
    name: {i for i in _imports(name, path) if i in MODULES and i != name}
    for name, path in MODULES.items()
}


def test_every_module_belongs_to_a_layer() -> None:
    unplaced = sorted(m for m in MODULES if _layer(m) is not None and _layer(m) not in LAYERS)
    assert unplaced == [], f"add these to LAYERS (and docs/development.md): {unplaced}"


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_a_layer_imports_only_what_lies_below_it(layer: str) -> None:
    wrong = sorted(
        f"{src} -> {dst}"
        for src, dsts in EDGES.items()
        if _layer(src) == layer
        for dst in dsts
        if _layer(dst) not in (None, layer) and _layer(dst) not in LAYERS[layer]
    )
    assert wrong == []


@pytest.mark.parametrize("layer", NO_ANALYSIS_STACK)
def test_the_run_path_never_loads_the_analysis_stack(layer: str) -> None:
    wrong = sorted(
        f"{name} imports {imported}"
        for name, path in MODULES.items()
        if _layer(name) == layer
        for imported in _imports(name, path)
        if imported.split(".")[0] in ANALYSIS_STACK
    )
    assert wrong == []


def test_no_import_loops() -> None:
    """Tarjan's strongly connected components over the module graph: none larger than one."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(EDGES[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                loops.append(sorted(component))

    for node in sorted(EDGES):
        if node not in index:
            visit(node)
    assert loops == []


def test_the_core_does_no_io() -> None:
    """The core's modules import nothing that reaches files, processes or the network."""
    io_modules = {"os", "subprocess", "shutil", "socket", "tempfile", "io", "signal", "time"}
    wrong = sorted(
        f"{name} imports {imported}"
        for name, path in MODULES.items()
        if _layer(name) == "core"
        for imported in _imports(name, path)
        if imported.split(".")[0] in io_modules
    )
    assert wrong == []
