"""Build hook: compile the native JSON Lines reader of the gate, when it can be.

`capeval gate` on large result files is bound by JSON parsing; the native
module (capeval/analysis/native/jsonl_cells.cpp) parses with yyjson and
aggregates in the same pass. yyjson's sources come from the `yyjson` package
on PyPI (a build requirement whose wheel ships yyjson.c and yyjson.h), so no
third-party code lives in this repository.

The module is optional: without a C/C++ compiler, without the yyjson
package, or with CAPEVAL_NO_NATIVE=1, the build warns and carries on, and
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
from concurrent.futures import ThreadPoolExecutor
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("capeval/analysis/native/jsonl_cells.cpp")
MODULE = "capeval/analysis/_jsonl_cells"
CFLAGS = ["-O2", "-fPIC", "-fvisibility=hidden", "-DNDEBUG"]


class NativeUnavailable(Exception):
    """Why the native module was not built (the build carries on without it)."""


def yyjson_dir() -> Path:
    """Where the `yyjson` package keeps yyjson.c and yyjson.h."""
    spec = find_spec("yyjson")
    if spec is None or not spec.submodule_search_locations:
        raise NativeUnavailable("the yyjson package (its C sources) is not installed")
    for location in spec.submodule_search_locations:
        folder = Path(location)
        if (folder / "yyjson.c").is_file() and (folder / "yyjson.h").is_file():
            return folder
    raise NativeUnavailable("the yyjson package carries no yyjson.c/yyjson.h")


def _run(command: list[str]) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        raise NativeUnavailable(f"{shlex.join(command[:1])}: {exc}") from exc
    if done.returncode != 0:
        raise NativeUnavailable(f"{shlex.join(command)} failed:\n{done.stderr.strip()[-2000:]}")


def build(root: Path) -> Path:
    """Compile and link the module into the source tree; its path."""
    yyjson = yyjson_dir()
    config = sysconfig.get_config_vars()
    cc = shlex.split(str(config.get("CC") or "cc"))
    cxx = shlex.split(str(config.get("CXX") or "c++"))
    include = sysconfig.get_paths()["include"]
    target = root / f"{MODULE}{config['EXT_SUFFIX']}"
    with tempfile.TemporaryDirectory(prefix="capeval-native-") as temp:
        objects = [Path(temp) / "yyjson.o", Path(temp) / "jsonl_cells.o"]
        commands = [
            [*cc, *CFLAGS, "-c", str(yyjson / "yyjson.c"), "-o", str(objects[0])],
            [*cxx, *CFLAGS, "-std=c++17", f"-I{include}", f"-I{yyjson}", "-c",
             str(root / SOURCE), "-o", str(objects[1])],
        ]  # fmt: skip
        # yyjson.c is the slow one (about 20 s): compile both side by side.
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(_run, commands))
        partial = target.with_name(target.name + ".tmp")
        _run([*cxx, "-shared", "-pthread", *map(str, objects), "-o", str(partial)])
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
