"""asyncio transport for RemotingCommand frames: server, pooled client, and the shared connection."""

from rocketq.remoting.client import RemotingClient, split_addr
from rocketq.remoting.connection import Connection
from rocketq.remoting.limits import ConnectionLedger, ServerLimits
from rocketq.remoting.server import RemotingDispatcher, RemotingServer

__all__ = [
    "Connection",
    "ConnectionLedger",
    "RemotingClient",
    "RemotingDispatcher",
    "RemotingServer",
    "ServerLimits",
    "split_addr",
]
