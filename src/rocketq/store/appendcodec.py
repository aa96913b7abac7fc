"""Batch bodies → commit-log records, in one call per batch: the compiled twin if built, else the pure one.

RocketMQ stores a SEND_BATCH_MESSAGE body (items of ``TOTALSIZE MAGIC BODYCRC FLAG BODYLEN BODY PROPLEN
PROPS``) as one commit-log record per item, each with the batch's properties appended to its own (Java's
``MessageExtBatchEncoder``: raw bytes, with a 0x02 between them when the item's do not end with one).

* ``measure_batch(body, extra, fixed_size, topic_tail_len) -> (messages, record bytes, longest properties)``
  checks the body's framing (``ValueError`` if malformed or empty) and sizes the records, so the caller can
  refuse the batch or pick a file before anything is written.
* ``write_batch(mm, pos, body, extra, topic_tail, queue_id, sys_flag, born_ts, born_b, store_ts, store_b,
  reconsume_times, queue_offset, phys_base, index_prefix_hash) -> (end_pos, cq_units, tags_codes, index,
  msg_ids)`` writes the records at ``pos`` of the writable buffer ``mm`` whose first byte is commit-log offset
  ``phys_base`` (the first record's TOTALSIZE last, so a crash shows all or none), and returns the 20-byte
  consume-queue units (``>qiq`` each), each message's tags code, ``[hash, phys, hash, phys, ...]`` for the
  index (UNIQ_KEY and each of KEYS, hashed as ``topic#key`` from ``index_prefix_hash``, the unsigned Java
  hash of ``topic#``; -1 = no index) and the comma-joined offset message ids. ``ValueError`` before any write
  if the body is malformed or a TAGS/KEYS/UNIQ_KEY value is not UTF-8.

* ``write_record(mm, pos, body, topic_tail, props, queue_id, flag, queue_offset, phys, sys_flag, born_ts,
  born_b, store_ts, store_b, reconsume_times, prepared_offset) -> size``: one message as a record (body CRC
  computed here), TOTALSIZE last.
* ``populate_write(mm, start, length) -> bool`` pre-faults mapped pages for writing without changing them
  (``MADV_POPULATE_WRITE``; False where the kernel lacks it); the compiled twin releases the GIL.

* ``index_entries(prefix_hash, phys, uniq_key, keys) -> [hash, phys, ...]``: a single message's index keys.
* ``index_put_many(mm, slot_num, index_num, count, slot_count, begin_ts, begin_phy, end_ts, end_phy, entries,
  start, store_ts) -> (next, count, slot_count, begin_ts, begin_phy, end_ts, end_phy)``: ``IndexFile.put_key``
  for many entries, same writes in the same order, until the file is full.

``ROCKETQ_NO_EXTENSIONS=1`` forces the pure twin (as aiokafka's ``AIOKAFKA_NO_EXTENSIONS``).
"""

from __future__ import annotations

from rocketq.common.native import choose
from rocketq.store import _appendcodec_py as pure

impl, compiled = choose(pure, "rocketq.store._appendcodec_c")

#: "c" or "python": which twin the store runs
IMPLEMENTATION = "python" if impl is pure else "c"

measure_batch = impl.measure_batch
write_batch = impl.write_batch
write_record = impl.write_record
java_hash_utf8 = impl.java_hash_utf8
populate_write = impl.populate_write
index_entries = impl.index_entries
index_put_many = impl.index_put_many
