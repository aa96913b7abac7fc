"""The producer's one SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE request builder, and the wire form of a batch.

Java counterpart: the request half of ``DefaultMQProducerImpl.sendKernelImpl`` (the
``SendMessageRequestHeader`` it fills) plus ``MQClientAPIImpl.sendMessage``'s switch to
``SendMessageRequestHeaderV2`` — and ``MessageBatch`` for batches.

``build_send_request`` writes the V2 extFields (single-letter keys ``"a"``…``"n"``) straight into a dict
(``sendext.v2_ext``, a compiled twin, for a send that is not to a retry topic): that is
what ``send_header_to_v2(SendMessageRequestHeader(...))`` gives, key for key and in the same order, without the
frozen header object and its field loop (the builder was ~17 % of the client's CPU per async send before it was
hand-written). ``tests/unit/client/test_send_request.py`` keeps the typed-header path as the oracle and compares
the two byte for byte. The builder reads the producer's settings through ``SendSettings`` so that this module
does not import ``producer`` (which imports it).
"""

from __future__ import annotations

import itertools
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Protocol

from rocketq.client._uniq_id import UniqIdGenerator
from rocketq.client._validators import properties_to_string, split_batch_sizes
from rocketq.client.batchcodec import encode_batch
from rocketq.client.message import Message
from rocketq.client.sendext import v2_ext, v2_head
from rocketq.codes import CURRENT_VERSION, RequestCode
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.message import (
    PROP_MAX_RECONSUME_TIMES,
    PROP_RECONSUME_TIME,
    PROP_TRAN_MSG,
    PROP_UNIQ_KEY,
    SYSFLAG_COMPRESSED,
    SYSFLAG_TX_PREPARED,
)
from rocketq.protocol.topics import RETRY_PREFIX

__all__ = [
    "COMPRESSION_ZLIB_FLAG", "MessageBatch", "SendSettings", "build_send_head", "build_send_request",
    "split_into_batches",
]

#: Java ``MessageSysFlag.COMPRESSION_ZLIB_TYPE`` (the compression type bits beside ``SYSFLAG_COMPRESSED``).
COMPRESSION_ZLIB_FLAG = 0x300
_time_ns = time.time_ns
# The members as module globals: an enum member lookup costs ~80 ns on Python 3.11.
_SEND_MESSAGE_V2 = RequestCode.SEND_MESSAGE_V2
_SEND_BATCH_MESSAGE = RequestCode.SEND_BATCH_MESSAGE


class SendSettings(Protocol):
    """The producer settings a request carries (``Producer`` has them; read at every send, as they may change)."""

    group: str
    create_topic_key: str
    default_topic_queue_nums: int
    compress_msg_body_over_howmuch: int
    compress_level: int


class MessageBatch(Message):
    """The wire form of a batch: the encoded body plus the messages it holds (Java ``MessageBatch``)."""

    __slots__ = ("messages",)

    def __init__(self, topic: str, messages: list[Message], body: bytes) -> None:
        super().__init__(topic, body)
        self.messages = messages


def build_send_request(
    msg: Message,
    mq: MessageQueue,
    settings: SendSettings,
    id_gen: UniqIdGenerator | None,
    language: str,
) -> tuple[RemotingCommand, str]:
    """The SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE request for ``msg`` to ``mq``, and the message id(s).

    Gives a message without ``UNIQ_KEY`` one from ``id_gen``; compresses a single message's body from
    ``compress_msg_body_over_howmuch`` bytes; marks a ``TRAN_MSG`` message prepared. A message to a retry topic
    carries its ``RECONSUME_TIME`` / ``MAX_RECONSUME_TIMES`` properties in the header too, and loses them from
    ``msg.properties`` after the properties text was written, as Java's ``sendKernelImpl`` does.
    """
    topic = msg.topic
    props = msg.properties
    if isinstance(msg, MessageBatch):
        body = msg.body
        sys_flag = _tran_flag(props)
        code = _SEND_BATCH_MESSAGE
        batch = "true"
        uniq_id = ",".join([m.properties.get(PROP_UNIQ_KEY) or "" for m in msg.messages])  # Message.uniq_key
    else:
        body, sys_flag, uniq_id = _single(msg, settings, id_gen)
        code = _SEND_MESSAGE_V2
        batch = "false"
    born = _time_ns() // 1_000_000
    if topic.startswith(RETRY_PREFIX):
        ext = _retry_ext(msg, mq, settings, sys_flag, batch, born)
    else:
        ext = v2_ext(settings.group, topic, settings.create_topic_key, settings.default_topic_queue_nums, mq.queue_id,
                     sys_flag, born, msg.flag, props, batch, mq.broker_name)  # fmt: skip
    return RemotingCommand(code, 0, 0, language, CURRENT_VERSION, None, ext, body), uniq_id


def build_send_head(
    msg: Message, mq: MessageQueue, settings: SendSettings, id_gen: UniqIdGenerator | None, language: str, opaque: int
) -> tuple[bytes, bytes, str]:
    """``build_send_request``'s request for a single message (not a batch) to a topic that is not a retry topic,
    already encoded with ``opaque`` (``sendext.v2_head``): the frame's head, the body that follows it and the
    message id."""
    body, sys_flag, uniq_id = _single(msg, settings, id_gen)
    head = v2_head(opaque, language, CURRENT_VERSION, settings.group, msg.topic, settings.create_topic_key,
                   settings.default_topic_queue_nums, mq.queue_id, sys_flag, _time_ns() // 1_000_000, msg.flag,
                   msg.properties, mq.broker_name, body)  # fmt: skip
    return head, body, uniq_id


def _single(msg: Message, settings: SendSettings, id_gen: UniqIdGenerator | None) -> tuple[bytes, int, str]:
    """A single message's body as sent, its sysFlag and its id (given one from ``id_gen`` if it has none)."""
    props = msg.properties
    uniq_id = props.get(PROP_UNIQ_KEY)
    if uniq_id is None and PROP_UNIQ_KEY not in props:
        assert id_gen is not None
        uniq_id = props[PROP_UNIQ_KEY] = id_gen.create()
    body = msg.body
    sys_flag = _tran_flag(props)
    if len(body) >= settings.compress_msg_body_over_howmuch:
        body = zlib.compress(body, settings.compress_level)
        sys_flag |= SYSFLAG_COMPRESSED | COMPRESSION_ZLIB_FLAG
    return body, sys_flag, uniq_id or ""


def _tran_flag(props: dict[str, str]) -> int:
    """``SYSFLAG_TX_PREPARED`` for a transactional half message, else 0."""
    tran = props.get(PROP_TRAN_MSG)
    return SYSFLAG_TX_PREPARED if tran is not None and tran.lower() == "true" else 0


def _retry_ext(
    msg: Message, mq: MessageQueue, settings: SendSettings, sys_flag: int, batch: str, born_ms: int
) -> dict[str, str]:
    """The V2 extFields of a send to a retry topic: the reconsume counts in ``"j"`` and ``"l"`` (``"l"`` after
    ``"m"``: the typed header's field order)."""
    props = msg.properties
    text = properties_to_string(props)  # before the counts leave the properties, as in Java
    reconsume = props.pop(PROP_RECONSUME_TIME, None)
    reconsume_times = "0" if reconsume is None else str(int(reconsume))
    max_reconsume = props.pop(PROP_MAX_RECONSUME_TIMES, None)
    max_reconsume_times = None if max_reconsume is None else str(int(max_reconsume))
    ext = {
        "a": settings.group,
        "b": msg.topic,
        "c": settings.create_topic_key,
        "d": str(settings.default_topic_queue_nums),
        "e": str(mq.queue_id),
        "f": str(sys_flag),
        "g": str(born_ms),
        "h": str(msg.flag),
        "i": text,
        "j": reconsume_times,
        "k": "false",
        "m": batch,
    }
    if max_reconsume_times is not None:
        ext["l"] = max_reconsume_times
    ext["n"] = mq.broker_name
    return ext


def split_into_batches(
    msgs: Sequence[Message], max_size: int, id_gen: UniqIdGenerator, check: Callable[[Message, int], None]
) -> list[MessageBatch]:
    """Messages of one topic → the batches to send, each body ≤ ``max_size`` (Java ``MessageBatch.generateFromList``
    plus the producer's size split).

    One call (compiled twin where built) runs the Java ``MessageBatch`` checks in their order, message by message,
    gives each without one its ``UNIQ_KEY`` (``id_gen``'s ids of this millisecond) and encodes them all (Java
    ``MessageDecoder.encodeMessage``) into one body; the batches are runs of consecutive messages cut from it.
    """
    first = msgs[0]
    topic = first.topic
    wait = "true" if first.wait_store_msg_ok else "false"
    id_prefix, id_counter = id_gen.id_source()
    body, sizes = encode_batch(msgs, max_size, id_prefix, id_counter, check)
    # A body within the limit is one batch (so is each item): the grouping loop only for one that is not
    groups = [range(len(sizes))] if len(body) <= max_size else split_batch_sizes(sizes, max_size)
    starts = list(itertools.accumulate(sizes, initial=0)) if len(groups) > 1 else [0, len(body)]
    batches = []
    for group in groups:
        lo, hi = group[0], group[-1] + 1
        part = body if len(groups) == 1 else body[starts[lo] : starts[hi]]
        batch = MessageBatch(topic, list(msgs[lo:hi]), part)
        batch.properties = {"WAIT": wait}
        batches.append(batch)
    return batches
