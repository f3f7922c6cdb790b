"""bubblewrap, a private Docker daemon and an offline test image, for the sandbox tests.

`.ci/run` calls, in order:

    python3 tests/sandbox_host.py install        # apt-get install bubblewrap docker.io (root)
    eval "$(python3 tests/sandbox_host.py start)"  # a private dockerd; exports DOCKER_HOST
    python3 tests/sandbox_host.py image          # the test image, built once and kept
    python3 tests/sandbox_host.py stop           # at the end: that dockerd, by its pid file

The daemon runs with its own data root (kept in the cache, so the image
survives between runs), exec root, pid file and socket, the `vfs` storage
driver, no iptables and no bridge: it changes nothing else on the machine.
No registry is needed: the image is a root filesystem made from this host's
own Debian packages (bash, coreutils, git, Python 3, Node.js, ...), their
shared libraries found with `ldd`, and `docker import`ed under a tag that
names its content, so it is built again only when the host's packages change.

Stdlib only and no capeval import, like tests/system_tools.py.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
APT_PACKAGES = ("bubblewrap", "docker.io")
# What the image holds: enough for graders, the scripted player, git and the agent CLIs.
IMAGE_PACKAGES = (
    "libc6",  # all of glibc: a native agent CLI (Claude Code) loads librt and more
    "libgcc-s1",
    "libstdc++6",
    "bash",
    "dash",
    "coreutils",
    "sed",
    "grep",
    "mawk",
    "findutils",
    "util-linux",
    "mount",
    "procps",
    "diffutils",
    "git",
    "curl",
    "python3-minimal",
    "python3.11-minimal",
    "libpython3.11-minimal",
    "libpython3.11-stdlib",
    "nodejs",
)
SKIPPED_PREFIXES = ("/usr/share/doc", "/usr/share/man", "/usr/share/info", "/usr/share/locale")
IMAGE_REPO = "capeval-sandbox-test"
START_TIMEOUT_S = 60.0


def cache_dir() -> Path:
    return Path(os.environ.get("CAPEVAL_SANDBOX_CACHE") or REPO / ".cache" / "sandbox")


def runtime_dir() -> Path:
    """Short paths for the daemon's sockets (a Unix socket path is at most 107 bytes)."""
    digest = hashlib.sha256(str(cache_dir()).encode()).hexdigest()[:10]
    return Path(tempfile.gettempdir() if len(tempfile.gettempdir()) < 30 else "/tmp") / (
        f"capeval-dockerd-{digest}"
    )


def socket_path() -> Path:
    return runtime_dir() / "docker.sock"


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, **kwargs
    )


# --- bwrap -------------------------------------------------------------------


def bwrap_reason() -> str | None:
    """None when bwrap runs here with the namespaces capeval uses; else why not."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bwrap not installed (apt-get install bubblewrap; .ci/run installs it)"
    probe = [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
             "--unshare-net", "--die-with-parent", "--", "true"]  # fmt: skip
    try:
        done = _run(probe, env={}, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap does not run here: {exc}"
    if done.returncode != 0:
        return f"bwrap cannot make namespaces here: {done.stderr.strip()[-200:]}"
    return None


# --- docker ------------------------------------------------------------------


def docker_reason() -> str | None:
    """None when a Docker daemon answers at DOCKER_HOST (or the default); else why not."""
    if shutil.which("docker") is None:
        return "docker CLI not installed (apt-get install docker.io; .ci/run installs it)"
    try:
        done = _run(["docker", "version", "--format", "{{.Server.Version}}"], timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"docker does not run: {exc}"
    if done.returncode != 0 or not done.stdout.strip():
        where = os.environ.get("DOCKER_HOST") or "the default socket"
        said = (done.stderr.strip().splitlines() or ["no answer"])[-1]
        return (
            f"no Docker daemon at {where} ({said}); start one with "
            '`eval "$(python3 tests/sandbox_host.py start)"` (.ci/run does)'
        )
    return None


def start() -> str:
    """Start the private dockerd unless it runs; the `export DOCKER_HOST=...` line.

    overlay2 first (a container starts in a fraction of a second), vfs where
    the kernel or the backing filesystem refuses overlays (a full copy of
    the image per container: seconds each).
    """
    sock = socket_path()
    host = f"unix://{sock}"
    os.environ["DOCKER_HOST"] = host
    if docker_reason() is None:
        return f"export DOCKER_HOST={host}"
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise SystemExit("dockerd not installed (apt-get install docker.io)")
    run = runtime_dir()
    run.mkdir(parents=True, exist_ok=True)
    for driver in ("overlay2", "vfs"):
        data = cache_dir() / f"dockerd-{driver}"
        data.mkdir(parents=True, exist_ok=True)
        with open(run / "dockerd.log", "ab") as log:
            daemon = subprocess.Popen(
                [dockerd, "--data-root", str(data), "--exec-root", str(run / "exec"),
                 "--pidfile", str(run / "dockerd.pid"), "-H", host,
                 f"--storage-driver={driver}", "--iptables=false", "--ip-masq=false",
                 "--bridge=none"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and daemon.poll() is None:
            if docker_reason() is None:
                return f"export DOCKER_HOST={host}"
            time.sleep(0.5)
        if daemon.poll() is None:
            daemon.terminate()
            daemon.wait(30)
    raise SystemExit(f"dockerd did not start; see {run}/dockerd.log")


def stop() -> None:
    """Stop the private dockerd (the pid its pid file names), and wait for it."""
    pidfile = runtime_dir() / "dockerd.pid"
    try:
        pid = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, 15)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.2)
    if not Path(f"/proc/{pid}").exists():
        _remove_runtime_dir(runtime_dir())


def _remove_runtime_dir(folder: Path) -> None:
    """Remove the stopped daemon's runtime folder, which it leaves a network namespace
    mounted in: unmount what is mounted below this folder (ours alone), then delete it."""
    prefix = str(folder) + "/"
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        points = [line.split()[1] for line in mounts if line.split()[1].startswith(prefix)]
    for point in sorted(points, key=len, reverse=True):
        _run(["umount", point])
    shutil.rmtree(folder, ignore_errors=True)


# --- the image -----------------------------------------------------------------


def _package_files() -> list[str]:
    files: list[str] = []
    for package in IMAGE_PACKAGES:
        done = _run(["dpkg", "-L", package])
        if done.returncode != 0:
            raise SystemExit(f"package {package} is not installed here: {done.stderr.strip()}")
        files += done.stdout.splitlines()
    return files


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def _libraries(paths: list[str]) -> set[str]:
    found: set[str] = set()
    elves = [p for p in paths if os.path.isfile(p) and not os.path.islink(p) and _is_elf(p)]
    for chunk in range(0, len(elves), 200):
        done = _run(["ldd", *elves[chunk : chunk + 200]])
        for line in done.stdout.splitlines():
            for word in line.split():
                if word.startswith("/") and os.path.exists(word):
                    found.add(_canonical(word))
                    found.add(os.path.realpath(word))
    return found


def _canonical(path: str) -> str:
    """The path through no linked folder (/bin/bash -> /usr/bin/bash on a merged /usr)."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def image_files() -> list[str]:
    files = {
        _canonical(f)
        for f in _package_files()
        if not f.startswith(SKIPPED_PREFIXES) and os.path.lexists(f) and not os.path.isdir(f)
    }
    libs = _libraries(sorted(files))
    files |= libs | _libraries(sorted(libs))
    files |= {_canonical("/lib64/ld-linux-x86-64.so.2"), "/etc/ld.so.cache", "/etc/nsswitch.conf"}
    # Debian's alternatives (`awk` -> mawk): the command's link, and the alternatives link.
    for folder in ("/usr/bin", "/usr/sbin"):
        for name in os.listdir(folder):
            link = f"{folder}/{name}"
            target = os.readlink(link) if os.path.islink(link) else ""
            if target.startswith("/etc/alternatives/") and os.path.realpath(link) in files:
                files |= {link, target}
    # A link's target goes in too.
    for path in list(files):
        if os.path.islink(path):
            files.add(os.path.realpath(path))
    return sorted(f for f in files if os.path.lexists(f))


def image_tag(files: list[str]) -> str:
    digest = hashlib.sha256()
    for path in files:
        st = os.lstat(path)
        digest.update(f"{path}\0{st.st_size}\0{int(st.st_mtime)}\n".encode())
    return f"{IMAGE_REPO}:{digest.hexdigest()[:12]}"


def _add_text(tar: tarfile.TarFile, name: str, text: str, mode: int = 0o644) -> None:
    data = text.encode()
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    tar.addfile(info, io.BytesIO(data))


def _add_dir(tar: tarfile.TarFile, name: str, mode: int = 0o755) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, mode
    tar.addfile(info)


def build_rootfs(files: list[str], out: Path) -> None:
    made: set[str] = set()

    def folder(tar: tarfile.TarFile, path: str, mode: int = 0o755) -> None:
        if path in ("/", "") or path in made:
            return
        folder(tar, os.path.dirname(path))
        made.add(path)
        _add_dir(tar, path.lstrip("/"), mode)

    with tarfile.open(out, "w") as tar:
        for top in ("bin", "lib", "lib64", "sbin"):
            info = tarfile.TarInfo(top)
            info.type, info.linkname = tarfile.SYMTYPE, f"usr/{top}"
            tar.addfile(info)
            made.add(f"/{top}")
        for path, mode in (("/tmp", 0o1777), ("/root", 0o700), ("/home", 0o755),
                           ("/run", 0o755), ("/proc", 0o555), ("/sys", 0o555),
                           ("/dev", 0o755), ("/etc", 0o755), ("/var/tmp", 0o1777),
                           ("/usr/local/bin", 0o755)):  # fmt: skip
            folder(tar, path, mode)
        for path in files:
            if path in ("/etc/passwd", "/etc/group", "/etc/hosts"):
                continue
            folder(tar, os.path.dirname(path))
            tar.add(path, arcname=path.lstrip("/"), recursive=False)
        _add_text(tar, "etc/passwd", "root:x:0:0:root:/root:/bin/bash\n")
        _add_text(tar, "etc/group", "root:x:0:\n")
        _add_text(tar, "etc/hosts", "127.0.0.1 localhost\n")


def image() -> str:
    """The test image's tag, built and imported unless the daemon has it."""
    files = image_files()
    tag = image_tag(files)
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / "image.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time (pytest -n)
        if _run(["docker", "image", "inspect", tag]).returncode == 0:
            return tag
        with tempfile.TemporaryDirectory(prefix="capeval-rootfs-") as tmp:
            tarball = Path(tmp) / "rootfs.tar"
            build_rootfs(files, tarball)
            done = _run(["docker", "import", "--change", "ENV PATH=/usr/local/bin:/usr/bin:/bin",
                         str(tarball), tag], timeout=900)  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"docker import failed: {done.stderr.strip()}")
        # Older builds (the host's packages changed since) only take up space.
        listed = _run(["docker", "images", IMAGE_REPO, "--format", "{{.Repository}}:{{.Tag}}"])
        old = [t for t in listed.stdout.split() if t != tag]
        if old:
            _run(["docker", "rmi", *old])
    return tag


def install() -> None:
    """apt-get install what is missing (as root); otherwise say what to install."""
    missing = [p for p, exe in zip(APT_PACKAGES, ("bwrap", "dockerd"), strict=True)
               if shutil.which(exe) is None]  # fmt: skip
    if not missing:
        return
    if os.geteuid() != 0:
        raise SystemExit(f"not root: install {' '.join(missing)} to run the sandbox tests")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update"], ["apt-get", "install", "-y", *missing]):
        done = _run(argv, env=env, timeout=900)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip()[-500:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("install", "start", "stop", "image", "reasons"))
    ns = parser.parse_args(argv)
    if ns.command == "install":
        install()
    elif ns.command == "start":
        print(start())
    elif ns.command == "stop":
        stop()
    elif ns.command == "image":
        print(image())
    else:
        print(f"bwrap: {bwrap_reason() or 'ok'}\ndocker: {docker_reason() or 'ok'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
