"""Pure-Python twin of ``rocketq.client._batchcodec_c``: messages → one SEND_BATCH_MESSAGE body.

The specification both twins follow (``rocketq.client.batchcodec`` chooses one):

``encode_batch(msgs, max_size, id_prefix, id_counter, check) -> (body, sizes)``

* Message by message, in this order, Java ``MessageBatch.generateFromList`` + ``Validators.checkMessage``:
  a DELAY property whose ``int()`` is > 0, a retry-group topic, a topic other than the first message's, a WAIT
  other than the first message's each raise ``InvalidMessageError`` (texts below); then the first message goes
  through ``check(msg, max_size)`` (topic and body checks), the others through the same body checks inline
  (their topic equals the first's, already checked).
* A message without UNIQ_KEY gets ``id_prefix`` + the low 16 bits of ``next(id_counter)`` as 4 upper-case hex
  digits in its ``properties`` (the caller's message is changed, as in Java); ``UniqIdGenerator.id_source`` gives
  the two, so the ids are the ones its ``create`` would make in that millisecond.
* Each message is encoded as Java ``MessageDecoder.encodeMessage``: ``TOTALSIZE MAGIC(0) BODYCRC(0) FLAG
  BODYLEN BODY PROPLEN(i16) PROPS`` with the properties as ``k 0x01 v`` joined by 0x02 (None values left
  out, keys and values formatted as by an f-string); properties over 32767 bytes raise ``InvalidMessageError``.
* Returns the items back to back as one ``bytes`` and each item's size, in order.

A failure leaves the messages checked before it with their UNIQ_KEY set, as the loop it replaces did.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from rocketq.client.errors import InvalidMessageError
from rocketq.protocol.topics import RETRY_PREFIX

_BATCH_HEAD = struct.Struct(">iiiii")  # total size, magic 0, body crc 0, flag, body length
_I16 = struct.Struct(">h")
MAX_PROPERTIES_BYTES = 32767


def encode_batch(
    msgs: Sequence[Any],
    max_size: int,
    id_prefix: str,
    id_counter: Iterator[int],
    check: Callable[[Any, int], None],
) -> tuple[bytes, list[int]]:
    parts: list[bytes] = []
    sizes: list[int] = []
    first = msgs[0]
    topic = first.topic
    topic_is_retry = topic.startswith(RETRY_PREFIX)
    wait = first.properties.get("WAIT", "true") != "false"
    for i, m in enumerate(msgs):
        props = m.properties
        delay = props.get("DELAY")
        if delay and int(delay) > 0:
            raise InvalidMessageError("delay level is not supported for batching")
        m_topic = m.topic
        if topic_is_retry if m_topic is topic else m_topic.startswith(RETRY_PREFIX):
            raise InvalidMessageError("retry group topic is not supported for batching")
        if m_topic != topic:
            raise InvalidMessageError("the topic of the messages in one batch should be the same")
        if (props.get("WAIT", "true") != "false") != wait:
            raise InvalidMessageError("the wait_store_msg_ok of the messages in one batch should the same")
        body = m.body
        if i == 0:
            check(m, max_size)
        elif body is None:
            raise InvalidMessageError("the message body is null")
        elif not body:
            raise InvalidMessageError("the message body length is zero")
        elif len(body) > max_size:
            raise InvalidMessageError(f"the message body size over max value, MAX: {max_size}")
        if "UNIQ_KEY" not in props:
            props["UNIQ_KEY"] = f"{id_prefix}{next(id_counter) & 0xFFFF:04X}"
        props_b = "\x02".join([f"{k}\x01{v}" for k, v in props.items() if v is not None]).encode()
        n_props = len(props_b)
        if n_props > MAX_PROPERTIES_BYTES:
            raise InvalidMessageError(f"the message properties are {n_props} bytes encoded, over the "
                                      f"{MAX_PROPERTIES_BYTES} limit")  # fmt: skip
        n_body = len(body)
        total = 22 + n_body + n_props
        parts += (_BATCH_HEAD.pack(total, 0, 0, m.flag, n_body), body, _I16.pack(n_props), props_b)
        sizes.append(total)
    return b"".join(parts), sizes
