"""The HA tuning values, under Java's ``MessageStoreConfig`` names in broker.conf (milliseconds, bytes)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class HAConfig:
    #: idle time after which either side sends a keep-alive (haSendHeartbeatInterval)
    heartbeat_interval_ms: int = 5_000
    #: a connection silent this long is closed (haHousekeepingInterval)
    housekeeping_interval_ms: int = 20_000
    #: the largest body of one master → slave frame (haTransferBatchSize)
    transfer_batch_size: int = 32 * 1024
    #: SYNC_MASTER: a slave this many bytes behind counts as unavailable (haSlaveFallbehindMax)
    slave_fallbehind_max: int = 256 * 1024 * 1024
    #: SYNC_MASTER: how long a send waits for a slave's ack (slaveTimeout, 4.9.3+)
    slave_timeout_ms: int = 3_000
    #: rocketq: a slave's pause before it connects again (Java hard-codes 5 s)
    reconnect_interval_ms: int = 5_000
    #: rocketq: how often the master looks for new bytes when nobody woke it (Java: 100 ms)
    transfer_poll_ms: int = 100
