"""HAProxy (Debian's `haproxy`) on loopback in front of server processes, hashing each meeting to one of them.

The configuration is the one docs/deploy.md shows: the hash is on the path's first three parts
(`/v1/meetings/<id>`), so a meeting's stream, events and REST calls reach the same process; consistent
hashing moves only a dead process's meetings; a connection refused by a dead process is retried on another
(`redispatch`) before the health check has even noticed, and the checks take a dead process out within a second.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from delegate.server.fleet.haproxy import find_haproxy as find_binary
from delegate.server.fleet.haproxy import haproxy_config, max_connections
from testkit.cluster import LoopbackProcess, free_port


class HAProxyUnavailable(RuntimeError):
    """No HAProxy binary here; the message says what to install."""


def config(port: int, backends: list[tuple[str, int]], maxconn: int | None = None) -> str:
    """docs/deploy.md's configuration on a loopback port (the one `delegate serve --workers` writes)."""
    return haproxy_config("127.0.0.1", port, backends, maxconn or max_connections())


@dataclass
class HAProxy(LoopbackProcess):
    config_path: Path


def find_haproxy() -> str:
    exe = find_binary()
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
