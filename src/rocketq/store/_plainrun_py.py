"""Pure-Python twin of ``rocketq.store._plainrun_c``: the common case of a run of plain messages, in one call.

``write_plain_run(mm, pos, limit, phys_base, messages, start, store_b, store_ts, max_body, topics, hosts,
tags_cache, queue_table, prefixes, out, units, index_keys, arrivals, stats) -> (next, pos)``

From ``messages[start]`` on (``PlainMessage`` tuples), each message is written as a commit-log record at ``pos``
of the writable buffer ``mm`` (whose byte 0 is commit-log offset ``phys_base``), with the next queue offset of
its queue from ``queue_table`` (which it advances), and what its dispatch needs is collected:

* ``out`` gets ``(phys, queue_offset, size)``;
* ``units[(topic, queue_id)]`` is ``[first queue offset, bytearray of >qiq units]`` for the run's units, in order;
* ``index_keys`` gets ``[hash, phys, ...]`` of its UNIQ_KEY and KEYS, hashed from ``prefixes[topic]`` (``prefixes``
  None: no index);
* ``arrivals`` gets ``(topic, queue_id, next queue offset, tags code)``;
* ``stats[topic]`` is ``[messages, bytes]``.

It stops (returning the index of the message it did not take, and the position reached) at the first message
the caller's general path must handle: one whose topic, born host, tags or index prefix is not cached yet
(``topics``, ``hosts``, ``tags_cache``, ``prefixes``), whose body is over ``max_body`` or properties over 32767
bytes, or whose record does not fit before ``limit``. Nothing is written for that message. Both twins write the
same bytes and collect the same values; ``tests/unit/store/test_plainrun.py`` runs both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rocketq.protocol.message import SYSFLAG_BORNHOST_V6, SYSFLAG_STOREHOST_V6
from rocketq.store._appendcodec_py import index_entries
from rocketq.store.appendcodec import write_record  # the compiled one when built: the bytes are the same
from rocketq.store.record import HOST_V6_BITS

_MAX_PROPS = 32767


def write_plain_run(
    mm: Any,
    pos: int,
    limit: int,
    phys_base: int,
    messages: Sequence[tuple[Any, ...]],
    start: int,
    store_b: bytes,
    store_ts: int,
    max_body: int,
    topics: dict[str, bytes],
    hosts: dict[Any, bytes],
    tags_cache: dict[str, int],
    queue_table: dict[tuple[str, int], int],
    prefixes: dict[str, int] | None,
    out: list[tuple[int, int, int]],
    units: dict[tuple[str, int], list[Any]],
    index_keys: list[int],
    arrivals: list[tuple[str, int, int, int]],
    stats: dict[str, list[int]],
) -> tuple[int, int]:
    store_v6 = SYSFLAG_STOREHOST_V6 if len(store_b) == 20 else 0
    for i in range(start, len(messages)):
        topic, queue_id, body, props_b, flag, sys_flag, born_ts, born_host, reconsume, tags, uniq, keys = messages[i]
        topic_tail = topics.get(topic)
        born_b = hosts.get(born_host)
        if topic_tail is None or born_b is None or len(body) > max_body or len(props_b) > _MAX_PROPS:
            return i, pos
        if tags:
            code = tags_cache.get(tags)
            if code is None:
                return i, pos
        else:
            code = 0
        prefix = 0
        if prefixes is not None and (uniq or keys):
            known = prefixes.get(topic)
            if known is None:
                return i, pos
            prefix = known
        size = 72 + len(born_b) + len(store_b) + len(body) + len(topic_tail) + 2 + len(props_b)
        if pos + size > limit:
            return i, pos
        key = (topic, queue_id)
        queue_offset = queue_table.get(key, 0)
        phys = phys_base + pos
        v6 = (SYSFLAG_BORNHOST_V6 if len(born_b) == 20 else 0) | store_v6
        write_record(
            mm, pos, body, topic_tail, props_b, queue_id, flag, queue_offset, phys, (sys_flag & ~HOST_V6_BITS) | v6,
            born_ts, born_b, store_ts, store_b, reconsume, 0,
        )  # fmt: skip
        pos += size
        queue_table[key] = queue_offset + 1
        out.append((phys, queue_offset, size))
        unit = phys.to_bytes(8, "big") + size.to_bytes(4, "big") + code.to_bytes(8, "big", signed=True)
        group = units.get(key)
        if group is None:
            units[key] = [queue_offset, bytearray(unit)]
        else:
            group[1] += unit
        if prefixes is not None and (uniq or keys):
            index_keys += index_entries(prefix, phys, uniq, keys)
        arrivals.append((topic, queue_id, queue_offset + 1, code))
        stat = stats.get(topic)
        if stat is None:
            stats[topic] = [1, size]
        else:
            stat[0] += 1
            stat[1] += size
    return len(messages), pos
