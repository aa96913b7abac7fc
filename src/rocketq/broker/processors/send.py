"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320).

Sends are queued (bounded) and written by one task, like Java's send thread pool: a send that waited longer
than ``waitTimeMillsInSendQueue`` is answered SYSTEM_BUSY instead of being stored, and a full queue refuses new
sends at once — memory stays bounded however many clients pile on. Under SYNC_FLUSH the answer is written when
the group-commit flush covering the message completes, without blocking the writer.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import deque
from typing import TYPE_CHECKING

from rocketq.broker.topic_manager import (
    DLQ_PREFIX,
    NOT_ALLOWED_SEND_TOPICS,
    RETRY_PREFIX,
    topic_name_error,
)
from rocketq.codes import VERSION_V3_4_9, RequestCode, ResponseCode
from rocketq.errors import BrokerError, ProtocolError
from rocketq.protocol.bodies import PERM_READ, PERM_WRITE
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    SendMessageRequestHeader,
    send_header_from_v2,
)
from rocketq.protocol.message import (
    PROP_CLUSTER,
    decode_properties,
)
from rocketq.remoting.connection import Connection
from rocketq.store import StoreBatch, StoreMessage

if TYPE_CHECKING:
    from rocketq.broker.controller import BrokerController

log = logging.getLogger("rocketq.broker.send")

_STATUS_TO_CODE = {
    "PUT_OK": (ResponseCode.SUCCESS, None),
    "FLUSH_DISK_TIMEOUT": (ResponseCode.FLUSH_DISK_TIMEOUT, None),
    "FLUSH_SLAVE_TIMEOUT": (ResponseCode.FLUSH_SLAVE_TIMEOUT, None),
    "SLAVE_NOT_AVAILABLE": (ResponseCode.SLAVE_NOT_AVAILABLE, None),
    "CREATE_MAPPED_FILE_FAILED": (ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."),
    "MESSAGE_ILLEGAL": (ResponseCode.MESSAGE_ILLEGAL, "the message is illegal, maybe msg body or properties too long"),
    "PROPERTIES_SIZE_EXCEEDED": (ResponseCode.MESSAGE_ILLEGAL, "the message properties are too long"),
    "SERVICE_NOT_AVAILABLE": (
        ResponseCode.SERVICE_NOT_AVAILABLE,
        "service not available now. It may be caused by one of the following reasons: "
        "the broker's disk is full, messages are put to the slave, permission denied",
    ),
    "OS_PAGECACHE_BUSY": (ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"),
}


class SendProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self.config = broker.config
        self._queue: deque[tuple[Connection, RemotingCommand, float]] = deque()
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.store_host = (self.config.brokerIP1, self.config.listenPort)

    def register(self) -> None:
        d = self.broker.dispatcher
        for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
            d.register(code, self.enqueue)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._writer())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    # ---------------------------------------------------------------------------------------- queueing

    def enqueue(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        if len(self._queue) >= self.config.sendQueueCapacity:
            return self._busy(cmd, "[OVERLOAD]system busy, start flow control for a while")
        self._queue.append((conn, cmd, time.monotonic()))
        self._wakeup.set()
        return None

    async def _writer(self) -> None:
        limit = self.config.waitTimeMillsInSendQueue / 1000.0
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            queue = self._queue
            # Process what is queued now; yield to the loop between bursts so reads keep flowing.
            for _ in range(len(queue)):
                conn, cmd, enqueued = queue.popleft()
                if conn.closed:
                    continue
                if time.monotonic() - enqueued > limit:
                    resp = self._busy(
                        cmd,
                        f"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: "
                        f"{int((time.monotonic() - enqueued) * 1000)}ms, size of queue: {len(queue)}",
                    )
                else:
                    try:
                        resp = self.process(conn, cmd)
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
            if queue:
                self._wakeup.set()
                await asyncio.sleep(0)

    def queue_size(self) -> int:
        return len(self._queue)

    def _busy(self, cmd: RemotingCommand, remark: str) -> RemotingCommand:
        return self._response(cmd, ResponseCode.SYSTEM_BUSY, remark)

    def _response(
        self, cmd: RemotingCommand, code: int, remark: str | None, ext: dict[str, str] | None = None
    ) -> RemotingCommand:
        fields = dict(ext) if ext else {}
        # Java adds these to every send response; Java clients dereference the map unconditionally.
        fields["MSG_REGION"] = self.config.regionId
        fields["TRACE_ON"] = "true" if self.config.traceOn else "false"
        return cmd.response(code, remark, fields)

    # ------------------------------------------------------------------------------------- processing

    def process(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        if cmd.code == RequestCode.SEND_MESSAGE:
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
        error = topic_name_error(topic)
        if error is not None:
            return self._response(cmd, ResponseCode.SYSTEM_ERROR, error)
        if topic in NOT_ALLOWED_SEND_TOPICS:
            return self._response(cmd, ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden.")
        topics = self.broker.topics
        tc = topics.get(topic)
        if tc is None:
            if topic.startswith(RETRY_PREFIX):
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
        if len(cmd.body) > cfg.maxMessageSize:
            return self._response(
                cmd, ResponseCode.MESSAGE_ILLEGAL, f"the message body size {len(cmd.body)} > {cfg.maxMessageSize}"
            )
        properties = decode_properties(header.properties or "")
        reconsume_times = header.reconsume_times or 0
        # %RETRY% sends beyond the group's max go to the dead-letter queue (handleRetryAndDLQ).
        if topic.startswith(RETRY_PREFIX):
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
        properties[PROP_CLUSTER] = cfg.brokerClusterName
        msg = StoreMessage(
            topic=topic,
            queue_id=queue_id,
            body=bytes(cmd.body),
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
        msg = self.broker.semantics.before_put(msg)
        result = self.broker.store.put_message(msg)
        return self._finish(conn, cmd, result, queue_id_for_reply=queue_id)

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
        return self._finish(conn, cmd, result, queue_id_for_reply=queue_id)

    def _finish(
        self, conn: Connection, cmd: RemotingCommand, result: object, queue_id_for_reply: int
    ) -> RemotingCommand | None:
        status = result.status.name  # type: ignore[attr-defined]
        append = result.append_result  # type: ignore[attr-defined]
        code, remark = _STATUS_TO_CODE.get(status, (ResponseCode.SYSTEM_ERROR, f"UNKNOWN_ERROR {status}"))
        if append is None or code not in (
            ResponseCode.SUCCESS,
            ResponseCode.FLUSH_DISK_TIMEOUT,
            ResponseCode.FLUSH_SLAVE_TIMEOUT,
            ResponseCode.SLAVE_NOT_AVAILABLE,
        ):
            return self._response(cmd, code, remark)
        ext = {
            "msgId": append.msg_id,
            "queueId": str(queue_id_for_reply),
            "queueOffset": str(append.logics_offset),
        }
        self.broker.stats.on_put(append.msg_num, append.wrote_bytes)
        if code == ResponseCode.SUCCESS and self.broker.sync_flush:
            # Group commit: answer when the flush that covers this record is done.
            end = append.wrote_offset + append.wrote_bytes
            loop = asyncio.get_running_loop()

            def flushed(ok: bool) -> None:
                loop.call_soon_threadsafe(self._reply_after_flush, conn, cmd, ok, ext)

            self.broker.store.request_flush(end, flushed)
            return None
        return self._response(cmd, code, remark, ext)

    def _reply_after_flush(self, conn: Connection, cmd: RemotingCommand, ok: bool, ext: dict[str, str]) -> None:
        if cmd.is_oneway:
            return
        code = ResponseCode.SUCCESS if ok else ResponseCode.FLUSH_DISK_TIMEOUT
        resp = self._response(cmd, code, None, ext)
        resp.opaque = cmd.opaque
        conn.write(resp)
