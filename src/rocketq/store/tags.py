"""The consume-queue ``tagsCode`` of a message, at append time and when rebuilding from the commit log.

Normally the Java ``hashCode`` of the TAGS property (0 without tags). For delayed messages (topic
``SCHEDULE_TOPIC_XXXX`` with a ``DELAY`` property) it is the delivery time, ``store_timestamp + delay``,
with the level clamped to the highest configured one; ScheduleMessageService scans by it.
"""

from __future__ import annotations

from collections.abc import Mapping

from rocketq.protocol.message import PROP_DELAY, PROP_TAGS
from rocketq.protocol.topics import SCHEDULE_TOPIC
from rocketq.store.fast_hash import tags_code_of


def delivery_timestamp(delay_table: Mapping[int, int], level: int, store_timestamp: int) -> int:
    delay = delay_table.get(level)
    return store_timestamp + (delay if delay is not None else 1000)


def compute_tags_code(
    topic: str,
    properties: Mapping[str, str],
    store_timestamp: int,
    delay_table: Mapping[int, int],
) -> int:
    if topic == SCHEDULE_TOPIC:
        raw = properties.get(PROP_DELAY)
        if raw is not None:
            try:
                level = int(raw)
            except ValueError:
                level = 0
            level = min(level, max(delay_table))
            if level > 0:
                return delivery_timestamp(delay_table, level, store_timestamp)
    tags = properties.get(PROP_TAGS)
    if not tags:
        return 0
    code = _CACHE.get(tags)
    if code is None:
        if len(_CACHE) >= 4096:
            _CACHE.clear()
        code = _CACHE[tags] = tags_code_of(tags)
    return code


#: tags repeat a lot (a handful per topic): their hashes are cached
_CACHE: dict[str, int] = {}
