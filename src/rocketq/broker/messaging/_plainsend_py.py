"""A SEND_MESSAGE_V2 request as a plain run's message, or None: the pure twin of ``_plainsend_c`` (the spec).

``plain_message`` holds the rules a send must pass to be stored in a run (``SendService.prepare_plain`` calls it
for a header already read): its topic is a plain one, it is no batch and no transaction, its queue exists on a
writable topic, its body is within the size limit, its ``WAIT`` suits the run, and its properties need no
rewriting (``plain_properties``). ``plain_send_v2`` does the same from the request's extFields.

The compiled twin reads the extFields itself and gives up (None) on anything a client does not usually send: a
V1 name instead of a letter, a number that is not plain decimal text, an odd boolean. The caller then reads the
header the general way, which stores the same message or answers the same error. So the compiled twin may say
None where this one gives a message, never the other way round, and never a different message
(``tests/unit/broker/test_plainsend.py`` holds them to that).
"""

from __future__ import annotations

from collections.abc import Callable

from rocketq.errors import ProtocolError
from rocketq.protocol.bodies import TopicConfig
from rocketq.protocol.headers import SendMessageRequestHeader, send_header_from_v2
from rocketq.protocol.message import Host, plain_properties
from rocketq.store.message import PlainMessage

__all__ = ["PlainRules", "plain_message", "plain_send_v2"]

#: plain topics (set), the topic table (name -> TopicConfig), the body size limit, the WAIT check (None: any WAIT
#: is fine), the properties that keep a send out of a run, the broker's CLUSTER property, the properties not
#: stored, the transaction bits of sysFlag, the write permission bit
PlainRules = tuple[
    set[str], dict[str, TopicConfig], int, Callable[[str], bool] | None, tuple[str, ...], bytes, tuple[str, ...], int,
    int,
]  # fmt: skip


def plain_message(header: SendMessageRequestHeader, body: bytes | bytearray | memoryview, born_host: Host,
                  rules: PlainRules) -> PlainMessage | None:  # fmt: skip
    """The send as a run's message when it passes the rules (see the module docstring), else None."""
    plain_topics, topic_table, max_body, waits, excluded, cluster, dropped, tx_mask, perm_write = rules
    topic = header.topic
    if topic not in plain_topics or header.batch or header.sys_flag & tx_mask:
        return None
    tc = topic_table.get(topic)
    queue_id = header.queue_id
    if tc is None or not tc.perm & perm_write or not 0 <= queue_id < max(tc.read_queue_nums, tc.write_queue_nums):
        return None
    if len(body) > max_body:
        return None
    properties = header.properties or ""
    if waits is not None and not waits(properties):
        return None
    plain = plain_properties(properties, excluded, cluster, dropped)
    if plain is None:
        return None
    stored_properties, tags, uniq_key, keys = plain
    return (
        topic, queue_id, body if type(body) is bytes else bytes(body), stored_properties, header.flag,
        header.sys_flag, header.born_timestamp, born_host, header.reconsume_times or 0, tags, uniq_key, keys,
    )  # fmt: skip


def plain_send_v2(ext: dict[str, str], body: bytes | bytearray | memoryview, born_host: Host,
                  rules: PlainRules) -> PlainMessage | None:  # fmt: skip
    """``plain_message`` of the V2 header in ``ext``; None when the header does not read (the caller reads it
    again and answers its error)."""
    try:
        header = send_header_from_v2(ext)
    except ProtocolError:
        return None
    return plain_message(header, body, born_host, rules)
