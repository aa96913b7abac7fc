"""A topic's messages stored in a time range, for the Messages and DLQ pages: the earliest ``limit`` of them across
all its queues (each queue read concurrently up to ``limit``), so one busy queue cannot hide the others."""

from __future__ import annotations

import asyncio

from rocketq.client import AdminClient, MessageExt


async def messages_in_range(admin: AdminClient, topic: str, begin_ms: int, end_ms: int, limit: int) -> list[MessageExt]:
    if end_ms < begin_ms:
        raise ValueError("the end of the time range is before its beginning")
    queues = await admin.readable_queues(topic)
    per_queue = await asyncio.gather(*(
        admin.browse_messages(topic, broker_name=mq.broker_name, queue_id=mq.queue_id, begin_ms=begin_ms,
                              end_ms=end_ms, max_messages=limit)
        for mq, _ in queues
    ))  # fmt: skip
    found = sorted((m for msgs in per_queue for m in msgs), key=lambda m: (m.store_timestamp, m.queue_id))
    return found[:limit]
