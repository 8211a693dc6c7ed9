"""Meeting bots the server hosts for its meetings (`POST /v1/meetings/{id}/attend`): `hosted` runs their bridges,
`keys` holds the services' keys."""

from delegate.server.bots.hosted import MOUNT, HostedBots
from delegate.server.bots.keys import ServiceKeys

__all__ = ["MOUNT", "HostedBots", "ServiceKeys"]
