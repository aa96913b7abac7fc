"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320).

Sends are queued (bounded) and written in bursts by one loop callback, like Java's send thread pool: a send
that waited longer than ``waitTimeMillsInSendQueue`` is answered SYSTEM_BUSY instead of being stored, and a full
queue refuses new sends at once — memory stays bounded however many clients pile on. The drain is a plain
``call_soon`` callback (no task, no event): it handles what is queued when it runs, then yields to the loop.

Under SYNC_FLUSH the answer is written when the group-commit flush covering the message completes, without
blocking the writer. The store calls back from its flush thread once per request; those completions go into a
thread-safe deque and reach the loop through one ``call_soon_threadsafe`` per batch (the first completion of a
batch schedules the drain, the rest find it pending), so one flush serving N requests costs one hop, not N. A
message whose ``WAIT`` property is ``false`` (``isWaitStoreMsgOK``) is answered at once, as Java's
``CommitLog.handleDiskFlush`` does: the flush is requested (the flush service is woken) but not waited for.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import deque
from typing import TYPE_CHECKING

from rocketq.broker.semantics import SPECIAL_PROPERTIES
from rocketq.broker.topic_manager import (
    DLQ_PREFIX,
    NOT_ALLOWED_SEND_TOPICS,
    RETRY_PREFIX,
    topic_name_error,
)
from rocketq.codes import CURRENT_VERSION, VERSION_V3_4_9, RequestCode, ResponseCode
from rocketq.errors import BrokerError, ProtocolError
from rocketq.protocol.bodies import PERM_READ, PERM_WRITE
from rocketq.protocol.command import FLAG_ONEWAY, SERIALIZE_JSON, RemotingCommand
from rocketq.protocol.framecodec import encode_send_reply
from rocketq.protocol.headers import (
    SendMessageRequestHeader,
    send_header_from_v2,
)
from rocketq.protocol.message import (
    PROP_CLUSTER,
    PROP_DELAY,
    PROP_WAIT,
    SYSFLAG_TX_MASK,
    canonical_properties_text,
    decode_properties,
    encode_host,
    plain_properties,
)
from rocketq.remoting.connection import Connection
from rocketq.store import PutMessageStatus, StoreBatch, StoreMessage
from rocketq.store.message import PlainMessage

if TYPE_CHECKING:
    from rocketq.broker.controller import BrokerController

log = logging.getLogger("rocketq.broker.send")

_STATUS_TO_CODE = {
    "PUT_OK": (ResponseCode.SUCCESS, None),
    "FLUSH_DISK_TIMEOUT": (ResponseCode.FLUSH_DISK_TIMEOUT, None),
    "FLUSH_SLAVE_TIMEOUT": (ResponseCode.FLUSH_SLAVE_TIMEOUT, None),
    "SLAVE_NOT_AVAILABLE": (ResponseCode.SLAVE_NOT_AVAILABLE, None),
    "CREATE_MAPPED_FILE_FAILED": (ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."),
    # the store's (and Java's) spelling of the same status
    "CREATE_MAPEDFILE_FAILED": (ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."),
    "MESSAGE_ILLEGAL": (ResponseCode.MESSAGE_ILLEGAL, "the message is illegal, maybe msg body or properties too long"),
    "PROPERTIES_SIZE_EXCEEDED": (ResponseCode.MESSAGE_ILLEGAL, "the message properties are too long"),
    "SERVICE_NOT_AVAILABLE": (
        ResponseCode.SERVICE_NOT_AVAILABLE,
        "service not available now. It may be caused by one of the following reasons: "
        "the broker's disk is full, messages are put to the slave, permission denied",
    ),
    "OS_PAGECACHE_BUSY": (ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"),
}
# The same table keyed by the enum member: no ``.name`` descriptor call per message.
_CODE_OF_STATUS = {s: _STATUS_TO_CODE[s.name] for s in PutMessageStatus if s.name in _STATUS_TO_CODE}
_PUT_OK = PutMessageStatus.PUT_OK
# Codes whose answer carries the message id and offsets (the message is stored).
_STORED_CODES = frozenset(
    {
        ResponseCode.SUCCESS,
        ResponseCode.FLUSH_DISK_TIMEOUT,
        ResponseCode.FLUSH_SLAVE_TIMEOUT,
        ResponseCode.SLAVE_NOT_AVAILABLE,
    }
)
# Plain ints for the codes every send compares against: an enum member lookup costs ~80 ns on Python 3.11
# (EnumType.__getattr__ takes every class attribute off the fast path).
_SUCCESS = int(ResponseCode.SUCCESS)
_SEND_MESSAGE_V1 = int(RequestCode.SEND_MESSAGE)
# A send naming one of these is not stored in a run: the semantics rewrite it, the store rewrites a delay level,
# and the broker's CLUSTER replaces the client's (``process`` re-encodes the properties then).
_NOT_IN_A_RUN = (*SPECIAL_PROPERTIES, PROP_DELAY, PROP_CLUSTER)
# Topic names already validated (valid and sendable); bounded so random names cannot grow it forever.
_VALID_TOPICS_MAX = 65536


def _flush_not_awaited(ok: bool) -> None:
    """Flush callback of a ``WAIT=false`` send: nobody waits for it."""


class SendProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self.config = broker.config
        self._queue: deque[tuple[Connection, RemotingCommand, float]] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._drain_handle: asyncio.Handle | None = None
        self._started = False
        self.store_host = (self.config.brokerIP1, self.config.listenPort)
        self._cluster_name = ""
        self._cluster_bytes = b""
        self._valid_topics: set[str] = set()
        #: valid, sendable topics that are not retry topics: their plain sends may take the run (see ``_drain``)
        self._plain_topics: set[str] = set()
        # SYNC_FLUSH completions (conn, cmd, response ext, flushed ok), appended by the store's flush thread.
        self._flushed: deque[tuple[Connection, RemotingCommand, dict[str, str], bool]] = deque()
        self._flushed_drain_pending = False
        #: hops from the flush thread to the loop, and the answers they carried (group commit at work)
        self.flush_hops = 0
        self.flush_replies = 0

    @property
    def store_host(self) -> tuple[str, int]:
        """The host stored in each record (set again once the listening port is known)."""
        return self._store_host

    @store_host.setter
    def store_host(self, host: tuple[str, int]) -> None:
        self._store_host = host
        #: the fixed half of every offset message id answered (the store host in hex)
        self._msg_id_prefix = encode_host(host).hex().upper()

    @property
    def _cluster_property(self) -> bytes:
        """``CLUSTER`` as the broker adds it to every stored message's properties (encoded once per name)."""
        name = self.config.brokerClusterName
        if name != self._cluster_name:
            self._cluster_name = name
            self._cluster_bytes = f"{PROP_CLUSTER}\x01{name}\x02".encode()
        return self._cluster_bytes

    def register(self) -> None:
        d = self.broker.dispatcher
        for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
            d.register(code, self.enqueue)

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._started = True
        if self._queue:
            self._schedule_drain()

    async def stop(self) -> None:
        self._started = False
        if self._drain_handle is not None:
            self._drain_handle.cancel()
            self._drain_handle = None

    # ---------------------------------------------------------------------------------------- queueing

    def enqueue(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        queue = self._queue
        if len(queue) >= self.config.sendQueueCapacity:
            return self._busy(cmd, "[OVERLOAD]system busy, start flow control for a while")
        queue.append((conn, cmd, time.monotonic()))
        if self._drain_handle is None and self._started:
            self._schedule_drain()
        return None

    def _schedule_drain(self) -> None:
        loop = self._loop
        assert loop is not None
        self._drain_handle = loop.call_soon(self._drain)

    def _drain(self) -> None:
        self._drain_handle = None
        limit = self.config.waitTimeMillsInSendQueue / 1000.0
        queue = self._queue
        monotonic = time.monotonic
        # Plain sends (most of them) are stored as runs: one store call for consecutive ones, which shares the
        # lock, the clock and the stats; anything else goes through ``process`` after the run before it.
        prepare = self._prepare if self._run_open() else None
        run: list[PlainMessage] = []
        senders: list[tuple[Connection, RemotingCommand]] = []
        # Process what is queued now; yield to the loop between bursts so reads keep flowing.
        for _ in range(len(queue)):
            conn, cmd, enqueued = queue.popleft()
            if conn.closed:
                continue
            waited = monotonic() - enqueued
            if waited > limit:
                resp: RemotingCommand | None = self._busy(
                    cmd,
                    f"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: "
                    f"{int(waited * 1000)}ms, size of queue: {len(queue)}",
                )
            else:
                header = None
                if prepare is not None:
                    try:
                        prepared = prepare(conn, cmd)
                    except Exception:  # a bug here must not lose the run: this send goes the general way
                        log.exception("send.prepare_failed remote=%s", conn.remote)
                        prepared = None
                    if isinstance(prepared, tuple):
                        run.append(prepared)
                        senders.append((conn, cmd))
                        continue
                    header = prepared
                if run:  # the store keeps arrival order: the run before this send is written first
                    self._store_run(run, senders)
                    run, senders = [], []
                try:
                    resp = self.process(conn, cmd, header)
                except BrokerError as exc:
                    resp = self._response(cmd, exc.code, exc.remark)
                except ProtocolError as exc:
                    resp = self._response(cmd, ResponseCode.SYSTEM_ERROR, str(exc))
                except Exception as exc:
                    log.exception("send.failed remote=%s", conn.remote)
                    resp = self._response(cmd, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
            if resp is not None and not cmd.is_oneway:
                resp.opaque = cmd.opaque
                conn.write(resp)
        if run:
            self._store_run(run, senders)
        if queue and self._started and self._drain_handle is None:
            self._schedule_drain()

    def _run_open(self) -> bool:
        """Runs are for a writable master under ASYNC_FLUSH (SYNC_FLUSH answers wait for their own flush)."""
        cfg = self.config
        return bool(cfg.brokerPermission & PERM_WRITE) and not cfg.is_slave and not self.broker.sync_flush

    def _prepare(
        self, conn: Connection, cmd: RemotingCommand
    ) -> PlainMessage | SendMessageRequestHeader | None:
        """The send as a store run's message when it is plain — a single message, no transaction, delay or
        delivery time, to an existing writable topic that is not a retry topic, an explicit queue, properties
        text stored as it came — else its header for ``process`` (None: the header is bad, ``process`` says so).
        """
        try:
            if cmd.code == _SEND_MESSAGE_V1:
                header = SendMessageRequestHeader.from_ext(cmd.ext_fields)
            else:
                header = send_header_from_v2(cmd.ext_fields)
        except ProtocolError:
            return None
        topic = header.topic
        if topic not in self._plain_topics or header.batch or header.sys_flag & SYSFLAG_TX_MASK:
            return header
        tc = self.broker.topics.get(topic)
        queue_id = header.queue_id
        if tc is None or not tc.perm & PERM_WRITE or not 0 <= queue_id < max(tc.read_queue_nums, tc.write_queue_nums):
            return header
        body = cmd.body
        if len(body) > self.config.maxMessageSize:
            return header
        plain = plain_properties(header.properties or "", _NOT_IN_A_RUN, self._cluster_property)
        if plain is None:
            return header
        stored_properties, tags, uniq_key, keys = plain
        return (
            topic, queue_id, body if type(body) is bytes else bytes(body), stored_properties, header.flag,
            header.sys_flag, header.born_timestamp, conn.remote_host, header.reconsume_times or 0, tags, uniq_key,
            keys,
        )  # fmt: skip

    def _store_run(self, run: list[PlainMessage], senders: list[tuple[Connection, RemotingCommand]]) -> None:
        """Store a run of plain sends with one store call and answer each (as ``_finish`` does)."""
        try:
            results = self.broker.store.put_plain_messages(run, self.store_host)
        except Exception as exc:  # as ``process`` answers an exception: each send of the run, SYSTEM_ERROR
            log.exception("send.run_failed sends=%d", len(run))
            for conn, cmd in senders:
                if not cmd.is_oneway:
                    conn.write(self._response(cmd, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}"))
            return
        cfg = self.config
        region = cfg.regionId
        trace_on = "true" if cfg.traceOn else "false"
        prefix = self._msg_id_prefix
        stored = stored_bytes = 0
        for (conn, cmd), message, result in zip(senders, run, results, strict=True):
            if isinstance(result, tuple):
                phys, queue_offset, size = result
                stored += 1
                stored_bytes += size
                if cmd.flag & FLAG_ONEWAY:
                    continue
                if cmd.serialize_type == SERIALIZE_JSON or cmd.language == "CPP":  # the answer is JSON
                    conn.write_frame(
                        encode_send_reply(
                            cmd.opaque, CURRENT_VERSION, prefix, phys, message[1], queue_offset, region, trace_on
                        )
                    )
                    continue
                fields = self._stored_fields(f"{prefix}{phys:016X}", message[1], queue_offset)
                resp = cmd.response(_SUCCESS, None, fields)
            elif cmd.flag & FLAG_ONEWAY:
                continue
            else:
                code, remark = _CODE_OF_STATUS.get(result, (ResponseCode.SYSTEM_ERROR, f"UNKNOWN_ERROR {result}"))
                resp = self._response(cmd, code, remark)
            conn.write(resp)
        if stored:
            self.broker.stats.on_put(stored, stored_bytes)

    def queue_size(self) -> int:
        return len(self._queue)

    def _busy(self, cmd: RemotingCommand, remark: str) -> RemotingCommand:
        return self._response(cmd, ResponseCode.SYSTEM_BUSY, remark)

    def _response(
        self, cmd: RemotingCommand, code: int, remark: str | None, ext: dict[str, str] | None = None
    ) -> RemotingCommand:
        """A send response; ``ext`` (if given) is taken over, not copied."""
        fields = ext if ext is not None else {}
        # Java adds these to every send response; Java clients dereference the map unconditionally.
        cfg = self.config
        fields["MSG_REGION"] = cfg.regionId
        fields["TRACE_ON"] = "true" if cfg.traceOn else "false"
        return cmd.response(code, remark, fields)

    def _stored_fields(self, msg_id: str, queue_id: int, queue_offset: int) -> dict[str, str]:
        """The extFields of a stored send's answer (what ``encode_send_reply`` writes for a JSON one)."""
        cfg = self.config
        return {
            "msgId": msg_id,
            "queueId": str(queue_id),
            "queueOffset": str(queue_offset),
            # Java adds these to every send response; Java clients dereference the map unconditionally.
            "MSG_REGION": cfg.regionId,
            "TRACE_ON": "true" if cfg.traceOn else "false",
        }

    def _remember_valid_topic(self, topic: str) -> None:
        valid = self._valid_topics
        if len(valid) >= _VALID_TOPICS_MAX:
            valid.clear()
            self._plain_topics.clear()
        valid.add(topic)
        if not topic.startswith(RETRY_PREFIX):
            self._plain_topics.add(topic)

    # ------------------------------------------------------------------------------------- processing

    def process(
        self, conn: Connection, cmd: RemotingCommand, header: SendMessageRequestHeader | None = None
    ) -> RemotingCommand | None:
        """Store one send and answer it (or return None to answer after its flush); ``header`` if parsed already."""
        if header is None:
            if cmd.code == _SEND_MESSAGE_V1:
                header = SendMessageRequestHeader.from_ext(cmd.ext_fields)
            else:
                header = send_header_from_v2(cmd.ext_fields)
        cfg = self.config
        if not cfg.brokerPermission & PERM_WRITE:
            return self._response(
                cmd, ResponseCode.NO_PERMISSION, f"the broker[{cfg.brokerIP1}] sending message is forbidden"
            )
        if cfg.is_slave:
            return self._response(cmd, ResponseCode.SERVICE_NOT_AVAILABLE, "the broker is a slave, send refused")
        topic = header.topic
        if topic not in self._valid_topics:  # the name rules are a pure function of the name: checked once
            error = topic_name_error(topic)
            if error is not None:
                return self._response(cmd, ResponseCode.SYSTEM_ERROR, error)
            if topic in NOT_ALLOWED_SEND_TOPICS:
                return self._response(
                    cmd, ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden."
                )
            self._remember_valid_topic(topic)
        topics = self.broker.topics
        tc = topics.get(topic)
        is_retry = topic.startswith(RETRY_PREFIX)
        if tc is None:
            if is_retry:
                group_cfg = self.broker.groups.find_or_create(topic[len(RETRY_PREFIX) :])
                nums = group_cfg.retry_queue_nums if group_cfg else 1
                tc = topics.create_system_if_absent(topic, nums)
            else:
                tc = topics.create_in_send(topic, header.default_topic, header.default_topic_queue_nums)
            if tc is None:
                return self._response(
                    cmd,
                    ResponseCode.TOPIC_NOT_EXIST,
                    f"topic[{topic}] not exist, apply first please! (auto-create is off)",
                )
            self.broker.schedule_register()
        if not tc.perm & PERM_WRITE:
            return self._response(cmd, ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden")
        queue_id = header.queue_id
        id_valid = max(tc.read_queue_nums, tc.write_queue_nums)
        if queue_id >= id_valid:
            return self._response(
                cmd,
                ResponseCode.SYSTEM_ERROR,
                f"request queueId[{queue_id}] is illegal, topic: {tc} producer: {conn.remote}",
            )
        if queue_id < 0:
            queue_id = random.randrange(max(1, tc.write_queue_nums))
        body = cmd.body
        if len(body) > cfg.maxMessageSize:
            return self._response(
                cmd, ResponseCode.MESSAGE_ILLEGAL, f"the message body size {len(body)} > {cfg.maxMessageSize}"
            )
        properties_text = header.properties or ""
        properties = decode_properties(properties_text)
        reconsume_times = header.reconsume_times or 0
        # %RETRY% sends beyond the group's max go to the dead-letter queue (handleRetryAndDLQ).
        if is_retry:
            group = topic[len(RETRY_PREFIX) :]
            group_cfg = self.broker.groups.find_or_create(group)
            if group_cfg is None:
                return self._response(
                    cmd, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}"
                )
            max_times = group_cfg.retry_max_times
            if header.max_reconsume_times is not None and conn.version > VERSION_V3_4_9:
                max_times = header.max_reconsume_times
            if reconsume_times >= max_times:
                topic = DLQ_PREFIX + group
                topics.create_system_if_absent(topic, 1, PERM_READ | PERM_WRITE)
                self.broker.schedule_register()
                queue_id = 0
        if header.batch:
            return self._send_batch(conn, cmd, header, topic, queue_id, properties)
        cluster = cfg.brokerClusterName
        # The request's own text is stored when it encodes exactly what was decoded (what our clients and
        # Apache's send, Java's without the last separator); anything else is encoded again from the dict, as
        # Java always does.
        canonical = canonical_properties_text(properties_text, len(properties))
        stored_text = (
            f"{canonical}{PROP_CLUSTER}\x01{cluster}\x02"
            if canonical is not None and PROP_CLUSTER not in properties
            else None
        )
        properties[PROP_CLUSTER] = cluster
        msg = StoreMessage(
            topic=topic,
            queue_id=queue_id,
            body=body if type(body) is bytes else bytes(body),
            flag=header.flag,
            properties=properties,
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=conn.remote_host,
            store_host=self.store_host,
            reconsume_times=reconsume_times,
            prepared_transaction_offset=0,
            tags_code=None,
        )
        semantics = self.broker.semantics
        if semantics.is_plain(properties):
            msg.properties_str = stored_text
        else:
            msg = semantics.before_put(msg)  # rewrites the properties: the store encodes them itself
        result = self.broker.store.put_message(msg)
        wait = properties.get(PROP_WAIT) != "false"
        return self._finish(conn, cmd, result, queue_id_for_reply=queue_id, wait=wait)

    def _send_batch(
        self,
        conn: Connection,
        cmd: RemotingCommand,
        header: SendMessageRequestHeader,
        topic: str,
        queue_id: int,
        batch_props: dict[str, str],
    ) -> RemotingCommand | None:
        if topic.startswith(RETRY_PREFIX):
            return self._response(cmd, ResponseCode.MESSAGE_ILLEGAL, "batch request does not support retry group")
        # the body goes to the store as it came: the store's batch encoder writes the records straight from it
        batch_props[PROP_CLUSTER] = self.config.brokerClusterName
        batch = StoreBatch(
            topic=topic,
            queue_id=queue_id,
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=conn.remote_host,
            store_host=self.store_host,
            body=cmd.body,
            properties=batch_props,
        )
        result = self.broker.store.put_messages(batch)
        # WAIT=false on the batch: answered without waiting for the flush, as Java's putMessages does
        return self._finish(conn, cmd, result, queue_id_for_reply=queue_id, wait=batch_props.get(PROP_WAIT) != "false")

    def _finish(
        self, conn: Connection, cmd: RemotingCommand, result: object, queue_id_for_reply: int, wait: bool = True
    ) -> RemotingCommand | None:
        """Answer a put. ``wait`` False (``WAIT=false``): under SYNC_FLUSH answer without waiting for the flush."""
        status = result.status  # type: ignore[attr-defined]
        append = result.append_result  # type: ignore[attr-defined]
        if status is _PUT_OK:
            code: int = _SUCCESS
            remark = None
        else:
            found = _CODE_OF_STATUS.get(status)
            if found is None:
                name = getattr(status, "name", str(status))
                found = _STATUS_TO_CODE.get(name, (ResponseCode.SYSTEM_ERROR, f"UNKNOWN_ERROR {name}"))
            code, remark = found
        if append is None or code not in _STORED_CODES:
            return self._response(cmd, code, remark)
        ext = self._stored_fields(append.msg_id, queue_id_for_reply, append.logics_offset)
        self.broker.stats.on_put(append.msg_num, append.wrote_bytes)
        if code == _SUCCESS and self.broker.sync_flush:
            end = append.wrote_offset + append.wrote_bytes
            if not wait:
                # isWaitStoreMsgOK() false: Java wakes the flush service and answers at once.
                self.broker.store.request_flush(end, _flush_not_awaited)
                return cmd.response(code, remark, ext)
            # Group commit: answer when the flush that covers this record is done.
            done = self._flushed
            loop = self._loop or asyncio.get_running_loop()

            def flushed(ok: bool) -> None:  # any thread
                done.append((conn, cmd, ext, ok))
                if not self._flushed_drain_pending:
                    self._flushed_drain_pending = True
                    loop.call_soon_threadsafe(self._reply_flushed)

            self.broker.store.request_flush(end, flushed)
            return None
        return cmd.response(code, remark, ext)

    def _reply_flushed(self) -> None:
        """Answer every completed flush request (one hop from the flush thread for the whole batch)."""
        # Cleared before draining: a completion appended after this point schedules its own hop, and one
        # appended before it is drained below (a spare hop finds the deque empty; nothing is ever stranded).
        self._flushed_drain_pending = False
        self.flush_hops += 1
        done = self._flushed
        replies = 0
        while done:
            conn, cmd, ext, ok = done.popleft()
            replies += 1
            self._reply_after_flush(conn, cmd, ok, ext)
        self.flush_replies += replies

    def _reply_after_flush(self, conn: Connection, cmd: RemotingCommand, ok: bool, ext: dict[str, str]) -> None:
        if cmd.is_oneway:
            return
        code = ResponseCode.SUCCESS if ok else ResponseCode.FLUSH_DISK_TIMEOUT
        resp = cmd.response(code, None, ext)
        resp.opaque = cmd.opaque
        conn.write(resp)
