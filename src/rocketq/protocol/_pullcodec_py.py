"""Pure-Python twin of ``rocketq.protocol._pullcodec_c``: a pull response body → received-message objects.

The specification both twins follow (``rocketq.protocol.pullcodec`` chooses one):

``decode_messages(buf, cls, broker_name, extra_props, inflate) -> list``

* ``buf`` holds whole commit-log records back to back (a PULL_MESSAGE answer's body); each becomes one
  instance of ``cls``, made *without* calling its ``__init__``, with exactly these attributes set:
  ``topic, body, flag, properties, transaction_id, queue_id, queue_offset, commit_log_offset, store_size,
  sys_flag, born_timestamp, born_host, store_timestamp, store_host, reconsume_times,
  prepared_transaction_offset, body_crc, broker_name`` (``cls`` must have a slot for each: the compiled twin
  writes the slots directly).
* ``properties`` decoded by Java's rule (``decode_properties``), then ``extra_props`` (may be None) set on top
  of them (the pull's MIN_OFFSET / MAX_OFFSET); ``transaction_id`` is the UNIQ_KEY when TRAN_MSG is "true"
  (any case), else None; hosts are ``(ip text, port)`` as ``decode_record`` gives them.
* ``body`` is the stored body, passed through ``inflate(body, sys_flag)`` when SYSFLAG bit 0 (compressed) is
  set.
* A record that ``decode_record`` would refuse raises ``ProtocolError``; nothing is returned then.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rocketq.protocol.message import PROP_TRAN_MSG, PROP_UNIQ_KEY, SYSFLAG_COMPRESSED, decode_record

_new = object.__new__


def decode_messages(
    buf: bytes | bytearray | memoryview,
    cls: type,
    broker_name: str,
    extra_props: Mapping[str, str] | None,
    inflate: Callable[[bytes, int], bytes],
) -> list[Any]:
    out: list[Any] = []
    pos = 0
    end = len(buf)
    while pos < end:
        rec = decode_record(buf, pos)
        pos += rec.store_size
        props = rec.properties
        if extra_props:
            props.update(extra_props)
        msg: Any = _new(cls)
        msg.topic = rec.topic
        msg.body = inflate(rec.body, rec.sys_flag) if rec.sys_flag & SYSFLAG_COMPRESSED else rec.body
        msg.flag = rec.flag
        msg.properties = props
        tran = props.get(PROP_TRAN_MSG)
        msg.transaction_id = props.get(PROP_UNIQ_KEY) if tran is not None and tran.lower() == "true" else None
        msg.queue_id = rec.queue_id
        msg.queue_offset = rec.queue_offset
        msg.commit_log_offset = rec.commit_log_offset
        msg.store_size = rec.store_size
        msg.sys_flag = rec.sys_flag
        msg.born_timestamp = rec.born_timestamp
        msg.born_host = rec.born_host
        msg.store_timestamp = rec.store_timestamp
        msg.store_host = rec.store_host
        msg.reconsume_times = rec.reconsume_times
        msg.prepared_transaction_offset = rec.prepared_transaction_offset
        msg.body_crc = rec.body_crc
        msg.broker_name = broker_name
        out.append(msg)
    return out
