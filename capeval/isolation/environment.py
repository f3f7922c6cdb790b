"""The environment of an agent or a grader: an allow-list, never capeval's whole environment.

CI secrets, cloud credentials and tokens live in the environment capeval is
started from; an agent under evaluation must see none of them unless it
needs them. Every process capeval starts for a repeat gets `PATH`, `LANG`,
`LC_ALL`, `TERM`, a `HOME` of its own, the variables its adapter documents
(`needs`) and those the agent entry names in `env_pass`; capeval's own
settings (`TMPDIR`, `EVAL_HTTP_URL`, an adapter's config home, the entry's
`env`) come on top. The grader gets the same minus the agent's credentials,
plus the HTTP fixture's URL and token.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from capeval.core.redact import is_secret_name

BASE_VARS: tuple[str, ...] = ("PATH", "LANG", "LC_ALL", "TERM")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def passed(source: Mapping[str, str], names: Iterable[str]) -> dict[str, str]:
    """The variables of `source` named in `names` (those it has)."""
    return {name: source[name] for name in dict.fromkeys(names) if name in source}


def agent_environment(
    *,
    needs: Iterable[str],
    env_pass: Iterable[str],
    home: Path | str,
    source: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """What an agent inherits: the base variables, its adapter's `needs`, `env_pass`, HOME."""
    src = os.environ if source is None else source
    env = passed(src, (*BASE_VARS, *needs, *env_pass))
    env.setdefault("PATH", DEFAULT_PATH)
    env["HOME"] = str(home)
    return env


def grader_environment(
    *,
    env_pass: Iterable[str],
    credentials: Iterable[str],
    home: Path | str,
    source: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """What a grader inherits: the base variables and the non-secret `env_pass` ones, HOME.

    The agent's credentials (its adapter's `needs`) and every variable whose
    name says it holds a secret (`capeval.core.redact.is_secret_name`) stay out.
    """
    src = os.environ if source is None else source
    held = set(credentials)
    names = [n for n in (*BASE_VARS, *env_pass) if n not in held and not is_secret_name(n)]
    env = passed(src, names)
    env.setdefault("PATH", DEFAULT_PATH)
    env["HOME"] = str(home)
    return env
