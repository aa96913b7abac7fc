"""Helpers for broker services that read their own system queues and re-store messages.

The schedule (delay levels), timer, transaction and send-back paths all take a stored record and store it
again under another topic with some properties changed; they share these two functions.
"""

from __future__ import annotations

from typing import Any

from rocketq.protocol.message import MessageRecord, decode_record
from rocketq.store import GetMessageStatus, MessageStore, StoreMessage


def restore(rec: MessageRecord, topic: str, queue_id: int, properties: dict[str, str], **fields: Any) -> StoreMessage:
    """A message to store again: ``rec``'s body, flag, hosts and times under a new topic/queue/properties.

    ``fields`` overrides the rest (``sys_flag``, ``reconsume_times``, ``prepared_transaction_offset``).
    """
    values: dict[str, Any] = {
        "sys_flag": rec.sys_flag,
        "reconsume_times": rec.reconsume_times,
        "prepared_transaction_offset": 0,
    }
    values.update(fields)
    return StoreMessage(
        topic=topic,
        queue_id=queue_id,
        body=rec.body,
        flag=rec.flag,
        properties=properties,
        born_timestamp=rec.born_timestamp,
        born_host=rec.born_host,
        store_host=rec.store_host,
        tags_code=None,
        **values,
    )


def read_queue(
    store: MessageStore, topic: str, queue_id: int, offset: int, limit: int, *, with_body: bool = True
) -> list[MessageRecord]:
    """Up to ``limit`` records of a queue from ``offset`` (skipping entries retention already removed)."""
    out: list[MessageRecord] = []
    while len(out) < limit:
        result = store.get_message(topic, queue_id, offset, min(32, limit - len(out)), None, counted=False)
        try:
            if result.status != GetMessageStatus.FOUND:
                if result.status in (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.NO_MATCHED_MESSAGE):
                    offset = result.next_begin_offset
                    continue
                break
            out.extend(decode_record(b.view, with_body=with_body) for b in result.buffers)
        finally:
            result.release()
        offset = result.next_begin_offset
    return out
