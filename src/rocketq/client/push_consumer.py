"""The push consumer (Java ``DefaultMQPushConsumer``): long-polling pulls feeding a message listener.

::

    consumer = PushConsumer("my-group", namesrv_addr="127.0.0.1:9876")
    consumer.subscribe("TopicA", "TagA || TagB")
    consumer.register_message_listener(handle)          # handle(msgs, context) -> ConsumeConcurrentlyStatus
    await consumer.start()
    ...
    await consumer.shutdown()

How it works (as Java 4.9):

* every ``rebalance_interval`` (and at once when the broker sends NOTIFY_CONSUMER_IDS_CHANGED) the queues of
  each subscribed topic are split among the group (CLUSTERING) or all taken (BROADCASTING);
* each owned queue runs a pull loop: PULL_MESSAGE with the SUSPEND flag (the broker holds it up to
  ``broker_suspend_max_time``), the committed offset piggy-backed (COMMIT_OFFSET flag), and flow control —
  no pull while the queue caches more than ``pull_threshold_for_queue`` messages or
  ``pull_threshold_size_for_queue`` MiB, or (concurrent mode) spans more than ``consume_concurrently_max_span``
  offsets;
* concurrent listeners get batches of up to ``consume_message_batch_max_size`` messages, at most
  ``consume_thread_max`` at a time; a failed batch (``RECONSUME_LATER`` or an exception) is sent back with
  CONSUMER_SEND_MSG_BACK — if that fails, re-sent to ``%RETRY%<group>`` through an inner producer, and if that
  fails too, consumed again locally 5 s later;
* orderly listeners get one queue's messages in order, one batch at a time, while this client holds the
  broker lock of the queue (LOCK_BATCH_MQ, renewed every 20 s); failures suspend the queue and retry;
* consumed offsets are committed every ``persist_consumer_offset_interval`` (oneway UPDATE_CONSUMER_OFFSET) and at
  shutdown; BROADCASTING keeps them in a local file instead.

Listeners may be plain functions (run in a thread pool of ``consume_thread_max`` threads) or coroutine
functions (run on the event loop). Returning ``None`` counts as success; raising counts as failure.

This module is the consumer itself (Java ``DefaultMQPushConsumerImpl``): settings, lifecycle, rebalance hooks,
send-back. Its roles have their own modules: the listener's types (``listener``), the pull loops
(``_pull_service``), the consume services (``_consume_service``), what it shares with the lite pull consumer
(``_consumer_base``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

# The delays that moved are re-exported under their old names here (``push_consumer.PULL_DELAY_...``).
from rocketq.client._consume_service import CONSUME_LATER_DELAY as CONSUME_LATER_DELAY
from rocketq.client._consume_service import MAX_TIME_CONSUME_CONTINUOUSLY as MAX_TIME_CONSUME_CONTINUOUSLY
from rocketq.client._consume_service import (
    ConcurrentlyService,
    ConsumeStats,
    OrderlyService,
    clean_expired,
    retry_message,
)
from rocketq.client._consumer_base import PULL_DELAY_WHEN_BROKER_FLOW_CONTROL as PULL_DELAY_WHEN_BROKER_FLOW_CONTROL
from rocketq.client._consumer_base import PULL_DELAY_WHEN_CACHE_FLOW_CONTROL as PULL_DELAY_WHEN_CACHE_FLOW_CONTROL
from rocketq.client._consumer_base import ConsumerBase, ConsumerRebalance
from rocketq.client._instance import CLIENT_INNER_PRODUCER_GROUP
from rocketq.client._pull_service import PULL_DELAY_WHEN_SUSPEND as PULL_DELAY_WHEN_SUSPEND
from rocketq.client._pull_service import PullMessageService
from rocketq.client._rebalance import CONSUME_PASSIVELY, PullRequest
from rocketq.client._tasks import TaskSet
from rocketq.client._util import is_async_callable, now_ms
from rocketq.client.allocate import AllocateMessageQueueStrategy
from rocketq.client.config import ClientConfig
from rocketq.client.listener import (
    ConcurrentlyListener,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    OrderlyListener,
)
from rocketq.client.message import MessageExt
from rocketq.client.offset_store import OffsetStore
from rocketq.client.process_queue import REBALANCE_LOCK_INTERVAL, ProcessQueue
from rocketq.client.producer import Producer, trace_producer
from rocketq.client.subscription import ConsumeFromWhere, MessageModel
from rocketq.client.trace import TraceDispatcher
from rocketq.errors import BrokerError, ClientError, RemotingError
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.headers import ConsumerSendMsgBackRequestHeader

__all__ = [
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "PushConsumer",
]

log = logging.getLogger("rocketq.client.push_consumer")

#: Java rocketmq.client.unlockDelayTimeMills, seconds.
UNLOCK_DELAY = 20.0
#: how often the consume / pull windows of the running info's statusTable take a sample (Java: 10 s)
STATS_SAMPLE_INTERVAL = 10.0


class PushConsumer(ConsumerBase):
    """A consumer driven by background pulls; see the module docstring. Durations are seconds."""

    def __init__(
        self,
        group: str,
        *,
        namesrv_addr: str | None = None,
        config: ClientConfig | None = None,
        message_model: MessageModel = MessageModel.CLUSTERING,
        consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_timestamp: str | int | float | None = None,
        allocate_strategy: AllocateMessageQueueStrategy | None = None,
        consume_thread_max: int = 20,
        consume_message_batch_max_size: int = 1,
        pull_batch_size: int = 32,
        pull_interval: float = 0.0,
        pull_threshold_for_queue: int = 1000,
        pull_threshold_size_for_queue: int = 100,
        pull_threshold_for_topic: int = -1,
        pull_threshold_size_for_topic: int = -1,
        consume_concurrently_max_span: int = 2000,
        max_reconsume_times: int = -1,
        suspend_current_queue_time: float = 1.0,
        consume_timeout: float = 15 * 60.0,
        rebalance_interval: float = 20.0,
        broker_suspend_max_time: float = 15.0,
        consumer_timeout_when_suspend: float = 30.0,
        pull_time_delay_when_exception: float = 3.0,
        post_subscription_when_pull: bool = False,
        await_termination_when_shutdown: float = 3.0,
        offset_store: OffsetStore | None = None,
        local_offset_store_dir: str | None = None,
        enable_msg_trace: bool = False,
        customized_trace_topic: str | None = None,
    ) -> None:
        if group == "DEFAULT_CONSUMER":  # a legal name otherwise: checked before the rest, as before
            raise ClientError("consumer group can not be DEFAULT_CONSUMER, please specify another one")
        super().__init__(
            group, namesrv_addr=namesrv_addr, config=config, message_model=message_model,
            consume_from_where=consume_from_where, consume_timestamp=consume_timestamp,
            allocate_strategy=allocate_strategy, offset_store=offset_store,
            local_offset_store_dir=local_offset_store_dir,
        )  # fmt: skip
        self.consume_thread_max = consume_thread_max
        self.consume_message_batch_max_size = consume_message_batch_max_size
        self.pull_batch_size = pull_batch_size
        self.pull_interval = pull_interval
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.pull_threshold_size_for_queue = pull_threshold_size_for_queue
        self.pull_threshold_for_topic = pull_threshold_for_topic
        self.pull_threshold_size_for_topic = pull_threshold_size_for_topic
        self.consume_concurrently_max_span = consume_concurrently_max_span
        self.max_reconsume_times = max_reconsume_times
        self.suspend_current_queue_time = suspend_current_queue_time
        self.consume_timeout = consume_timeout
        self.rebalance_interval = rebalance_interval
        self.broker_suspend_max_time = broker_suspend_max_time
        self.consumer_timeout_when_suspend = consumer_timeout_when_suspend
        self.pull_time_delay_when_exception = pull_time_delay_when_exception
        self.post_subscription_when_pull = post_subscription_when_pull
        self.await_termination_when_shutdown = await_termination_when_shutdown
        self.offset_illegal_fix_delay = 10.0
        self.reset_offset_settle_time = 10.0
        self._listener: Callable[..., Any] | None = None
        self._listener_async = False  # is_async_callable(self._listener), worked out once
        self.consume_orderly = False
        self._inner_producer: Producer | None = None
        self._tasks = TaskSet(log)
        self._consume: ConcurrentlyService | OrderlyService | None = None  # Java consumeMessageService
        self._pulls = PullMessageService(self)
        self._executor: ThreadPoolExecutor | None = None
        self.paused = False
        self.stats = ConsumeStats()
        self.start_timestamp = 0
        #: Java's enableMsgTrace / customizedTraceTopic: SubBefore/SubAfter traces (docs/trace.md)
        self.enable_msg_trace = enable_msg_trace
        self.customized_trace_topic = customized_trace_topic
        self._trace: TraceDispatcher | None = None

    # -- configuration ------------------------------------------------------------------------------------

    consume_type = CONSUME_PASSIVELY

    def register_message_listener(self, listener: ConcurrentlyListener) -> None:
        """``listener(msgs, context) -> ConsumeConcurrentlyStatus`` (or None for success)."""
        self._listener = listener
        self._listener_async = is_async_callable(listener)
        self.consume_orderly = False

    def register_message_listener_orderly(self, listener: OrderlyListener) -> None:
        """``listener(msgs, context) -> ConsumeOrderlyStatus`` (or None for success); one queue at a time, in order."""
        self._listener = listener
        self._listener_async = is_async_callable(listener)
        self.consume_orderly = True

    # -- lifecycle ----------------------------------------------------------------------------------------

    @property
    def client_id(self) -> str:
        return self.instance.client_id

    async def start(self) -> None:
        if self._running:
            return
        if self._listener is None:
            raise ClientError("no message listener registered (register_message_listener[_orderly])")
        rebalance = await self._open(lambda instance: _RebalancePush(self, instance), retry_subscription=True)
        instance = rebalance.instance
        self._executor = ThreadPoolExecutor(max_workers=self.consume_thread_max,
                                            thread_name_prefix=f"ConsumeMessageThread_{self.group[:100]}_")  # fmt: skip
        if self.consume_orderly:
            self._consume = OrderlyService(self, self._executor, self.consume_thread_max, rebalance.lock)
        else:
            self._consume = ConcurrentlyService(self, self._executor, self.consume_thread_max)
        self._tasks = TaskSet(log)
        instance.register_consumer(self)
        self._running = True
        self._stopping = False
        self.start_timestamp = now_ms()
        inner = Producer(CLIENT_INNER_PRODUCER_GROUP, config=self.config)
        await inner.start(instance)
        self._inner_producer = inner
        await instance.start()
        self.stats.meter, self.stats.client_id = self.config.metrics, instance.client_id
        if self.enable_msg_trace:
            inner = trace_producer(self.group, "CONSUME", self.config)
            self._trace = TraceDispatcher(self.group, inner, self.customized_trace_topic)
            await self._trace.start()
        if self.consume_orderly and self.message_model_enum is MessageModel.CLUSTERING:
            self._tasks.every(lambda: REBALANCE_LOCK_INTERVAL, rebalance.lock_all, "lock-mq", 1.0)
        if not self.consume_orderly:
            self._tasks.every(lambda: self.consume_timeout, self.clean_expired_messages, "clean-expired",
                              self.consume_timeout)  # fmt: skip
        self._tasks.every(lambda: STATS_SAMPLE_INTERVAL, self._sample_stats, "sample-stats", STATS_SAMPLE_INTERVAL)
        await self._update_subscribed_routes(instance, log)
        try:
            # Java fails start() when a broker rejects an SQL92 subscription (CHECK_CLIENT_CONFIG).
            await instance.check_client_in_broker()
        except (BrokerError, RemotingError):
            await self.shutdown()
            raise
        await instance.send_heartbeat_to_all_brokers()
        instance.rebalance_immediately()
        log.info("consumer.started group=%s client_id=%s model=%s orderly=%s", self.group, instance.client_id,
                 self.message_model, self.consume_orderly)  # fmt: skip

    async def shutdown(self) -> None:
        """Stop pulling, let in-flight listener calls finish (``await_termination_when_shutdown``), commit
        offsets, release orderly locks, and leave the group (UNREGISTER_CLIENT)."""
        if not self._running or self._instance is None:
            return
        instance = self._instance
        rebalance = self._rebalance
        assert rebalance is not None and self.offset_store is not None
        self._stopping = True  # no more rebalancing or new pull loops
        self._pulls.cancel_all()
        await self._tasks.aclose()
        if self._consume is not None:
            await self._consume.shutdown(self.await_termination_when_shutdown)
        if self.consume_orderly and self.message_model_enum is MessageModel.CLUSTERING:
            await rebalance.unlock_all(False)
        await self.persist_consumer_offset()
        if self._trace is not None:  # after the listener calls, whose SubAfter records it sends
            await self._trace.shutdown()
            self._trace = None
        self._running = False
        await instance.unregister_consumer(self.group)
        if self._inner_producer is not None:
            await self._inner_producer.shutdown()
        await instance.shutdown()
        rebalance.destroy()
        await self._pulls.wait_all()
        if self._executor is not None:
            self._executor.shutdown(wait=False)
        log.info("consumer.stopped group=%s", self.group)

    def suspend(self) -> None:
        """Pause pulling (queues stay assigned)."""
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        if self._instance is not None:
            self._instance.rebalance_immediately()

    # -- MQConsumerInner (called by the instance; the rest is in ConsumerBase) -----------------------------------

    async def do_rebalance(self) -> None:
        if self.paused or self._rebalance is None or not self._running or self._stopping:
            return
        await self._rebalance.do_rebalance(self.consume_orderly)

    async def persist_consumer_offset(self) -> None:
        if self._rebalance is None or self.offset_store is None:
            return
        await self.offset_store.persist_all(list(self._rebalance.process_queue_table))

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: drop the topic's queues, wait, store the new offsets, rebalance."""
        rebalance = self._rebalance
        if rebalance is None or self.offset_store is None:
            return
        self.suspend()
        try:
            for mq, pq in list(rebalance.process_queue_table.items()):
                if mq.topic == topic and mq in offsets:
                    pq.dropped = True
                    pq.clear()
            await asyncio.sleep(self.reset_offset_settle_time)
            for mq in list(rebalance.process_queue_table):
                off = offsets.get(mq)
                if mq.topic == topic and off is not None:
                    self.offset_store.update_offset(mq, off, False)
                    pq = rebalance.process_queue_table.pop(mq)
                    await rebalance.remove_unnecessary_message_queue(mq, pq)
        finally:
            self.resume()

    async def _sample_stats(self) -> None:
        self.stats.sample()

    def running_info(self) -> dict[str, Any]:
        rebalance = self._rebalance
        props = {
            "PROP_CONSUME_ORDERLY": str(self.consume_orderly).lower(),
            "PROP_THREADPOOL_CORE_SIZE": str(self.consume_thread_max),
            "PROP_CONSUMER_START_TIMESTAMP": str(self.start_timestamp),
            "PROP_CONSUME_TYPE": self.consume_type,
            "PROP_CLIENT_VERSION": "V4_9_8",
            "PROP_NAMESERVER_ADDR": self.config.namesrv_addr or "",
            "messageModel": self.message_model,
            "consumeFromWhere": self.consume_from_where,
            "consumeMessageBatchMaxSize": str(self.consume_message_batch_max_size),
            "pullBatchSize": str(self.pull_batch_size),
            "pullThresholdForQueue": str(self.pull_threshold_for_queue),
        }
        mq_table: dict[MessageQueue, Any] = {}
        if rebalance is not None and self.offset_store is not None:
            for mq, pq in rebalance.process_queue_table.items():
                info = pq.info()
                info["commitOffset"] = self.offset_store.offset_table.get(mq, -1)
                mq_table[mq] = info
        info = self._running_info(props, mq_table)
        info["statusTable"] = {t: self.stats.status(self.group, t) for t in sorted(self.stats.topics)}
        return info

    async def consume_message_directly(self, msg: MessageExt, broker_name: str | None) -> dict[str, Any]:
        assert self._listener is not None and self._consume is not None  # the instance asks once started
        return await self._consume.consume_directly(msg, broker_name)

    # -- pulling (the pull service's) ------------------------------------------------------------------------

    def dispatch_pull_requests(self, requests: list[PullRequest]) -> None:
        self._pulls.dispatch(requests)

    def stop_pulling(self, mq: MessageQueue) -> None:
        self._pulls.stop(mq)

    async def pull_message(self, req: PullRequest) -> float | None:
        """One pull (see ``PullMessageService.pull_once``); the delay before the next, or None to stop."""
        return await self._pulls.pull_once(req)

    def flow_control_delay(self, pq: ProcessQueue) -> float | None:
        """The pause before the next pull when this queue's cache is over a threshold, else None."""
        return self._pulls.flow_control_delay(pq)

    # -- consuming (the consume service's) -----------------------------------------------------------------

    def _submit_consume_request(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool
    ) -> None:
        consume = self._consume
        if isinstance(consume, OrderlyService):
            if dispatch:
                consume.submit(pq, mq)
            return
        assert consume is not None
        consume.submit(msgs, pq, mq)

    async def clean_expired_messages(self) -> None:
        """Messages stuck in the listener longer than ``consume_timeout`` go back to the broker (concurrent mode;
        see ``_consume_service.clean_expired``)."""
        if self._rebalance is None or self.consume_orderly:
            return
        await clean_expired(self, self._rebalance.process_queue_table)

    def _max_reconsume_times(self) -> int:
        return 16 if self.max_reconsume_times == -1 else self.max_reconsume_times

    async def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None = None) -> bool:
        """CONSUMER_SEND_MSG_BACK to the message's broker; on failure, re-send it to the retry topic. Returns
        False when both failed (the caller consumes it again locally)."""
        instance = self.instance
        try:
            if broker_name:
                addr = instance.find_broker_address_in_publish(broker_name)
            else:
                addr = f"{msg.store_host[0]}:{msg.store_host[1]}"
            if addr is None:
                raise ClientError(f"no address for broker {broker_name}")
            header = ConsumerSendMsgBackRequestHeader(
                offset=msg.commit_log_offset,
                group=self.group,
                delay_level=delay_level,
                origin_msg_id=msg.msg_id,
                origin_topic=msg.topic,
                unit_mode=False,
                max_reconsume_times=self._max_reconsume_times(),
            )
            await instance.api.consumer_send_msg_back(addr, header, broker_name, 5.0)
            self.stats.sent_back += 1
            return True
        except (RemotingError, BrokerError, ClientError) as exc:
            log.error("send_back.failed group=%s msg_id=%s error=%s", self.group, msg.msg_id, exc)
        try:
            await self._resend_to_retry_topic(msg, msg.reconsume_times + 1, 3 + msg.reconsume_times)
            self.stats.sent_back += 1
            return True
        except Exception as exc:
            log.error("send_back.resend_failed group=%s msg_id=%s error=%s", self.group, msg.msg_id, exc)
            return False

    async def _resend_to_retry_topic(self, msg: MessageExt, reconsume_time: int, delay_level: int) -> None:
        assert self._inner_producer is not None
        limit = self._max_reconsume_times_orderly() if self.consume_orderly else self._max_reconsume_times()
        await self._inner_producer.send(retry_message(self.group, msg, reconsume_time, delay_level, limit))

    def _max_reconsume_times_orderly(self) -> int:
        return 2**31 - 1 if self.max_reconsume_times == -1 else self.max_reconsume_times


class _RebalancePush(ConsumerRebalance):
    retry_topic_from_max_on_timestamp = True
    consumer: PushConsumer

    @property
    def consume_type(self) -> str:
        return CONSUME_PASSIVELY

    async def message_queue_changed(self, topic: str, mq_all: set[MessageQueue], mq_divided: set[MessageQueue]) -> None:
        c = self.consumer
        n = len(self.process_queue_table)
        if n:
            if c.pull_threshold_for_topic != -1:
                c.pull_threshold_for_queue = max(1, c.pull_threshold_for_topic // n)
            if c.pull_threshold_size_for_topic != -1:
                c.pull_threshold_size_for_queue = max(1, c.pull_threshold_size_for_topic // n)
        await super().message_queue_changed(topic, mq_all, mq_divided)

    async def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        c = self.consumer
        assert c.offset_store is not None
        c.stop_pulling(mq)
        await c.offset_store.persist(mq)
        c.offset_store.remove_offset(mq)
        if c.consume_orderly and c.message_model_enum is MessageModel.CLUSTERING:
            lock = pq.consume_lock
            try:
                async with asyncio.timeout(1.0):
                    await lock.acquire()
            except TimeoutError:
                pq.try_unlock_times += 1
                log.warning("rebalance.still_consuming mq=%s tries=%d", mq, pq.try_unlock_times)
                return False
            try:
                if pq.has_temp_message():
                    self.instance.tasks.later(UNLOCK_DELAY, lambda: self.unlock(mq, True), f"unlock-{mq}")
                else:
                    await self.unlock(mq, True)
            finally:
                lock.release()
        return True

    def dispatch_pull_requests(self, requests: list[PullRequest]) -> None:
        self.consumer.dispatch_pull_requests(requests)
