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

``plain_sends_v2`` and ``plain_answers`` are the send queue's loops over a stretch of sends: the first reads
consecutive requests into a run, the second writes a stored run's usual answers as one piece. Each stops at the
first send it does not take, which the caller then handles alone; the compiled twin may stop earlier than this
one, never later, and what it gives is the same.
"""

from __future__ import annotations

from collections.abc import Callable

from rocketq.codes import RequestCode
from rocketq.errors import ProtocolError
from rocketq.protocol.bodies import TopicConfig
from rocketq.protocol.command import FLAG_ONEWAY, SERIALIZE_JSON, RemotingCommand
from rocketq.protocol.framecodec import encode_send_reply
from rocketq.protocol.headers import SendMessageRequestHeader, send_header_from_v2
from rocketq.protocol.message import Host, plain_properties
from rocketq.store.message import PlainMessage

__all__ = ["PlainRules", "plain_answers", "plain_message", "plain_send_v2", "plain_sends_v2"]

_SEND_MESSAGE_V2 = int(RequestCode.SEND_MESSAGE_V2)

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


def plain_sends_v2(cmds: list[RemotingCommand], start: int, born_host: Host, rules: PlainRules,
                   run: list[PlainMessage]) -> int:  # fmt: skip
    """``plain_send_v2`` of ``cmds[start]``, ``cmds[start + 1]``, ... (one connection's requests), each appended to
    ``run``, up to the first that is no SEND_MESSAGE_V2 or gives None or fails to read; returns its index
    (``len(cmds)`` when all were taken). The caller handles that one alone (and logs its failure)."""
    i = start
    while i < len(cmds):
        cmd = cmds[i]
        if cmd.code != _SEND_MESSAGE_V2:
            break
        try:
            message = plain_send_v2(cmd.ext_fields, cmd.body, born_host, rules)
        except Exception:
            break
        if message is None:
            break
        run.append(message)
        i += 1
    return i


def plain_answers(senders: list[tuple[object, RemotingCommand]], run: list[PlainMessage],
                  results: list[tuple[int, int, int] | object], start: int, msg_id_prefix: str, version: int,
                  region: str, trace_on: str) -> tuple[bytes, int]:  # fmt: skip
    """The answers of a stored run's sends from ``start`` on, as long as each is answered the usual way: stored
    (its result a ``(phys, queue offset, size)`` tuple), answered in JSON (a JSON request, or a C++ client's), not
    oneway, and from the connection and of the request code of the first. Returns their frames
    (``encode_send_reply``) joined, and the index after the last (``start`` when the first is not one of them:
    the caller answers it alone)."""
    if len(run) != len(senders) or len(results) != len(senders):
        raise ValueError("plain_answers: senders, run and results differ in length")
    frames: list[bytes] = []
    first_conn: object = None
    first_code = 0
    i = start
    while i < len(senders):
        conn, cmd = senders[i]
        result = results[i]
        if type(result) is not tuple or cmd.flag & FLAG_ONEWAY:
            break
        if i == start:
            first_conn, first_code = conn, cmd.code
        elif conn is not first_conn or cmd.code != first_code:
            break
        if cmd.serialize_type != SERIALIZE_JSON and cmd.language != "CPP":
            break
        phys, queue_offset, _ = result
        frames.append(encode_send_reply(cmd.opaque, version, msg_id_prefix, phys, run[i][1], queue_offset, region,
                                        trace_on))  # fmt: skip
        i += 1
    return b"".join(frames), i
