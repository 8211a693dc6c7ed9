"""`python -m benchmark.load`: concurrent WebSocket meetings against loopback servers, and what they cost.

`run` drives the meetings and reads the server's figures, `server` starts one server, `fleet` several on
PostgreSQL behind HAProxy, `profile` samples a server with py-spy, `cli` is the command.
"""

from benchmark.load.cli import main
from benchmark.load.run import LoadReport, principal_of, run_load
from benchmark.load.server import local_server, served

__all__ = ["LoadReport", "local_server", "main", "principal_of", "run_load", "served"]
