"""What the store accepts: ``StoreMessage`` (one message) and ``StoreBatch`` (a SEND_BATCH_MESSAGE body).

The broker builds these from a send request (RocketMQ's ``MessageExtBrokerInner`` / ``MessageExtBatch``).
``properties`` is the authoritative dict; ``properties_str`` may carry the already-encoded string (for
example the request's own ``properties`` header) to skip re-encoding; it must encode the same mapping.
``tags_code`` is normally computed by the broker with ``tags_hash_code(TAGS)``; None lets the store
compute it (it must anyway for recovery, see ``rocketq.store.tags``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rocketq.protocol.message import PROP_WAIT, BatchItem, Host

DEFAULT_HOST: Host = ("127.0.0.1", 0)

#: One message of ``MessageStore.put_plain_messages`` — a plain message (no delay level, no transaction bits),
#: a tuple because a broker builds one per send: (topic, queue_id, body, encoded properties, flag, sys_flag,
#: born_timestamp, born_host, reconsume_times, TAGS, UNIQ_KEY, KEYS).
PlainMessage = tuple[str, int, bytes, bytes, int, int, int, Host, int, "str | None", "str | None", "str | None"]


@dataclass(slots=True)
class StoreMessage:
    topic: str
    body: bytes
    queue_id: int = 0
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: Host = DEFAULT_HOST
    store_host: Host = DEFAULT_HOST
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    tags_code: int | None = None
    properties_str: str | None = None

    @property
    def wait_store_msg_ok(self) -> bool:
        """RocketMQ's ``isWaitStoreMsgOK``: only ``WAIT=false`` lets a SYNC_FLUSH sender skip the wait."""
        return self.properties.get(PROP_WAIT) != "false"


@dataclass(slots=True)
class StoreBatch:
    """Messages sharing topic, queue, sysFlag and born/store info, stored with consecutive queue offsets.

    The messages are ``body``, a SEND_BATCH_MESSAGE body as it came off the wire (the broker's way: it is
    never decoded into objects), or else ``items``. ``properties`` are batch-level properties (e.g. ``WAIT``)
    appended to every item's own properties as RocketMQ does (each item already carries its ``UNIQ_KEY``);
    ``properties_bytes`` may carry their encoding to skip re-encoding.
    """

    topic: str
    items: list[BatchItem] = field(default_factory=list)
    body: bytes | memoryview | None = None
    properties_bytes: bytes | None = None
    queue_id: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: Host = DEFAULT_HOST
    store_host: Host = DEFAULT_HOST
    reconsume_times: int = 0
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def wait_store_msg_ok(self) -> bool:
        return self.properties.get(PROP_WAIT) != "false"
