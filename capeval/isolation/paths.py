"""Which host paths a sandbox masks, and which masked paths it must show again (read-only).

A bwrap sandbox sees the host read-only, minus masks: the workspace (cases,
graders, baseline, results), the run's temp folder (other repeats'
workdirs), the user's home, `/tmp`. Some of what a process needs can lie
under a mask: the Python that runs capeval's scripted player (a `.venv` in
the workspace), capeval itself (an editable checkout), the agent CLI (an npm
prefix in the home), a `PATH` entry. Each is shown again, read-only, as the
smallest folder that holds it: never a folder that holds a protected path
(the cases, results, baseline, run temp folder) or lies inside one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def real(path: Path | str) -> Path:
    return Path(os.path.realpath(path))


def within(path: Path, folder: Path) -> bool:
    """`path` is `folder` or lies inside it."""
    return path == folder or folder in path.parents


def install_tree(exe: Path | str) -> Path:
    """The folder a binary needs whole: the package an npm `node_modules/.bin` link
    points into (with its dependencies), else the binary's own folder."""
    path = real(exe)
    parts = path.parts
    if "node_modules" in parts:
        first = parts.index("node_modules")
        return Path(*parts[:first]) if first > 1 else path.parent
    return path.parent


def outermost(paths: Iterable[Path]) -> list[Path]:
    """The paths none of the others holds, shallowest first."""
    out: list[Path] = []
    for path in sorted(set(paths), key=lambda p: (len(p.parts), str(p))):
        if not any(within(path, kept) for kept in out):
            out.append(path)
    return out


def exposure(path: Path, masks: Iterable[Path], protected: Iterable[Path]) -> Path | None:
    """The folder to show again so that `path` is visible, or None.

    None when no mask hides `path`, or when it lies inside a protected path.
    Otherwise the first folder below the mask, on the way to `path`, that
    holds no protected path.
    """
    guarded = [real(p) for p in protected]
    if any(within(path, p) for p in guarded):
        return None
    hiding = [m for m in masks if within(path, m) and m != path]
    if not hiding:
        return None
    mask = min(hiding, key=lambda m: len(m.parts))
    candidate = mask
    for part in path.parts[len(mask.parts) :]:
        candidate = candidate / part
        if not any(within(p, candidate) for p in guarded):
            return candidate
    return None


def exposures(
    needed: Iterable[Path], masks: Iterable[Path], protected: Iterable[Path]
) -> list[Path]:
    """Every folder to show again for `needed`, outermost only."""
    masks = list(masks)
    protected = list(protected)
    found = [exposure(real(p), masks, protected) for p in needed if os.path.exists(p)]
    return outermost(p for p in found if p is not None)
