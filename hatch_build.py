"""Build hook: compile the native JSON Lines reader of the gate, when it can be.

`capeval gate` on large result files is bound by JSON parsing; the native
module (capeval/analysis/native/jsonl_cells.cpp, with its strict JSON reader
strict_json.h) validates each line in one pass and aggregates in the same
pass. It needs a C++17 compiler and Python's headers, nothing else.

The module is optional: without a C++ compiler, or with
CAPEVAL_NO_NATIVE=1, the build warns and carries on, and
capeval reads result files through DuckDB as before (same verdicts, slower).
CI sets CAPEVAL_REQUIRE_NATIVE=1 in its tests so a build that quietly
stopped producing the module fails there.

Editable installs get the module beside its sources (capeval/analysis/),
where the editable path finds it; wheels carry it at the same place.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("capeval/analysis/native/jsonl_cells.cpp")
MODULE = "capeval/analysis/_jsonl_cells"
CFLAGS = ["-O2", "-fPIC", "-fvisibility=hidden", "-DNDEBUG"]


class NativeUnavailable(Exception):
    """Why the native module was not built (the build carries on without it)."""


def _run(command: list[str]) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        raise NativeUnavailable(f"{shlex.join(command[:1])}: {exc}") from exc
    if done.returncode != 0:
        raise NativeUnavailable(f"{shlex.join(command)} failed:\n{done.stderr.strip()[-2000:]}")


def build(root: Path) -> Path:
    """Compile and link the module into the source tree; its path."""
    config = sysconfig.get_config_vars()
    cxx = shlex.split(str(config.get("CXX") or "c++"))
    include = sysconfig.get_paths()["include"]
    target = root / f"{MODULE}{config['EXT_SUFFIX']}"
    with tempfile.TemporaryDirectory(prefix="capeval-native-") as temp:
        partial = Path(temp) / target.name
        _run([*cxx, *CFLAGS, "-std=c++17", "-shared", "-pthread", f"-I{include}",
              str(root / SOURCE), "-o", str(partial)])  # fmt: skip
        os.replace(partial, target)  # an importer never sees half a module
    return target


class NativeBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if os.environ.get("CAPEVAL_NO_NATIVE") == "1":
            self.app.display_info("capeval: CAPEVAL_NO_NATIVE=1, native reader not built")
            return
        try:
            built = build(Path(self.root))
        except NativeUnavailable as exc:
            self.app.display_warning(
                f"capeval: native JSON Lines reader not built ({exc}); "
                "the gate reads result files through DuckDB instead"
            )
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if version != "editable":
            relative = built.relative_to(Path(self.root)).as_posix()
            build_data["force_include"][str(built)] = relative
