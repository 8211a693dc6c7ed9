"""HAProxy in front of server processes: docs/deploy.md's configuration, each meeting hashed to one process by its id.

The hash is on the path's first three parts (`/v1/meetings/<id>`), so a meeting's stream, events and REST calls
reach the same process; consistent hashing moves only a dead process's meetings; a connection refused by a dead
process is retried on another (`redispatch`), and the checks take a dead process out within a second.
"""

from __future__ import annotations

import resource
import shutil
from pathlib import Path


def haproxy_config(host: str, port: int, backends: list[tuple[str, int]], maxconn: int) -> str:
    """docs/deploy.md's HAProxy configuration, in front of workers on loopback `backends` (name, port)."""
    servers = "\n".join(f"    server {name} 127.0.0.1:{backend} check" for name, backend in backends)
    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return f"""global
    maxconn {maxconn}

defaults
    mode http
    timeout connect 2s
    # A dead process refuses a check at once; a busy one gets 2 s to answer it, or checks every 500 ms would
    # take a loaded process out, cut all its meetings and pile them onto the others (a cascade, measured).
    timeout check 2s
    timeout client 60s
    timeout server 60s
    # A meeting's WebSocket is idle between utterances: the tunnel timeout, not the client one, applies.
    timeout tunnel 1h
    retries 3
    option redispatch 1

frontend meetings
    bind {bind}
    maxconn {maxconn}
    default_backend delegates

backend delegates
    balance uri depth 3
    hash-type consistent
    option httpchk GET /healthz
    http-check expect status 200
    # A dead process is out within a second: checked every 500 ms (250 ms once one check failed), two failures
    # mark it down, and its tunnels are cut at once so their clients reconnect now, not at their next send.
    default-server inter 500ms fastinter 250ms downinter 1s fall 2 rise 2 on-marked-down shutdown-sessions maxconn {maxconn}
{servers}
"""


def max_connections() -> int:
    """As many connections as the open-file limit allows HAProxy (two descriptors each, a few spare)."""
    return max(256, min(20000, resource.getrlimit(resource.RLIMIT_NOFILE)[1] // 2 - 100))


def find_haproxy() -> str | None:
    return shutil.which("haproxy") or next((p for p in ("/usr/sbin/haproxy",) if Path(p).exists()), None)


