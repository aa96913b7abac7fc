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

#: One message of ``MessageStore.put_plain_messages`` — a plain message (no delay level, no transaction bits):
#:
#: ====  =================  ===============================================================
#:  0    topic              str
#:  1    queue_id           int
#:  2    body               bytes
#:  3    properties         bytes: encoded as stored (``CLUSTER`` included)
#:  4    flag               int
#:  5    sys_flag           int: no transaction bits (the store sets the host-v6 bits)
#:  6    born_timestamp     int
#:  7    born_host          Host
#:  8    reconsume_times    int
#:  9    TAGS               str | None: the tags code is its hash
#:  10   UNIQ_KEY           str | None: an index key
#:  11   KEYS               str | None: space-separated index keys
#: ====  =================  ===============================================================
#:
#: A bare tuple, not a NamedTuple: the broker builds one per send and the append loop unpacks it, and a
#: NamedTuple costs ~310 ns more to build (a Python-level ``__new__``) and ~70 ns more to unpack (no exact-tuple
#: fast path) — measured on Python 3.11, against ~4 µs of store work per message.
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
