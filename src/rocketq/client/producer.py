"""The producer (Java ``DefaultMQProducer`` / ``DefaultMQProducerImpl``), asyncio-native: the public API, the
route lookup, the queue choice and the retry policy.

Send modes:

* ``await producer.send(msg)`` — synchronous semantics: waits for the broker's answer; on a transport error or
  a retriable broker code it retries up to ``retry_times_when_send_failed`` times, each time on a queue of
  *another* broker when there is one;
* ``producer.send_async(msg, on_success=..., on_exception=...)`` — returns a future at once; the callbacks (and
  the future) get the outcome. Transport failures are retried ``retry_times_when_send_async_failed`` times on the
  *same* broker;
* ``await producer.send_oneway(msg)`` — fire and forget (flag ONEWAY, no answer);
* ``queue=`` or ``selector=``/``arg=`` on any of them send to one chosen queue (no retry); ``send_orderly(msg,
  key)`` is ``selector=select_by_hash``;
* ``send_batch(msgs)`` — one SEND_BATCH_MESSAGE per ≤ ``max_message_size`` chunk of the list;
* ``auto_batch=True`` (RocketMQ 5.1's ``autoBatch``, off by default) gathers plain ``send`` / ``send_async`` calls
  into batch requests, up to ``batch_max_bytes`` or ``batch_max_delay_ms``, each send settled with its own
  result (``_accumulator``); selector sends, one-way sends, delayed messages and transactions go directly.

Requests are those of a Java 4.9.8 client: SEND_MESSAGE_V2 (310) / SEND_BATCH_MESSAGE (320) with the V2 header
keys, a ``UNIQ_KEY`` per message, zlib bodies from ``compress_msg_body_over_howmuch`` bytes with sysFlag
``0x1 | 0x300``, and ``TBW102`` as ``defaultTopic`` so the broker can create unknown topics.

The roles around it have their own modules: the request builder (``_send_request``), how an asynchronous send
completes and is retried on its broker (``_async_send``), and the transaction producer
(``transaction_producer``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import logging
import time
from collections.abc import Awaitable, Coroutine, Sequence
from typing import Any

from rocketq.client._accumulator import (
    DEFAULT_BATCH_MAX_BYTES,
    DEFAULT_BATCH_MAX_DELAY_MS,
    DEFAULT_TOTAL_BATCH_MAX_BYTES,
    ProduceAccumulator,
)
from rocketq.client._async_send import (
    ExceptionCallback,
    SendCallback,
    SendFuture,
    close_async_sends,
    send_with_retry,
)
from rocketq.client._client_base import ClientBase
from rocketq.client._instance import ClientInstance, unique_instance_name
from rocketq.client._route import TopicPublishInfo
from rocketq.client._send_request import COMPRESSION_ZLIB_FLAG as COMPRESSION_ZLIB_FLAG  # its old home
from rocketq.client._send_request import MessageBatch, build_send_request, split_into_batches
from rocketq.client._tasks import TaskSet
from rocketq.client._uniq_id import UniqIdGenerator
from rocketq.client._validators import check_message
from rocketq.client.config import ClientConfig
from rocketq.client.errors import (
    BrokerNotFoundError,
    InvalidMessageError,
    SendFailedError,
    SendTimeoutError,
)
from rocketq.client.gathering import gather
from rocketq.client.latency import MQFaultStrategy
from rocketq.client.message import Message, MessageExt, SendResult, SendStatus
from rocketq.client.selectors import MessageQueueSelector, select_by_hash
from rocketq.client.trace import MAX_MSG_SIZE as TRACE_MAX_MSG_SIZE
from rocketq.client.trace import SEND_TIMEOUT as TRACE_SEND_TIMEOUT
from rocketq.client.trace import TraceDispatcher, inner_producer_group, pub_context
from rocketq.codes import ResponseCode
from rocketq.errors import BrokerError, ClientError, RemotingError
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import CheckTransactionStateRequestHeader
from rocketq.protocol.topics import AUTO_CREATE_TOPIC

__all__ = ["Producer"]

log = logging.getLogger("rocketq.client.producer")

DEFAULT_PRODUCER_GROUP = "DEFAULT_PRODUCER"
#: Java ``DefaultMQProducer.retryResponseCodes``.
DEFAULT_RETRY_RESPONSE_CODES = frozenset(
    {
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.NO_PERMISSION,
        ResponseCode.NO_BUYER_ID,
        ResponseCode.NOT_IN_CURRENT_UNIT,
    }
)


class _Mode(enum.Enum):
    SYNC = "SYNC"
    ASYNC = "ASYNC"
    ONEWAY = "ONEWAY"


# The members as module globals: an enum member lookup costs ~80 ns on Python 3.11 (EnumType.__getattr__
# takes every class attribute off the fast path), and a send looks these up several times.
_SYNC, _ASYNC, _ONEWAY = _Mode.SYNC, _Mode.ASYNC, _Mode.ONEWAY
_SEND_OK = SendStatus.SEND_OK


class Producer(ClientBase):
    """Sends messages. Use as ``async with Producer("group", namesrv_addr="127.0.0.1:9876") as p: ...``.

    Durations are seconds. ``retry_times_when_send_failed`` (2) extra attempts for ``send``;
    ``retry_times_when_send_async_failed`` (2) for ``send_async``; ``send_latency_fault_enable`` turns on
    latency-based broker avoidance (see ``rocketq.client.latency``).
    """

    def __init__(
        self,
        group: str = DEFAULT_PRODUCER_GROUP,
        *,
        namesrv_addr: str | None = None,
        config: ClientConfig | None = None,
        send_msg_timeout: float = 3.0,
        retry_times_when_send_failed: int = 2,
        retry_times_when_send_async_failed: int = 2,
        retry_another_broker_when_not_store_ok: bool = False,
        compress_msg_body_over_howmuch: int = 4096,
        compress_level: int = 5,
        max_message_size: int = 4 * 1024 * 1024,
        default_topic_queue_nums: int = 4,
        create_topic_key: str = AUTO_CREATE_TOPIC,
        send_latency_fault_enable: bool = False,
        retry_response_codes: frozenset[int] = DEFAULT_RETRY_RESPONSE_CODES,
        enable_msg_trace: bool = False,
        customized_trace_topic: str | None = None,
        auto_batch: bool = False,
        batch_max_delay_ms: int = DEFAULT_BATCH_MAX_DELAY_MS,
        batch_max_bytes: int = DEFAULT_BATCH_MAX_BYTES,
        total_batch_max_bytes: int = DEFAULT_TOTAL_BATCH_MAX_BYTES,
    ) -> None:
        super().__init__(group, namesrv_addr, config)
        #: Java 5.1's autoBatch: plain sends gathered into batch requests (``_accumulator``); off as in Java
        self.auto_batch = auto_batch
        self._accumulator = ProduceAccumulator(self, batch_max_delay_ms, batch_max_bytes, total_batch_max_bytes)
        #: Java's enableMsgTrace / customizedTraceTopic: Pub (and EndTransaction) traces (docs/trace.md)
        self.enable_msg_trace = enable_msg_trace
        self.customized_trace_topic = customized_trace_topic
        self._trace: TraceDispatcher | None = None
        self.send_msg_timeout = send_msg_timeout
        self.retry_times_when_send_failed = retry_times_when_send_failed
        self.retry_times_when_send_async_failed = retry_times_when_send_async_failed
        self.retry_another_broker_when_not_store_ok = retry_another_broker_when_not_store_ok
        self.compress_msg_body_over_howmuch = compress_msg_body_over_howmuch
        self.compress_level = compress_level
        self.max_message_size = max_message_size
        self.default_topic_queue_nums = default_topic_queue_nums
        self.create_topic_key = create_topic_key
        self.retry_response_codes = retry_response_codes
        self.fault_strategy = MQFaultStrategy(send_latency_fault_enable)
        self.topic_publish_info_table: dict[str, TopicPublishInfo] = {}
        self._owns_instance = True
        self._tasks = TaskSet(log)
        self._id_gen: UniqIdGenerator | None = None
        #: send_async futures in flight on the task-less path (shutdown waits for them like for the tasks)
        self._async_in_flight: set[SendFuture] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- lifecycle (instance, async with: ClientBase) ------------------------------------------------------

    _kind = "producer"

    @property
    def client_id(self) -> str:
        return self.instance.client_id

    async def start(self, instance: ClientInstance | None = None) -> None:
        """Connect lazily and start the background work. ``instance`` shares another client's instance."""
        if self._running:
            return
        if instance is None:
            if self.config.instance_name == "DEFAULT":
                self.config.instance_name = unique_instance_name()
            instance = ClientInstance(self.config)
            self._owns_instance = True
        else:
            self._owns_instance = False
        instance.register_producer(self)
        self._instance = instance
        self._id_gen = UniqIdGenerator(self.config.client_ip)
        self._loop = asyncio.get_running_loop()  # a send's future is made on it (no per-send lookup)
        self.topic_publish_info_table.setdefault(self.create_topic_key, TopicPublishInfo())
        self._tasks = TaskSet(log)
        self._running = True
        if self._owns_instance:
            await instance.start()
        await instance.send_heartbeat_to_all_brokers()
        if self.enable_msg_trace:
            inner = trace_producer(self.group, "PRODUCE", self.config)
            self._trace = TraceDispatcher(self.group, inner, self.customized_trace_topic)
            await self._trace.start()
        log.info("producer.started group=%s client_id=%s", self.group, instance.client_id)

    async def shutdown(self) -> None:
        """Wait for in-flight async sends (up to the send timeout), unregister from the brokers, disconnect."""
        if not self._running or self._instance is None:
            return
        instance = self._instance
        self._accumulator.flush()  # what auto-batching still holds goes now; its answers are waited for below
        await close_async_sends(self._tasks, self._async_in_flight, self.send_msg_timeout)
        if self._trace is not None:  # after the sends, whose answers add the last Pub traces
            await self._trace.shutdown()
            self._trace = None
        self._running = False
        await instance.unregister_producer(self.group)
        if self._owns_instance:
            await instance.shutdown()
        log.info("producer.stopped group=%s", self.group)

    # -- ProducerInner (called by the instance) ---------------------------------------------------------------

    def publish_topics(self) -> list[str]:
        return list(self.topic_publish_info_table)

    def is_publish_topic_need_update(self, topic: str) -> bool:
        info = self.topic_publish_info_table.get(topic)
        return info is not None and not info.ok()

    def update_topic_publish_info(self, topic: str, info: TopicPublishInfo) -> None:
        self.topic_publish_info_table[topic] = info

    async def check_transaction_state(
        self, addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        log.warning("check_transaction.ignored group=%s msg_id=%s (not a TransactionProducer)", self.group, msg.msg_id)

    # -- public API ---------------------------------------------------------------------------------------

    async def send(
        self,
        msg: Message,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        timeout: float | None = None,
    ) -> SendResult:
        """Send and wait for the broker's answer. See the module docstring for retries."""
        if self.auto_batch and timeout is None and selector is None:  # the overloads Java batches
            self.instance  # noqa: B018 - raises ClientNotStartedError, as a direct send does
            loop = self._loop or asyncio.get_running_loop()
            gathered = gather(self._accumulator, msg, queue, None, None, loop, None, False)
            if gathered is not None:  # this message's share of its batch's answer
                return await (gathered if self.config.metrics is None else self._metered(msg.topic, gathered))
        timeout = self.send_msg_timeout if timeout is None else timeout
        if self.config.metrics is not None:
            return await self._metered(msg.topic, self._send(msg, queue, selector, arg, timeout))
        if queue is not None or selector is not None:  # _send's body, without a coroutine more per send
            return await self._send_to_queue(msg, queue, selector, arg, timeout, _SYNC)
        return await self._send_default(msg, timeout)

    async def _send(
        self, msg: Message, queue: MessageQueue | None, selector: MessageQueueSelector | None, arg: Any,
        timeout: float,
    ) -> SendResult:  # fmt: skip
        if queue is not None or selector is not None:
            return await self._send_to_queue(msg, queue, selector, arg, timeout, _SYNC)
        return await self._send_default(msg, timeout)

    async def _metered(self, topic: str, send: Awaitable[SendResult]) -> SendResult:
        """``send``, its cost filed under ``rocketmq_send_cost_time`` (metrics on)."""
        metrics = self.config.metrics
        assert metrics is not None
        began = time.perf_counter()
        try:
            result = await send
        except BaseException:
            metrics.on_send(topic, self.instance.client_id, began, False)
            raise
        metrics.on_send(topic, self.instance.client_id, began, True)
        return result

    def send_async(
        self,
        msg: Message,
        *,
        on_success: SendCallback | None = None,
        on_exception: ExceptionCallback | None = None,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        timeout: float | None = None,
    ) -> asyncio.Future[SendResult]:
        """Start a send and return at once. Await the returned future, or pass callbacks (or both).

        Callbacks run on the event loop and must not block; an exception in a callback is logged.
        """
        instance = self._instance
        if instance is None or not self._running:
            self.instance  # noqa: B018 - raises ClientNotStartedError early, like Java's makeSureStateOK
        loop = self._loop or asyncio.get_running_loop()
        metrics = self.config.metrics
        if self.auto_batch and timeout is None and selector is None:  # the overloads Java batches
            gathered = gather(self._accumulator, msg, queue, on_success, on_exception, loop, metrics, True)
            if gathered is not None:
                return gathered
        fut = SendFuture(loop=loop)
        fut._meter = None if metrics is None else (metrics, msg.topic, self.instance.client_id, time.perf_counter())
        timeout = self.send_msg_timeout if timeout is None else timeout
        if (
            queue is None
            and selector is None
            and fut.send_taskless(self, instance, msg, timeout, on_success, on_exception)  # type: ignore[arg-type]
        ):
            return fut
        if queue is not None or selector is not None:
            send = self._send_to_queue(msg, queue, selector, arg, timeout, _ASYNC)
        else:
            send = self._send_async_default(msg, timeout)
        fut.start_task(self, send, on_success, on_exception, f"send-async-{msg.topic}")
        return fut

    async def send_oneway(
        self,
        msg: Message,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
    ) -> None:
        """Send without waiting for (or getting) an answer."""
        if queue is not None or selector is not None:
            await self._send_to_queue(msg, queue, selector, arg, self.send_msg_timeout, _ONEWAY)
            return
        self._check_message(msg)
        info = await self._find_publish_info(msg.topic)
        mq = self.fault_strategy.select_one_message_queue(info, None)
        await self._send_kernel(msg, mq, _ONEWAY, self.send_msg_timeout)

    async def send_orderly(self, msg: Message, sharding_key: Any, *, timeout: float | None = None) -> SendResult:
        """Send to the queue picked by the hash of ``sharding_key`` (same key → same queue → ordered)."""
        return await self.send(msg, selector=select_by_hash, arg=sharding_key, timeout=timeout)

    async def send_batch(
        self, msgs: Sequence[Message], *, queue: MessageQueue | None = None, timeout: float | None = None
    ) -> list[SendResult]:
        """Send messages of one topic as batches, split so each batch body is ≤ ``max_message_size``.

        Returns one ``SendResult`` per batch sent (its ``msg_id`` lists the messages' ids, comma-separated).
        Batches cannot carry delayed messages or go to retry topics (Java ``MessageBatch`` rules).
        """
        if not msgs:
            raise InvalidMessageError("the batch is empty")
        id_gen = self._id_gen
        assert id_gen is not None
        results = []
        metered = self.config.metrics is not None
        for batch in split_into_batches(msgs, self.max_message_size, id_gen, check_message):
            if queue is not None:
                send = self._send_to_queue(batch, queue, None, None, timeout or self.send_msg_timeout, _SYNC)
            else:
                send = self._send_default(batch, timeout or self.send_msg_timeout)
            results.append(await (self._metered(batch.topic, send) if metered else send))
        return results

    def _batch_send(self, batch: MessageBatch, mq: MessageQueue | None, asynchronous: bool) -> Coroutine[
        Any, Any, SendResult]:  # fmt: skip
        """How the accumulator sends one gathered batch: as Java's ``sendDirect(batch, mq, callback)`` — the
        send's retry policy of its mode, on the gathered queue when the sends named one."""
        timeout = self.send_msg_timeout
        if mq is not None:
            return self._send_to_queue(batch, mq, None, None, timeout, _ASYNC if asynchronous else _SYNC)
        return self._send_async_default(batch, timeout) if asynchronous else self._send_default(batch, timeout)

    async def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        """The queues of ``topic`` a send may target (publish list, TBW102 fallback included)."""
        info = await self._find_publish_info(topic)
        return list(info.message_queues)

    # -- internals ----------------------------------------------------------------------------------------

    def _check_message(self, msg: Message) -> None:
        self.instance  # noqa: B018
        if isinstance(msg, MessageBatch):
            return
        check_message(msg, self.max_message_size)

    async def _find_publish_info(self, topic: str) -> TopicPublishInfo:
        """Java ``tryToFindTopicPublishInfo``: the topic's route, else the TBW102 fallback, else NoRouteError."""
        instance = self.instance
        info = self.topic_publish_info_table.get(topic)
        if info is None or not info.ok():
            self.topic_publish_info_table.setdefault(topic, TopicPublishInfo())
            await instance.update_topic_route(topic)
            info = self.topic_publish_info_table[topic]
        if not (info.have_topic_router_info or info.ok()):
            await instance.update_topic_route(
                topic, is_default=True, create_topic_key=self.create_topic_key,
                default_topic_queue_nums=self.default_topic_queue_nums,
            )  # fmt: skip
            info = self.topic_publish_info_table[topic]
        if not info.ok():
            raise await instance.api.no_route_error(topic, instance.timeout)
        return info

    def _update_fault(self, broker_name: str, begin: float, isolation: bool) -> None:
        strategy = self.fault_strategy
        if strategy.__class__ is MQFaultStrategy and not strategy.send_latency_fault_enable:
            return  # what update_fault_item does then, without reading the clock
        strategy.update_fault_item(broker_name, int((time.monotonic() - begin) * 1000), isolation)

    async def _send_default(self, msg: Message, timeout: float) -> SendResult:
        """Java ``sendDefaultImpl`` in SYNC mode."""
        self._check_message(msg)
        begin_first = time.monotonic()
        info = self.topic_publish_info_table.get(msg.topic)
        if info is None or not info.message_queues:  # not cached and ok: the general lookup (no coroutine else)
            info = await self._find_publish_info(msg.topic)
        times_total = 1 + self.retry_times_when_send_failed
        mq: MessageQueue | None = None
        result: SendResult | None = None
        last_exc: BaseException | None = None
        brokers_sent: list[str] = []
        call_timeout = False
        for _ in range(times_total):
            last_broker = mq.broker_name if mq is not None else None
            mq = self.fault_strategy.select_one_message_queue(info, last_broker)
            brokers_sent.append(mq.broker_name)
            begin = time.monotonic()
            cost = begin - begin_first
            if timeout < cost:
                call_timeout = True
                break
            try:
                sent = await self._send_kernel(msg, mq, _SYNC, timeout - cost)
                assert sent is not None
                result = sent
                self._update_fault(mq.broker_name, begin, False)
                if result.status is not _SEND_OK and self.retry_another_broker_when_not_store_ok:
                    continue
                return result
            except (RemotingError, ClientError) as exc:
                self._update_fault(mq.broker_name, begin, True)
                log.warning("send.retry topic=%s broker=%s error=%s", msg.topic, mq.broker_name, exc)
                last_exc = exc
                continue
            except BrokerError as exc:
                self._update_fault(mq.broker_name, begin, True)
                last_exc = exc
                if exc.code in self.retry_response_codes:
                    log.warning("send.retry topic=%s broker=%s error=%s", msg.topic, mq.broker_name, exc)
                    continue
                if result is not None:
                    return result
                raise
        if result is not None:
            return result
        elapsed = int((time.monotonic() - begin_first) * 1000)
        text = f"send [{len(brokers_sent)}] times, still failed, cost [{elapsed}]ms, topic: {msg.topic}, " \
               f"brokers sent: {brokers_sent}"  # fmt: skip
        if last_exc is not None:  # the cause on the line users read, not only in the warnings before it
            text += f"; last error: {last_exc}"
        if call_timeout:
            raise SendTimeoutError(f"send timed out after {timeout}s; {text}", brokers_sent, last_exc) from last_exc
        raise SendFailedError(text, brokers_sent, last_exc) from last_exc

    async def _send_async_default(self, msg: Message, timeout: float) -> SendResult:
        """Java ASYNC mode: one queue; transport failures retried on the same broker."""
        self._check_message(msg)
        begin_first = time.monotonic()
        info = await self._find_publish_info(msg.topic)
        mq = self.fault_strategy.select_one_message_queue(info, None)
        if timeout < time.monotonic() - begin_first:
            raise SendTimeoutError(f"send timed out after {timeout}s", [mq.broker_name])
        result = await self._send_kernel(msg, mq, _ASYNC, timeout - (time.monotonic() - begin_first))
        assert result is not None
        return result

    async def _send_to_queue(
        self,
        msg: Message,
        queue: MessageQueue | None,
        selector: MessageQueueSelector | None,
        arg: Any,
        timeout: float,
        mode: _Mode,
    ) -> SendResult:
        """Java ``send(msg, mq)`` / ``sendSelectImpl``: one chosen queue, no retry to other queues."""
        self._check_message(msg)
        begin = time.monotonic()
        if queue is not None:
            if queue.topic != msg.topic:
                raise InvalidMessageError(f"message's topic {msg.topic!r} differs from the queue's {queue.topic!r}")
            mq = queue
        else:
            assert selector is not None
            info = await self._find_publish_info(msg.topic)
            try:
                mq = selector(list(info.message_queues), msg, arg)
            except Exception as exc:
                raise ClientError(f"select message queue threw an exception: {exc!r}") from exc
            if mq is None:
                raise ClientError("select message queue returned None")
        cost = time.monotonic() - begin
        if timeout < cost:
            raise SendTimeoutError(f"send timed out after {timeout}s", [mq.broker_name])
        result = await self._send_kernel(msg, mq, mode, timeout - cost)
        if mode is _ONEWAY:
            return _ONEWAY_RESULT
        assert result is not None
        return result

    async def _send_kernel(self, msg: Message, mq: MessageQueue, mode: _Mode, timeout: float) -> SendResult | None:
        """Java ``sendKernelImpl`` + ``MQClientAPIImpl.sendMessage``: build the request and send it once (ASYNC:
        plus same-broker retries on transport failures)."""
        begin = time.monotonic()
        instance = self.instance
        addr = instance.find_broker_address_in_publish(mq.broker_name)
        if addr is None:
            await self._find_publish_info(mq.topic)
            addr = instance.find_broker_address_in_publish(mq.broker_name)
        if addr is None:
            # The cached queues name a group whose master has left the route (a failover; the name server may
            # also not know the topic on the new master yet, which lacks it until it syncs or auto-creates it):
            # forget them, so the next send looks the topic up again, falling back to the default topic's route
            # (auto-creation on the new master) when the topic has no route. Java keeps them until its 30 s poll,
            # which cannot help while the topic has no route.
            self.topic_publish_info_table[mq.topic] = TopicPublishInfo()
            raise BrokerNotFoundError(mq.broker_name)
        cmd, uniq_id = build_send_request(msg, mq, self, self._id_gen, instance.api.language)
        if mode is _ONEWAY:
            await instance.api.invoke_oneway(addr, cmd)
            return None
        remaining = timeout - (time.monotonic() - begin)
        if remaining <= 0:
            raise SendTimeoutError(f"send timed out after {timeout}s", [mq.broker_name])
        if self._trace is not None:
            return await self._send_traced(msg, cmd, addr, mq, uniq_id, mode, remaining)
        if mode is _SYNC:
            resp = await instance.api.remoting.invoke(addr, cmd, remaining)  # = MQClientAPI.invoke, one frame less
            return instance.api.process_send_response(resp, addr, mq, uniq_id)
        return await send_with_retry(self, cmd, addr, mq, uniq_id, remaining)

    async def _send_traced(
        self, msg: Message, cmd: RemotingCommand, addr: str, mq: MessageQueue, uniq_id: str, mode: _Mode,
        remaining: float,
    ) -> SendResult:  # fmt: skip
        """``_send_kernel``'s answer with a Pub trace of it (Java's send-message trace hook): answered sends only,
        not sends to the trace topic itself."""
        begin_ms = int(time.time() * 1000)
        instance = self.instance
        if mode is _SYNC:
            resp = await instance.api.remoting.invoke(addr, cmd, remaining)
            result = instance.api.process_send_response(resp, addr, mq, uniq_id)
        else:
            result = await send_with_retry(self, cmd, addr, mq, uniq_id, remaining)
        self._record_pub(msg, result, addr, begin_ms)
        return result

    def _record_pub(self, msg: Message, result: SendResult, addr: str, begin_ms: int) -> None:
        """Queue the Pub trace of an answered send (message trace on), not the trace topic's own. A batch gets one
        record, as Java 4.9's hook writes it: the batch's topic, no tags or keys, the encoded batch's length and
        the comma-joined message ids and offset ids."""
        trace = self._trace
        if trace is not None and msg.topic != trace.trace_topic:
            ctx = pub_context(self.group, msg, result, addr, begin_ms)
            if ctx is not None:
                trace.append(ctx)


def trace_producer(group: str, kind: str, config: ClientConfig) -> Producer:
    """The inner producer of a traced client (Java ``AsyncTraceDispatcher``'s): its own client instance with the
    host's addresses, TLS and ACL account; 5 s send timeout, 128,000-byte messages, no trace of its own."""
    cfg = dataclasses.replace(config, instance_name=f"PID_CLIENT_INNER_TRACE_PRODUCER_{kind}")
    return Producer(inner_producer_group(group, kind), config=cfg, send_msg_timeout=TRACE_SEND_TIMEOUT,
                    max_message_size=TRACE_MAX_MSG_SIZE)  # fmt: skip


_ONEWAY_RESULT = SendResult(SendStatus.SEND_OK, "", "", MessageQueue("", "", -1), -1)
