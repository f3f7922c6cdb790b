"""The HTTP fixture inside a sandbox with a network of its own (docs/isolation.md#http-fixture).

With `network = "none"` (and Docker's `bridge`) the sandbox has its own
loopback, where nothing listens on the fixture's port. The fixture then also
serves on a Unix socket in the repeat's folder, bound into the sandbox, and
the sandboxed command is started by `FORWARDER`: a few lines of standard
library Python that listen on the sandbox's `127.0.0.1:<port>` (the very
URL the prompt and `EVAL_HTTP_URL` give), relay each connection to the
socket, start the command once the port is open, pass it the signals they
get, and exit with its exit code. Nothing else is reachable: the socket
answers only the fixture's pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Where the fixture's socket is bound inside a sandbox: a short path (a Unix
# socket's path is at most 107 bytes), on the sandbox's own /tmp.
INSIDE = "/tmp/capeval-http.sock"


@dataclass(frozen=True)
class HttpBridge:
    """The fixture's Unix socket on the host (bound at `INSIDE`) and its loopback port."""

    socket: Path
    port: int


# Run as `python3 -I -c FORWARDER PORT SOCKET -- ARGV...`; Python 3.6+, stdlib only.
FORWARDER = r"""
import signal, socket, subprocess, sys, threading
port, path, argv = int(sys.argv[1]), sys.argv[2], sys.argv[4:]
server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port))
server.listen(64)

def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass

def serve(conn):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        conn.close()
        return
    back = threading.Thread(target=pump, args=(upstream, conn), daemon=True)
    back.start()
    pump(conn, upstream)
    back.join()
    conn.close()
    upstream.close()

def accept():
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        threading.Thread(target=serve, args=(conn,), daemon=True).start()

try:
    child = subprocess.Popen(argv, process_group=0)
except TypeError:
    import os
    child = subprocess.Popen(argv, preexec_fn=os.setpgrp)
except OSError as exc:
    sys.stderr.write("capeval http bridge: cannot start %s: %s\n" % (argv[0], exc))
    sys.exit(127)
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, lambda num, frame: child.send_signal(num))
threading.Thread(target=accept, daemon=True).start()
code = child.wait()
sys.exit(code if code >= 0 else 128 - code)
"""


def bridged(python: list[str], bridge: HttpBridge, argv: list[str]) -> list[str]:
    """`argv` started behind the forwarder."""
    return [*python, "-I", "-c", FORWARDER, str(bridge.port), INSIDE, "--", *argv]
