"""HAProxy (Debian's `haproxy`) on loopback in front of server processes, hashing each meeting to one of them.

The configuration is the one docs/deploy.md shows: the hash is on the path's first three parts
(`/v1/meetings/<id>`), so a meeting's stream, events and REST calls reach the same process; consistent
hashing moves only a dead process's meetings; a connection refused by a dead process is retried on another
(`redispatch`) before the health check has even noticed, and the checks take a dead process out within a second.
"""

from __future__ import annotations

import contextlib
import resource
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from testkit.cluster import LoopbackProcess, free_port


class HAProxyUnavailable(RuntimeError):
    """No HAProxy binary here; the message says what to install."""


def max_connections() -> int:
    """As many connections as the open-file limit allows HAProxy (two descriptors each, a few spare)."""
    return max(256, min(20000, resource.getrlimit(resource.RLIMIT_NOFILE)[1] // 2 - 100))


def config(port: int, backends: list[tuple[str, int]], maxconn: int | None = None) -> str:
    maxconn = maxconn or max_connections()
    servers = "\n".join(
        f"    server {name} 127.0.0.1:{backend_port} check" for name, backend_port in backends
    )
    return f"""global
    maxconn {maxconn}

defaults
    mode http
    timeout connect 2s
    # A dead process refuses a check at once; a busy one gets 2 s to answer it, or checks every 500 ms would
    # take a loaded process out, cut all its meetings and pile them onto the other (a cascade, measured).
    timeout check 2s
    timeout client 60s
    timeout server 60s
    # A meeting's WebSocket is idle between utterances: the tunnel timeout, not the client one, applies.
    timeout tunnel 1h
    retries 3
    option redispatch 1

frontend meetings
    bind 127.0.0.1:{port}
    maxconn {maxconn}
    default_backend delegates

backend delegates
    balance uri depth 3
    hash-type consistent
    option httpchk GET /healthz
    http-check expect status 200
    # A dead process is out within a second: checked every 500 ms (250 ms once one check failed), two failures
    # mark it down, and its tunnels are cut at once so their clients reconnect now, not at their next send.
    # (Not `observe layer4 ... mark-down`: a thousand clients connecting at once can time one connection out,
    # and a live process would be taken out for it.)
    default-server inter 500ms fastinter 250ms downinter 1s fall 2 rise 2 on-marked-down shutdown-sessions maxconn {maxconn}
{servers}
"""


@dataclass
class HAProxy(LoopbackProcess):
    config_path: Path


def find_haproxy() -> str:
    exe = shutil.which("haproxy") or next((p for p in ("/usr/sbin/haproxy",) if Path(p).exists()), None)
    if exe is None:
        raise HAProxyUnavailable("no haproxy binary; install Debian's `haproxy`")
    return exe


@contextlib.contextmanager
def haproxy(backends: list[tuple[str, int]], folder: Path) -> Iterator[HAProxy]:
    """HAProxy on a free loopback port in front of `backends` (name, port), until the block ends."""
    exe = find_haproxy()
    port = free_port()
    path = folder / "haproxy.cfg"
    path.write_text(config(port, backends))
    check = subprocess.run([exe, "-c", "-q", "-f", str(path)], capture_output=True, text=True, check=False)
    if check.returncode != 0:
        raise HAProxyUnavailable(f"haproxy refused its configuration: {check.stderr.strip()[-400:]}")
    log = (folder / "haproxy.log").open("wb")
    # -db: in the foreground, so that it is our child and stops with us.
    proc = subprocess.Popen([exe, "-db", "-f", str(path)], stdout=log, stderr=subprocess.STDOUT)
    log.close()
    balancer = HAProxy(proc, port, path)
    try:
        deadline = time.monotonic() + 15
        while True:
            if proc.poll() is not None:
                raise HAProxyUnavailable(f"haproxy exited with {proc.returncode}: {(folder / 'haproxy.log').read_text()[-400:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if time.monotonic() > deadline:
                raise HAProxyUnavailable("haproxy did not accept connections within 15 s")
            time.sleep(0.05)
        yield balancer
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
