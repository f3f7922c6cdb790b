"""Each repeat's evidence, kept beside the row stream so a failed repeat can be debugged.

A repeat's temp directory (workdir and capture directory) is removed when
the repeat ends, and a row only holds a short preview and an error line. A
user whose candidate regressed needs to see exactly what the agent did in
the failing repeat, so the capture directory's files, the grader's output
(`verify.log`) and the normalized turn stream (`summary.json`) are copied to
`<stream stem>.artifacts/<variant>/<case>/<repeat>/` and the row points there.

Three promises shape this module:

* Bounded: each file is cut at `MAX_FILE_BYTES`, each repeat's folder at
  `MAX_REPEAT_BYTES` and the whole run at `MAX_RUN_BYTES` (an
  `ArtifactBudget` its repeats share), so a runaway agent cannot fill the
  disk. A cut file ends with a visible marker; the grader's log and the turn
  stream are kept first; whatever was cut or left out is listed in
  `CUT.txt` in the repeat's folder, with the cap that cut it.
* No secrets: every file, and its name, goes through the same redaction as
  rows. Only the capture directory's top-level regular files are copied: its
  subdirectories are the agents' isolated config homes (`claude-config`,
  `codex-home`), which may hold a login, and symlinks could point anywhere.
* Complete or absent: a repeat's folder is written under a hidden staging
  name and renamed into place, so an interrupted copy never looks finished;
  a re-run repeat (`--resume`) replaces the folder whole.
* One run per folder: a row points at its repeat's folder, so another run
  must not replace it. Before any repeat starts, a run claims each
  `<variant>/<case>/` folder it will write with a `.capeval-run` file (its
  runId and row stream), created exclusively: a later run, or one started at
  the same moment, finds the claim and is refused; `--resume` of the same run
  finds its own. Claims are per cell, not per repeat, because every run of a
  cell writes repeat 0: two runs of one cell always collide.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets as random
import shutil
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from capeval.core.redact import (
    redact,
    redact_data,
    redact_text,
    replace_spans,
    secret_needles,
    secret_spans,
)

ARTIFACTS_SUFFIX = ".artifacts"
MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_REPEAT_BYTES = 50 * 1024 * 1024
MAX_RUN_BYTES = 2 * 1024 * 1024 * 1024
CUT_FILE = "CUT.txt"
SUMMARY_FILE = "summary.json"
VERIFY_LOG = "verify.log"
# A retried repeat's folder keeps each earlier attempt's evidence in `attempt-<n>/`
# and lists every attempt, with its outcome and error, in `attempts.json`.
ATTEMPT_PREFIX = "attempt-"
ATTEMPTS_FILE = "attempts.json"
# Prefix for a capture file whose name collides with one capeval writes.
CAPTURE_PREFIX = "capture-"
_STAGING = ".tmp-"
CUT_NOTE = "capeval cut this repeat's evidence to stay within its caps:\n"
_RETIRED = ".old-"
# In each `<variant>/<case>/` folder: the run it belongs to (see the module docstring).
CLAIM_FILE = ".capeval-run"


def default_artifacts_dir(jsonl: Path) -> Path:
    """`results/<run>.jsonl` keeps its evidence in `results/<run>.artifacts/`."""
    return jsonl.with_name(jsonl.stem + ARTIFACTS_SUFFIX)


def path_component(text: str) -> str:
    """A file name for an id: percent-encoded, so `a:b` and `a/b` stay distinct and reversible."""
    name = quote(text, safe="")
    if name.startswith("."):  # `.`, `..` and hidden names
        name = "%2E" + name[1:]
    return name or "_"


def repeat_dir(root: Path, variant_id: str, case_id: str, repeat: int) -> Path:
    return root / path_component(variant_id) / path_component(case_id) / str(int(repeat))


def relative_to_rows(path: Path, rows_dir: Path) -> str:
    """The path a row stores: relative to the stream's folder, so results can be moved."""
    return Path(os.path.relpath(path, rows_dir)).as_posix()


def truncation_marker(kept: int, size: int) -> bytes:
    return f"\n[capeval: truncated, kept the first {kept} of {size} bytes]\n".encode()


def redact_bytes(data: bytes, secrets: Sequence[str]) -> bytes:
    """Row redaction on raw bytes; bytes that are not UTF-8 pass through unchanged."""
    return redact_data(data, secret_needles(secrets))


def safe_cut(data: bytes, limit: int, secrets: Sequence[str]) -> int:
    """A cut at or before `limit` that splits no secret, so no part of one is kept.

    `data` must extend at least the longest secret past `limit` (when it is
    longer than `limit`) for every straddling secret to be seen.
    """
    return _cut(min(limit, len(data)), secret_spans(data, secret_needles(secrets)))


def _cut(limit: int, spans: Sequence[tuple[int, int]]) -> int:
    # Spans are merged: at most one holds the cut, and moving to its start clears all.
    for start, end in spans:
        if start < limit < end:
            return start
    return limit


def capped(data: bytes, size: int, secrets: Sequence[str], max_bytes: int) -> bytes:
    """`data` (the head of a `size`-byte file) redacted and cut at `max_bytes` with a marker."""
    spans = secret_spans(data, secret_needles(secrets))
    if size <= max_bytes and len(data) >= size:
        return replace_spans(data, spans)
    cut = _cut(min(max_bytes, len(data)), spans)
    kept = replace_spans(data[:cut], [s for s in spans if s[1] <= cut])
    return kept + truncation_marker(cut, size)


def _lookahead(secrets: Sequence[str]) -> int:
    """The longest form of a secret, in bytes: how far past a cut one can reach."""
    return max((len(n) for n in secret_needles(secrets)), default=0)


def copy_capped(src: Path, dst: Path, secrets: Sequence[str], max_bytes: int) -> bool:
    """Copy one file redacted and capped; True when it was truncated.

    Reads at most `max_bytes` plus the longest secret, never the whole of a
    runaway file. A symlink put in place after the listing is not followed.
    """
    fd = os.open(src, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with open(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        head = handle.read(max_bytes + _lookahead(secrets))
        size = max(size, len(head))  # a file still growing
    dst.write_bytes(capped(head, size, secrets, max_bytes))
    return size > max_bytes


class ArtifactBudget:
    """The bytes a run may still keep as evidence, shared by its repeats' threads."""

    def __init__(self, total: int = MAX_RUN_BYTES) -> None:
        self.left = total
        self._lock = threading.Lock()

    def take(self, wanted: int) -> int:
        """Grant up to `wanted` bytes (0 once the run's cap is spent)."""
        with self._lock:
            granted = max(0, min(wanted, self.left))
            self.left -= granted
            return granted


@dataclass
class _Allowance:
    """How much more one repeat may keep, and what was cut on the way."""

    per_file: int
    left: int
    budget: ArtifactBudget | None
    cuts: list[str] = field(default_factory=list)

    def grant(self, name: str, size: int) -> int:
        want = min(size, self.per_file, self.left)
        granted = want if self.budget is None else self.budget.take(want)
        if granted < size:
            if granted < want:
                cap = "the run's cap"
            elif want == self.per_file:
                cap = f"the cap of {self.per_file} bytes per file"
            else:
                cap = "the repeat's cap"
            kept = f"kept the first {granted}" if granted else "left out"
            self.cuts.append(f"{name}: {size} bytes, {kept} ({cap})")
        self.left -= granted
        return granted


def run_budget(artifacts_dir: Path, total: int = MAX_RUN_BYTES) -> ArtifactBudget:
    """The run's budget, less what its folder already holds (a resumed run keeps its cap)."""
    held = 0
    if artifacts_dir.is_dir():
        for folder, _dirs, files in os.walk(artifacts_dir):
            for name in files:
                with contextlib.suppress(OSError):
                    held += os.lstat(os.path.join(folder, name)).st_size
    return ArtifactBudget(total - held)


def verify_log(
    command: Sequence[str], exit_code: int | None, duration_ms: float | None, out: bytes, err: bytes
) -> bytes:
    """The grader's output as one readable file: what ran, how it ended, stdout, stderr."""
    took = "" if duration_ms is None else f" after {duration_ms:.0f} ms"
    head = f"$ {' '.join(command)}\n# exit code {exit_code}{took}\n"
    return b"".join([head.encode(), b"--- stdout ---\n", out, b"\n--- stderr ---\n", err, b"\n"])


def capture_files(capture_dir: Path | None) -> list[Path]:
    """The capture directory's top-level regular files (see the module docstring)."""
    if capture_dir is None or not capture_dir.is_dir():
        return []
    return sorted(p for p in capture_dir.iterdir() if p.is_file() and not p.is_symlink())


def save_repeat_artifacts(
    dest: Path,
    *,
    capture_dir: Path | None = None,
    verify: bytes | None = None,
    summary: Mapping[str, Any] | None = None,
    secrets: Sequence[str] = (),
    max_bytes: int = MAX_FILE_BYTES,
    max_total: int = MAX_REPEAT_BYTES,
    budget: ArtifactBudget | None = None,
    earlier: int | None = None,
) -> Path:
    """Write one repeat's evidence to `dest`, atomically replacing what was there.

    `verify` is the grader's log (see `verify_log`) and `summary` the run
    summary as JSON; both are redacted and capped like the capture files,
    and kept before them when the repeat's or the run's cap is near.
    `earlier`: what `dest` holds is attempt `earlier` of this same repeat (a
    retry, or a `--retry-errors` resume): it is kept inside the new folder as
    `attempt-<earlier>/`, with the attempts kept before it, instead of replaced.
    """
    allowance = _Allowance(max_bytes, max_total, budget)
    dest = Path(dest)
    with _staged(dest) as staging:
        ours = {VERIFY_LOG, SUMMARY_FILE, CUT_FILE}
        if verify is not None:
            size = len(verify)
            keep = allowance.grant(VERIFY_LOG, size)
            (staging / VERIFY_LOG).write_bytes(capped(verify, size, secrets, keep))
        if summary is not None:
            text = json.dumps(redact(summary, secrets), indent=2, ensure_ascii=False) + "\n"
            data = text.encode("utf-8")
            keep = allowance.grant(SUMMARY_FILE, len(data))
            (staging / SUMMARY_FILE).write_bytes(capped(data, len(data), (), keep))
        for src in capture_files(capture_dir):
            name = redact_text(src.name, secrets)  # a name is free text too
            name = CAPTURE_PREFIX + name if name in ours else name
            try:
                keep = allowance.grant(name, src.lstat().st_size)
                if keep:
                    copy_capped(src, staging / name, secrets, keep)
            except OSError as exc:  # turned into a symlink or removed since the listing
                if exc.errno not in (errno.ELOOP, errno.ENOENT):
                    raise
        if allowance.cuts:
            (staging / CUT_FILE).write_text(CUT_NOTE + "\n".join(allowance.cuts) + "\n")
        if earlier is not None:
            _keep_earlier(dest, staging, earlier)
    return dest


def repeat_files(folder: Path) -> dict[str, bytes]:
    """A repeat's evidence folder as {file name: bytes} (it is flat), to travel elsewhere."""
    return {
        p.name: p.read_bytes()
        for p in sorted(folder.iterdir())
        if p.is_file() and not p.is_symlink()
    }


def receive_repeat_artifacts(
    dest: Path, files: Mapping[str, bytes], budget: ArtifactBudget | None = None
) -> Path:
    """A repeat's evidence kept elsewhere (by `save_repeat_artifacts` on a Ray worker,
    so already redacted and within the file and repeat caps) written to `dest` as it
    writes: atomically, and within what the run may still keep."""
    dest = Path(dest)
    with _staged(dest) as staging:
        cuts: list[str] = []
        for name, data in sorted(files.items()):
            if not name or name in (".", "..") or "/" in name or "\0" in name:
                continue  # a flat folder of plain names is all a worker sends
            keep = len(data) if budget is None else budget.take(len(data))
            if keep < len(data):
                kept = f"kept the first {keep}" if keep else "left out"
                cuts.append(f"{name}: {len(data)} bytes, {kept} (the run's cap)")
            if keep or not data:
                (staging / name).write_bytes(capped(data, len(data), (), keep))
        if cuts:
            text = files.get(CUT_FILE, b"").decode("utf-8", "replace") or CUT_NOTE
            (staging / CUT_FILE).write_text(text + "\n".join(cuts) + "\n")
    return dest


def _keep_earlier(dest: Path, staging: Path, attempt: int) -> None:
    """Move the earlier attempts' evidence from `dest` into the new folder: its own
    `attempt-*` folders as they are, the rest as `attempt-<attempt>/`."""
    if not dest.is_dir():
        return  # that attempt kept none (its copy failed)
    for kept in sorted(dest.glob(f"{ATTEMPT_PREFIX}*")):
        if kept.is_dir() and not kept.is_symlink():
            os.rename(kept, staging / kept.name)
    target = staging / f"{ATTEMPT_PREFIX}{attempt}"
    if not target.exists():
        os.rename(dest, target)


def write_attempts(dest: Path, attempts: Sequence[Mapping[str, Any]]) -> None:
    """`attempts.json` in a repeat's folder: each attempt's outcome and error, in order
    (the records come from redacted rows)."""
    text = json.dumps(list(attempts), indent=2, ensure_ascii=False) + "\n"
    tmp = dest / f".{ATTEMPTS_FILE}{_STAGING}{random.token_hex(4)}"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, dest / ATTEMPTS_FILE)


@contextlib.contextmanager
def _staged(dest: Path) -> Iterator[Path]:
    """A fresh folder beside `dest` to fill; it replaces `dest` when the block ends
    well, and is removed when it does not (no half-written evidence is ever seen)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(dest)
    staging = dest.with_name(f".{dest.name}{_STAGING}{random.token_hex(4)}")
    staging.mkdir()
    try:
        yield staging
        _publish(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _publish(staging: Path, dest: Path) -> None:
    """Rename the finished folder into place; an older one is moved aside, then removed."""
    retired: Path | None = None
    if dest.exists():
        retired = dest.with_name(f".{dest.name}{_RETIRED}{random.token_hex(4)}")
        os.rename(dest, retired)
    os.rename(staging, dest)
    if retired is not None:
        shutil.rmtree(retired, ignore_errors=True)


def stale_siblings(dest: Path) -> Iterable[Path]:
    """Staging or retired folders of `dest` left by a run that was killed mid-copy."""
    for marker in (_STAGING, _RETIRED):
        yield from dest.parent.glob(f".{dest.name}{marker}*")


def remove_stale(dest: Path) -> None:
    for path in list(stale_siblings(dest)):
        shutil.rmtree(path, ignore_errors=True)


# -- which run a cell's folder belongs to -----------------------------------------


@dataclass(frozen=True)
class Taken:
    """A cell folder a run would write that belongs to another run."""

    folder: Path
    run_id: str | None  # None: no run recorded itself (an older capeval, or by hand)
    rows: Path | None  # that run's row stream, when it recorded one

    def of_stream(self, rows: Path) -> bool:
        """Whether the other run wrote the row stream `rows`."""
        return self.rows is not None and self.rows.resolve() == Path(rows).resolve()


class ArtifactsTaken(Exception):
    """Some folder the run would write holds, or awaits, another run's evidence."""

    def __init__(self, taken: Sequence[Taken]) -> None:
        super().__init__(", ".join(str(t.folder) for t in taken))
        self.taken = list(taken)


def cell_dir(root: Path, variant_id: str, case_id: str) -> Path:
    return root / path_component(variant_id) / path_component(case_id)


def read_claim(folder: Path) -> dict[str, Any] | None:
    """The claim of a cell folder, or None when nothing claims it.

    A claim that cannot be read or parsed (a run caught between creating
    and filling it) is `{}`: some run's, but not known whose.
    """
    try:
        text = (folder / CLAIM_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _taken(folder: Path, claim: Mapping[str, Any]) -> Taken:
    run_id, rows = claim.get("runId"), claim.get("rows")
    return Taken(
        folder,
        run_id if isinstance(run_id, str) and run_id else None,
        Path(os.path.normpath(folder / rows)) if isinstance(rows, str) and rows else None,
    )


def _holds_repeats(folder: Path, repeats: Iterable[int]) -> bool:
    if not folder.is_dir():
        return False
    return any((folder / str(int(r))).exists() for r in repeats)


def _holds_evidence(folder: Path) -> bool:
    """Any repeat's folder (hidden names are staging left by a killed copy, or the claim)."""
    return any(not p.name.startswith(".") for p in folder.iterdir())


def taken_by_others(
    root: Path, cells: Mapping[tuple[str, str], Iterable[int]], run_id: str
) -> list[Taken]:
    """The cell folders among `cells` ((variant, case) -> repeats to write) that are
    not `run_id`'s: claimed by another run, or unclaimed but already holding one of
    those repeats. Reads only (a dry run asks too); `claim_cells` decides."""
    taken: list[Taken] = []
    for (variant_id, case_id), repeats in sorted(cells.items()):
        folder = cell_dir(root, variant_id, case_id)
        claim = read_claim(folder)
        if claim is None:
            if _holds_repeats(folder, repeats):
                taken.append(Taken(folder, None, None))
        elif claim.get("runId") != run_id:
            taken.append(_taken(folder, claim))
    return taken


def claim_cells(
    root: Path,
    cells: Mapping[tuple[str, str], Iterable[int]],
    run_id: str,
    rows: Path,
    *,
    stream_locked: bool = False,
) -> list[Path]:
    """Claim every cell folder the run will write, or none (raises `ArtifactsTaken`).

    The claim file is created exclusively (O_EXCL), so of two runs started at
    once on one folder exactly one gets each cell; cells are claimed in one
    order, so the first shared cell decides. Returns the claims made now (a
    resumed run keeps the ones it made before), for `release_claims` should
    the run fail before it starts.

    `stream_locked`: the caller holds `rows`' lock and the stream holds no row
    of any other run, so a claim by another run of the same stream that kept
    no evidence (stopped before its first repeat ended) is taken over. One
    that kept some is refused: its rows may live on under another name.
    """
    made: list[Path] = []
    taken: list[Taken] = []
    adopted: list[Path] = []
    try:
        for (variant_id, case_id), repeats in sorted(cells.items()):
            folder = cell_dir(root, variant_id, case_id)
            folder.mkdir(parents=True, exist_ok=True)
            claim = _claim(folder, run_id, rows)
            if claim is None:
                made.append(folder / CLAIM_FILE)
                if _holds_repeats(folder, repeats):  # evidence from before claims were kept
                    taken.append(Taken(folder, None, None))
            elif claim.get("runId") != run_id:
                other = _taken(folder, claim)
                if stream_locked and other.of_stream(rows) and not _holds_evidence(folder):
                    adopted.append(folder)
                else:
                    taken.append(other)
        if taken:
            raise ArtifactsTaken(taken)
        for folder in adopted:
            tmp = folder / f"{CLAIM_FILE}{_STAGING}{random.token_hex(4)}"
            tmp.write_text(_claim_text(folder, run_id, rows), encoding="utf-8")
            os.replace(tmp, folder / CLAIM_FILE)
    except BaseException:
        release_claims(made)
        raise
    return made


def _claim_text(folder: Path, run_id: str, rows: Path) -> str:
    stream = Path(os.path.relpath(Path(rows).resolve(), folder.resolve())).as_posix()
    return json.dumps({"runId": run_id, "rows": stream}) + "\n"


def _claim(folder: Path, run_id: str, rows: Path) -> dict[str, Any] | None:
    """None when this call claimed `folder`, else the claim that was there."""
    path = folder / CLAIM_FILE
    for _ in range(3):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            claim = read_claim(folder)
            if claim is not None:
                return claim
            continue  # given back since: try again
        try:
            with open(fd, "w", encoding="utf-8") as handle:
                handle.write(_claim_text(folder, run_id, rows))
        except BaseException:  # a full disk: an empty claim would block every later run
            path.unlink(missing_ok=True)
            raise
        return None
    return {}  # there, yet never readable (a dangling symlink): not known whose


def release_claims(claims: Iterable[Path]) -> None:
    """Give back claims of a run that never started, so running it again is not refused."""
    for path in claims:
        path.unlink(missing_ok=True)
        for folder in (path.parent, path.parent.parent):  # made for the claim alone
            try:
                folder.rmdir()
            except OSError:  # holds something: not ours to remove
                break
