"""The store's write side: single messages, runs of plain messages and batches into the commit log.

``MessageStore.put_message``, ``put_plain_messages`` and ``put_messages`` land here (RocketMQ's
``CommitLog.putMessage`` / ``putMessages``). Each appends under ``CommitLog.put_lock``, hands the consume-queue
units and index keys to ``Dispatcher`` under the same lock (so units reach each queue in offset order) and
calls the arrival listener once the lock is released.

* **One loop for single messages and runs** (``Appender._append_run``): a single message is a run of one.
  What a run shares is done once — the writable check, the lock, the store timestamp (one reading of the
  clock), the index hand-over (``Dispatcher.finish_appended``) and the stats. What needs no lock is done
  before it: for a single message the DELAY rewrite to SCHEDULE_TOPIC_XXXX (as RocketMQ's CommitLog does) and
  the properties encoding; a run's messages arrive encoded (see ``PlainMessage``).
* **The batch writer** (``Appender.put_messages``): ``appendcodec.write_batch`` writes a SEND_BATCH_MESSAGE
  body as contiguous records in one call and returns their units and index keys already packed.

These are the broker's hottest paths, tuned with measurements (``docs/performance.md``): locals hoisted out
of the loop, host/topic/tags encodings cached, no per-message objects beyond the results.
``tests/unit/store/test_put_plain.py`` holds a run to what single puts store, byte for byte.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Final

from rocketq.protocol.message import (
    MAX_PROPERTIES_LENGTH,
    PROP_DELAY,
    PROP_KEYS,
    PROP_REAL_QID,
    PROP_REAL_TOPIC,
    PROP_TAGS,
    PROP_UNIQ_KEY,
    SYSFLAG_TX_COMMIT,
    SYSFLAG_TX_MASK,
    SYSFLAG_TX_NOT,
    Host,
    encode_batch,
)
from rocketq.protocol.topics import SCHEDULE_TOPIC
from rocketq.store.appendcodec import measure_batch
from rocketq.store.commit_log import CommitLog
from rocketq.store.config import Clock, StoreConfig
from rocketq.store.dispatcher import Dispatcher
from rocketq.store.errors import is_no_space
from rocketq.store.fast_hash import tags_code_of
from rocketq.store.message import PlainMessage, StoreBatch, StoreMessage
from rocketq.store.plainrun import write_plain_run
from rocketq.store.record import END_FILE_MIN_BLANK_LENGTH, FIXED_BY_HOSTS, HOST_V6_BITS
from rocketq.store.results import AppendResult, PutMessageResult, PutMessageStatus
from rocketq.store.running_flags import BLOCKS_WRITES, WRITE_LOGICS_QUEUE_ERROR, RunningFlags
from rocketq.store.stats import StatsService
from rocketq.store.tags import compute_tags_code

log = logging.getLogger(__name__)

#: ``arrival_listener(topic, queue_id, next_logic_offset, tags_code, store_timestamp, properties)``
ArrivalListener = Callable[[str, int, int, int, int, dict[str, str] | None], None]
#: ``arrivals_listener([(topic, queue_id, next_logic_offset, tags_code), ...], store_timestamp)``: a plain run's
#: or a batch's arrivals in one call (their properties are not decoded); without one each goes to
#: ``arrival_listener``
ArrivalsListener = Callable[[list[tuple[str, int, int, int]], int], None]

#: where a message of a run went: (commit-log offset, queue offset, record size)
Stored = tuple[int, int, int]

# enum members read as plain globals: ~80 ns less per lookup on the hot path
_PUT_OK: Final = PutMessageStatus.PUT_OK
_NOT_AVAILABLE: Final = PutMessageStatus.SERVICE_NOT_AVAILABLE
_ILLEGAL: Final = PutMessageStatus.MESSAGE_ILLEGAL
_PROPERTIES_TOO_LONG: Final = PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
_FILE_FAILED: Final = PutMessageStatus.CREATE_MAPEDFILE_FAILED

_TAGS_CACHE_MAX: Final = 10_000


class Appender:
    """Appends for ``MessageStore``, which owns the parts passed in and opens and closes ``accepting``."""

    def __init__(
        self,
        config: StoreConfig,
        commit_log: CommitLog,
        dispatcher: Dispatcher,
        flags: RunningFlags,
        stats: StatsService,
        clock: Clock,
    ) -> None:
        self.config = config
        self.commit_log = commit_log
        self.dispatcher = dispatcher
        self.flags = flags
        self.stats = stats
        self._clock = clock
        self.delay_table = dispatcher.delay_table
        self.max_delay_level = max(self.delay_table)
        #: False until the store is loaded and again from its shutdown on (puts answer SERVICE_NOT_AVAILABLE)
        self.accepting = False
        #: called after the put lock is released, once per message that reached a consume queue
        self.arrival_listener: ArrivalListener | None = None
        #: called instead, once per plain run, when set
        self.arrivals_listener: ArrivalsListener | None = None
        self._tags_cache: dict[str, int] = {}

    def _fail(self, status: PutMessageStatus) -> PutMessageResult:
        self.stats.put_failed += 1
        return PutMessageResult(status)

    def _hash_tags(self, tags: str) -> int:
        """A tags code the cache does not have yet (callers read ``_tags_cache`` first: tags repeat a lot)."""
        if len(self._tags_cache) > _TAGS_CACHE_MAX:
            self._tags_cache.clear()
        code = self._tags_cache[tags] = tags_code_of(tags)
        return code

    def _append_failed(self, topic: str, exc: OSError) -> PutMessageStatus:
        """The status for a commit-log file that could not be created: a full disk is Java's disk-full answer
        (the disk guard has switched writes off and logged it); anything else is CREATE_MAPEDFILE_FAILED."""
        if is_no_space(exc):
            return _NOT_AVAILABLE
        log.exception("store.append_failed topic=%s", topic)
        return _FILE_FAILED

    def _logics_failed(self, topic: str) -> None:
        self.logics_failed(WRITE_LOGICS_QUEUE_ERROR, topic)

    def logics_failed(self, bit: int, what: str) -> None:
        """A consume-queue unit or index entry was not written (its file could not be created): writes are
        refused until a restart re-dispatches from the commit log (Java's WRITE_LOGICS_QUEUE_ERROR /
        WRITE_INDEX_FILE_ERROR). The message itself is in the commit log and stays acknowledged."""
        if self.flags.set(bit):
            log.exception("store.dispatch_failed %s: writes refused until the broker restarts", what)

    # ================================================================== single messages and runs

    def put_message(self, msg: StoreMessage) -> PutMessageResult:
        """One message: rewritten if delayed and encoded here, then appended as a run of one."""
        if not self.accepting or self.flags.bits & BLOCKS_WRITES:
            return self._fail(_NOT_AVAILABLE)
        topic = msg.topic
        queue_id = msg.queue_id
        props = msg.properties
        props_str = msg.properties_str
        if PROP_DELAY in props and self.config.schedule_rewrite_enable and topic != SCHEDULE_TOPIC:
            tx = msg.sys_flag & SYSFLAG_TX_MASK
            if tx in (SYSFLAG_TX_NOT, SYSFLAG_TX_COMMIT):
                try:
                    level = int(props[PROP_DELAY])
                except ValueError:
                    level = 0
                if level > 0:
                    level = min(level, self.max_delay_level)
                    props = {**props, PROP_DELAY: str(level), PROP_REAL_TOPIC: topic, PROP_REAL_QID: str(queue_id)}
                    props_str = None
                    topic, queue_id = SCHEDULE_TOPIC, level - 1
        if props_str is None:
            props_b = "".join([f"{k}\x01{v}\x02" for k, v in props.items() if v is not None]).encode()
        else:
            props_b = props_str.encode()
        tags_code = msg.tags_code
        if tags_code is None and topic != SCHEDULE_TOPIC:  # SCHEDULE_TOPIC_XXXX: the delivery time, under the lock
            tags = props.get(PROP_TAGS)
            if not tags:
                tags_code = 0
            else:
                hit = self._tags_cache.get(tags)
                tags_code = hit if hit is not None else self._hash_tags(tags)
        enc = self.commit_log.encoder
        store_b = enc.hosts.get(msg.store_host) or enc.host_bytes(msg.store_host)
        message: PlainMessage = (
            topic, queue_id, msg.body, props_b, msg.flag, msg.sys_flag, msg.born_timestamp, msg.born_host,
            msg.reconsume_times, None, props.get(PROP_UNIQ_KEY), props.get(PROP_KEYS),
        )  # fmt: skip
        out, store_ts = self._append_run((message,), store_b, msg.prepared_transaction_offset, tags_code, props)
        stored = out[0]
        if isinstance(stored, tuple):
            phys, queue_offset, size = stored
            return PutMessageResult(_PUT_OK, AppendResult(phys, size, store_ts, queue_offset, 1, store_b))
        return PutMessageResult(stored)

    def put_plain_messages(
        self, messages: Sequence[PlainMessage], store_host: Host
    ) -> list[Stored | PutMessageStatus]:
        """A run of plain messages; see ``MessageStore.put_plain_messages``.

        ``plainrun.write_plain_run`` takes the common case many messages at a call (compiled twin: one C loop
        writing records and collecting units, index keys and arrivals); each message it leaves (a topic, host,
        tags or index prefix not cached yet, a size to refuse, a full file) goes through the general loop alone,
        which fills the caches or rolls the file, and the run goes on from the next one.
        """
        if not self.accepting or self.flags.bits & BLOCKS_WRITES:
            self.stats.put_failed += len(messages)
            return [_NOT_AVAILABLE] * len(messages)
        cl = self.commit_log
        enc = cl.encoder
        store_b = enc.hosts.get(store_host) or enc.host_bytes(store_host)
        if len(messages) == 1:  # cheaper through the general path alone
            return self._append_run(messages, store_b, 0, None, None)[0]
        dispatcher = self.dispatcher
        index = dispatcher.index
        prefixes = None if index is None else index.prefixes
        mfq = cl.mfq
        n = len(messages)
        out: list[Stored | PutMessageStatus] = []
        arrivals: list[tuple[str, int, int, int]] = []
        stats: dict[str, list[int]] = {}
        failed = 0
        last_phys = -1
        with cl.put_lock:
            if not self.accepting:
                self.stats.put_failed += n
                return [_NOT_AVAILABLE] * n
            store_ts = self._clock()
            i = 0
            while i < n:
                files = mfq.mapped_files
                mf = files[-1] if files else None
                if mf is not None:
                    units: dict[tuple[str, int], list[Any]] = {}
                    pos = mf.wrote_position
                    i, end = write_plain_run(
                        mf.mm, pos, mf.file_size - END_FILE_MIN_BLANK_LENGTH, mf.file_from_offset, messages, i,
                        store_b, store_ts, self.config.max_message_size, enc.topics, enc.hosts, self._tags_cache,
                        cl.topic_queue_table, prefixes, out, units, dispatcher.run_keys, arrivals, stats,
                    )  # fmt: skip
                    if end != pos:
                        mf.wrote_position = end
                        mf.store_timestamp = mf.last_modified_ms = cl.last_store_timestamp = store_ts
                        last_phys = out[-1][0]  # type: ignore[index]  # the call appended only tuples
                        self._put_units(units)
                    if i >= n:
                        break
                # the general path for this one message; it fills the caches the next call reads
                one_failed, one_phys = self._append_locked(messages[i : i + 1], store_b, 0, None, None, store_ts,
                                                           out, arrivals)  # fmt: skip
                failed += one_failed
                last_phys = max(last_phys, one_phys)
                i += 1
            if last_phys >= 0:
                self._finish_locked(last_phys, store_ts, messages[0][0])
            for topic, (msgs, size) in stats.items():
                self.stats.on_put(topic, msgs, size)
        if failed:
            self.stats.put_failed += failed
        self._tell_arrivals(arrivals, store_ts, None)
        return out

    def _put_units(self, units: dict[tuple[str, int], list[Any]]) -> None:
        """The consume-queue units ``write_plain_run`` collected: one packed write per queue."""
        cq_table = self.dispatcher.cq_table
        queues = cq_table.queues
        for key, (first_offset, packed) in units.items():
            try:
                (queues.get(key) or cq_table.find_or_create(*key)).put_packed(bytes(packed), first_offset)
            except OSError:
                self._logics_failed(key[0])

    def _append_run(
        self,
        messages: Sequence[PlainMessage],
        store_b: bytes,
        prepared_offset: int,
        tags_code: int | None,
        properties: dict[str, str] | None,
    ) -> tuple[list[Stored | PutMessageStatus], int]:
        """``_append_locked`` under the lock and one store time, then the index hand-over, stats and arrivals.
        Returns each message's ``Stored`` or the status that refused it (nothing written for it), and the store
        time."""
        cl = self.commit_log
        out: list[Stored | PutMessageStatus] = []
        arrivals: list[tuple[str, int, int, int]] = []
        with cl.put_lock:
            if not self.accepting:
                self.stats.put_failed += len(messages)
                return [_NOT_AVAILABLE] * len(messages), 0
            store_ts = self._clock()
            failed, last_phys = self._append_locked(
                messages, store_b, prepared_offset, tags_code, properties, store_ts, out, arrivals
            )
            if last_phys >= 0:
                try:
                    self.dispatcher.finish_appended(last_phys, store_ts)
                except OSError:
                    self._logics_failed(messages[0][0])
        if failed:
            self.stats.put_failed += failed
        listener = self.arrival_listener  # (inline here: this is every single put's path)
        if listener is not None:
            for topic, queue_id, next_offset, code in arrivals:
                listener(topic, queue_id, next_offset, code, store_ts, properties)
        return out, store_ts

    def _finish_locked(self, last_phys: int, store_ts: int, topic: str) -> None:
        """End of a run that wrote something, still under the lock: its index keys handed over."""
        try:
            self.dispatcher.finish_appended(last_phys, store_ts)
        except OSError:
            self._logics_failed(topic)

    def _tell_arrivals(
        self, arrivals: list[tuple[str, int, int, int]], store_ts: int, properties: dict[str, str] | None
    ) -> None:
        """After the lock: the arrival listener told of each message a consumer can see (the run's listener, when
        there is one, of all of them at once)."""
        if self.arrivals_listener is not None:
            if arrivals:
                self.arrivals_listener(arrivals, store_ts)
            return
        listener = self.arrival_listener
        if listener is not None:
            for topic, queue_id, next_offset, code in arrivals:
                listener(topic, queue_id, next_offset, code, store_ts, properties)

    def _append_locked(
        self,
        messages: Sequence[PlainMessage],
        store_b: bytes,
        prepared_offset: int,
        tags_code: int | None,
        properties: dict[str, str] | None,
        store_ts: int,
        out: list[Stored | PutMessageStatus],
        arrivals: list[tuple[str, int, int, int]],
    ) -> tuple[int, int]:
        """The general append loop (the caller holds the lock): each message checked, written, dispatched and
        counted in order. Appends to ``out`` and ``arrivals``; returns (messages refused, last commit-log offset
        written or -1).

        ``properties`` is given for a run of one from ``put_message`` (its decoded properties, which the
        arrival listener receives); then ``tags_code`` is its tags code (None: computed from the properties
        and the store time, the delivery time of a SCHEDULE_TOPIC_XXXX message) and ``prepared_offset`` its
        PREPARED TRANSACTION OFFSET. A plain message's tags code is the hash of its TAGS.
        """
        cl = self.commit_log
        enc = cl.encoder
        tails, hosts = enc.topics, enc.hosts
        max_body = self.config.max_message_size
        room = cl.file_size - END_FILE_MIN_BLANK_LENGTH
        append_message = cl.append_message
        dispatch = self.dispatcher.dispatch_appended
        tags_cache = self._tags_cache
        stats = self.stats
        failed = 0
        last_phys = -1
        # the stats are summed while the topic stays the same (a run is mostly one topic)
        stat_topic = ""
        stat_msgs = stat_bytes = 0
        for topic, queue_id, body, props_b, flag, sys_flag, born_ts, born_host, reconsume, tags, uniq, keys in messages:
            topic_tail = tails.get(topic) or enc.topic_tail(topic)
            if len(body) > max_body or topic_tail is None:
                out.append(_ILLEGAL)
                failed += 1
                continue
            if len(props_b) > MAX_PROPERTIES_LENGTH:
                out.append(_PROPERTIES_TOO_LONG)
                failed += 1
                continue
            born_b = hosts.get(born_host) or enc.host_bytes(born_host)
            fixed, v6_bits = FIXED_BY_HOSTS[(len(born_b), len(store_b))]
            size = fixed.size + len(body) + len(topic_tail) + 2 + len(props_b)
            if size > room:
                out.append(_ILLEGAL)
                failed += 1
                continue
            sys_flag = (sys_flag & ~HOST_V6_BITS) | v6_bits
            try:
                phys, queue_offset = append_message(
                    store_ts, size, queue_id, flag, sys_flag, born_ts, born_b, store_b, reconsume,
                    prepared_offset, body, topic_tail, props_b, (topic, queue_id),
                )  # fmt: skip
            except OSError as exc:
                out.append(self._append_failed(topic, exc))
                failed += 1
                continue
            if properties is None:
                if not tags:
                    code = 0
                else:
                    hit = tags_cache.get(tags)
                    code = hit if hit is not None else self._hash_tags(tags)
            elif tags_code is None:
                code = compute_tags_code(topic, properties, store_ts, self.delay_table)
            else:
                code = tags_code
            try:
                if dispatch(topic, queue_id, phys, size, code, queue_offset, sys_flag, uniq, keys):
                    arrivals.append((topic, queue_id, queue_offset + 1, code))
            except OSError:
                self._logics_failed(topic)
            last_phys = phys
            out.append((phys, queue_offset, size))
            if topic == stat_topic:
                stat_msgs += 1
                stat_bytes += size
            else:
                if stat_msgs:
                    stats.on_put(stat_topic, stat_msgs, stat_bytes)
                stat_topic, stat_msgs, stat_bytes = topic, 1, size
        if stat_msgs:
            stats.on_put(stat_topic, stat_msgs, stat_bytes)
        return failed, last_phys

    # ============================================================================== batches

    def put_messages(self, batch: StoreBatch) -> PutMessageResult:
        """A batch, contiguous in one commit-log file; see ``MessageStore.put_messages``."""
        if not self.accepting or self.flags.bits & BLOCKS_WRITES:
            return self._fail(_NOT_AVAILABLE)
        tx = batch.sys_flag & SYSFLAG_TX_MASK
        if tx != SYSFLAG_TX_NOT or PROP_DELAY in batch.properties:
            return self._fail(_ILLEGAL)  # RocketMQ refuses transactional/delayed batches
        body = batch.body
        if body is None:
            if not batch.items:
                return self._fail(_ILLEGAL)
            body = encode_batch(batch.items)
        cl = self.commit_log
        enc = cl.encoder
        topic = batch.topic
        topic_tail = enc.topics.get(topic) or enc.topic_tail(topic)
        if topic_tail is None:
            return self._fail(_ILLEGAL)
        extra = batch.properties_bytes
        if extra is None:
            extra = "".join([f"{k}\x01{v}\x02" for k, v in batch.properties.items() if v is not None]).encode()
        hosts = enc.hosts
        born_b = hosts.get(batch.born_host) or enc.host_bytes(batch.born_host)
        store_b = hosts.get(batch.store_host) or enc.host_bytes(batch.store_host)
        fixed, v6_bits = FIXED_BY_HOSTS[(len(born_b), len(store_b))]
        sys_flag = (batch.sys_flag & ~HOST_V6_BITS) | v6_bits
        try:
            count, total, longest = measure_batch(body, extra, fixed.size, len(topic_tail))
        except ValueError:
            return self._fail(_ILLEGAL)
        if longest > MAX_PROPERTIES_LENGTH:
            return self._fail(_PROPERTIES_TOO_LONG)
        # what the messages weigh on the wire (RocketMQ checks the batch body against maxMessageSize)
        if total - count * (fixed.size + len(topic_tail) - 20) > self.config.max_message_size:
            return self._fail(_ILLEGAL)
        if total + END_FILE_MIN_BLANK_LENGTH > cl.file_size:
            return self._fail(_ILLEGAL)
        dispatcher = self.dispatcher
        prefix = dispatcher.index_prefix(topic)
        queue_id = batch.queue_id
        with cl.put_lock:
            if not self.accepting:
                return self._fail(_NOT_AVAILABLE)
            try:
                result, units, tags, index_keys = cl.append_batch_body(
                    body, extra, topic_tail, queue_id, sys_flag, batch.born_timestamp, born_b, store_b,
                    batch.reconsume_times, total, (topic, queue_id), prefix,
                )  # fmt: skip
            except ValueError:  # a TAGS/KEYS/UNIQ_KEY value that is not UTF-8: nothing was written
                return self._fail(_ILLEGAL)
            except OSError as exc:
                return self._fail(self._append_failed(topic, exc))
            store_ts = result.store_timestamp
            offsets = result.record_offsets
            last_phys = offsets[-1] if offsets else result.wrote_offset
            try:
                dispatcher.dispatch_appended_batch(
                    topic, queue_id, units, result.logics_offset, index_keys, last_phys, store_ts
                )
            except OSError:
                self._logics_failed(topic)
            self.stats.on_put(topic, count, result.wrote_bytes)
        first = result.logics_offset + 1  # the batch's arrivals, told as a plain run's are
        self._tell_arrivals([(topic, queue_id, first + i, code) for i, code in enumerate(tags)], store_ts, None)
        return PutMessageResult(_PUT_OK, result)
