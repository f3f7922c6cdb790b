"""`capeval doctor`: which sandboxes work on this host, and what one of them really blocks.

First each backend is checked with the real tool (bwrap with the namespaces a
repeat uses, the Docker CLI against its daemon, the image), and for bwrap
each resource limit. Then, unless `--no-probe`, one sandboxed repeat of the
built-in escape probe runs per backend asked for (`capeval.runner.probe`),
and each escape it tried is reported blocked or OPEN.

Exit codes: 0 every backend asked for works and its probe was blocked
everywhere; 1 a backend asked for does not work here, or an escape was open;
2 bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from capeval.commands.common import config_option, fail, root_option

SANDBOXES = ("bwrap", "docker")


@click.command()
@root_option
@config_option
@click.option(
    "--backend",
    "backends",
    type=click.Choice(["bwrap", "docker", "all"]),
    multiple=True,
    help="Probe this backend (repeatable; default: the configured one when it is a sandbox, "
    "else every one that works here).",
)
@click.option(
    "--image",
    help="Docker image for the docker probe (default: the configuration's `image`).",
)
@click.option(
    "--network",
    type=click.Choice(["none", "shared"]),
    default="none",
    show_default=True,
    help="The probe's network: none also checks that the host's loopback is out of reach.",
)
@click.option("--no-probe", is_flag=True, help="Only say which backends work; run no probe.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object for machines.")
def doctor(
    root: Path | None,
    config_path: Path | None,
    backends: tuple[str, ...],
    image: str | None,
    network: str,
    no_probe: bool,
    as_json: bool,
) -> None:
    """Say which sandboxes work here, then try every escape in one sandboxed repeat."""
    from capeval.isolation.host import backend_status, bwrap_limits, image_status

    configured_backend, configured_image = _configured(root, config_path)
    image = image or configured_image
    statuses = {name: backend_status(name) for name in ("none", *SANDBOXES)}
    wanted = _wanted(backends, configured_backend, statuses)
    limits = bwrap_limits() if statuses["bwrap"].ok else {}
    doc: dict[str, Any] = {
        "backends": [s.to_json() for s in statuses.values()],
        "bwrapLimits": limits,
        "image": None,
        "probes": [],
    }
    problems: list[str] = []
    if "docker" in wanted and statuses["docker"].ok:
        if image is None:
            problems.append(
                "docker: no image to probe: pass --image, or set image = ... in capeval.toml"
            )
        else:
            found = image_status(image)
            doc["image"] = found.to_json()
            if not found.ok:
                problems.append(f"docker: {found.detail}")
    for name in wanted:
        if not statuses[name].ok:
            problems.append(f"{name}: {statuses[name].detail}")
    if not no_probe:
        for name in wanted:
            if not statuses[name].ok or (name == "docker" and doc["image"] is None):
                continue
            if name == "docker" and not doc["image"]["ok"]:
                continue
            doc["probes"].append(_probe(name, image, network, limits))
    ok = not problems and all(p["ok"] for p in doc["probes"])
    doc["ok"] = ok
    doc["problems"] = problems
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(_text(doc, wanted))
    click.get_current_context().exit(0 if ok else 1)


def _configured(root: Path | None, config_path: Path | None) -> tuple[str | None, str | None]:
    """The configuration's isolation backend and image; none outside a workspace."""
    from capeval.config import load_config
    from capeval.core.problems import ProblemsError
    from capeval.workspace import find_root

    try:
        found = find_root(explicit=root)
    except ProblemsError as exc:
        if root is not None or config_path is not None:
            fail("doctor", "; ".join(str(p) for p in exc.problems))
        return None, None  # run from outside any workspace: nothing configured
    try:
        config = load_config(found, config_path)
    except ProblemsError as exc:
        fail("doctor", "; ".join(str(p) for p in exc.problems))
    return config.sandbox.get("isolation"), config.sandbox.get("image")


def _wanted(backends: tuple[str, ...], configured: str | None, statuses: dict) -> list[str]:
    if "all" in backends:
        return list(SANDBOXES)
    if backends:
        return list(dict.fromkeys(backends))
    if configured in SANDBOXES:
        return [str(configured)]
    return [name for name in SANDBOXES if statuses[name].ok]


def _probe(backend: str, image: str | None, network: str, support: dict) -> dict[str, Any]:
    from capeval.core.isolation import Limits
    from capeval.runner.probe import PROBE_LIMITS, run_probe

    limits = PROBE_LIMITS
    note = None
    if backend == "bwrap":
        # Only the limits this host enforces: the others are reported as not tried.
        kept = {k: v for k, v in vars(PROBE_LIMITS).items() if not support.get(k)}
        limits = Limits(**kept)
        refused = sorted(
            k for k in vars(PROBE_LIMITS) if getattr(PROBE_LIMITS, k) and support.get(k)
        )
        if refused:
            note = f"limits not enforced here, not probed: {', '.join(refused)}"
    report = run_probe(backend, image=image, network=network, limits=limits, handle_signals=True)
    out = report.to_json()
    out["network"] = network
    out["limits"] = limits.to_json()
    out["note"] = note
    return out


def _text(doc: dict[str, Any], wanted: list[str]) -> str:
    lines = ["backends on this host:"]
    for status in doc["backends"]:
        mark = "ok  " if status["ok"] else "FAIL"
        lines.append(f"  {mark}  {status['name']:<7} {status['detail']}")
    if doc["bwrapLimits"]:
        for key, why in doc["bwrapLimits"].items():
            lines.append(f"        bwrap limits.{key}: {'ok' if why is None else why}")
    if doc["image"] is not None:
        image = doc["image"]
        lines.append(f"  {'ok  ' if image['ok'] else 'FAIL'}  {image['name']}: {image['detail']}")
    for probe in doc["probes"]:
        limits = ", ".join(f"{k} {v}" for k, v in probe["limits"].items()) or "none"
        lines.append(f"probe in {probe['backend']} (network {probe['network']}, limits {limits}):")
        if probe["error"]:
            lines.append(f"  the run stopped: {probe['error']}")
        for escape in probe["escapes"]:
            mark = {True: "blocked", False: "OPEN   ", None: "-      "}[escape["blocked"]]
            lines.append(f"  {mark}  {escape['escape']}: {escape['detail']}")
        if probe["note"]:
            lines.append(f"  note: {probe['note']}")
    for problem in doc["problems"]:
        lines.append(f"problem: {problem}")
    if not wanted:
        lines.append("no sandbox works here: install bubblewrap, or start a Docker daemon")
    lines.append(f"=> {'ok' if doc['ok'] else 'NOT OK'}")
    return "\n".join(lines)
