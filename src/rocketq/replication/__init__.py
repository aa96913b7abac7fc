"""Master/slave replication (RocketMQ 4.9's HA) on top of the store: the master streams its commit log from any
physical offset (``MessageStore.get_commit_log_data``), a slave appends the bytes at the same offsets
(``MessageStore.append_replica``), and SYNC_MASTER sends wait for a slave's acknowledgement.

``frames`` is the wire format (sans-I/O), ``waiters`` the group commit of SYNC_MASTER's waits, ``master`` the
listening side, ``slave`` the connecting side, ``service`` puts them together for a broker. The store knows
nothing of the network; the broker's controller owns an ``HAService``. ``controller`` is the 5.x controller
(election, epochs, fencing) that the name server may embed.
"""

from rocketq.replication.config import HAConfig
from rocketq.replication.service import HAService

__all__ = ["HAConfig", "HAService"]
