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
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Union

from rocketq.client._instance import CLIENT_INNER_PRODUCER_GROUP, ClientInstance, unique_instance_name
from rocketq.client._pull_api import PullAPIWrapper, build_pull_sys_flag
from rocketq.client._rebalance import CONSUME_PASSIVELY, PullRequest, RebalanceImpl
from rocketq.client._route import RETRY_GROUP_TOPIC_PREFIX, retry_topic
from rocketq.client._tasks import TaskSet
from rocketq.client._util import call_user, is_async_callable, now_ms
from rocketq.client._validators import check_group
from rocketq.client.allocate import AllocateMessageQueueAveragely, AllocateMessageQueueStrategy
from rocketq.client.config import ClientConfig
from rocketq.client.errors import ClientNotStartedError
from rocketq.client.message import Message, MessageExt, PullStatus
from rocketq.client.offset_store import (
    LocalFileOffsetStore,
    OffsetStore,
    ReadOffsetType,
    RemoteBrokerOffsetStore,
)
from rocketq.client.process_queue import REBALANCE_LOCK_INTERVAL, ProcessQueue
from rocketq.client.producer import Producer
from rocketq.client.subscription import (
    ConsumeFromWhere,
    MessageModel,
    MessageSelector,
    build_subscription_data,
    parse_consume_timestamp,
    restore_retry_topic,
)
from rocketq.codes import ResponseCode
from rocketq.errors import BrokerError, ClientError, ProtocolError, RemotingError
from rocketq.protocol.bodies import MessageQueue, SubscriptionData
from rocketq.protocol.headers import ConsumerSendMsgBackRequestHeader
from rocketq.protocol.message import (
    PROP_CONSUME_START_TIME,
    PROP_DELAY,
    PROP_MAX_RECONSUME_TIMES,
    PROP_ORIGIN_MESSAGE_ID,
    PROP_RECONSUME_TIME,
    PROP_RETRY_TOPIC,
    PROP_TRAN_MSG,
)

__all__ = [
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "PushConsumer",
]

log = logging.getLogger("rocketq.client.push_consumer")

#: Java PULL_TIME_DELAY_MILLS_WHEN_CACHE_FLOW_CONTROL / _BROKER_FLOW_CONTROL / _SUSPEND, seconds.
PULL_DELAY_WHEN_CACHE_FLOW_CONTROL = 0.05
PULL_DELAY_WHEN_BROKER_FLOW_CONTROL = 0.02
PULL_DELAY_WHEN_SUSPEND = 1.0
#: Java ConsumeMessageOrderlyService.MAX_TIME_CONSUME_CONTINUOUSLY, seconds.
MAX_TIME_CONSUME_CONTINUOUSLY = 60.0
#: Java rocketmq.client.unlockDelayTimeMills, seconds.
UNLOCK_DELAY = 20.0
#: Java submitConsumeRequestLater delay for messages whose send-back failed, seconds.
CONSUME_LATER_DELAY = 5.0


class ConsumeConcurrentlyStatus(enum.Enum):
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.Enum):
    SUCCESS = "SUCCESS"
    ROLLBACK = "ROLLBACK"
    COMMIT = "COMMIT"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


@dataclass(slots=True)
class ConsumeConcurrentlyContext:
    """``ack_index``: on success, messages after this index count as failed (default: all succeeded).
    ``delay_level_when_next_consume``: 0 lets the broker choose (3 + reconsume times), -1 sends straight to DLQ."""

    message_queue: MessageQueue
    delay_level_when_next_consume: int = 0
    ack_index: int = 2**31 - 1


@dataclass(slots=True)
class ConsumeOrderlyContext:
    """``auto_commit`` False lets the listener decide with COMMIT / ROLLBACK; ``suspend_current_queue_time`` (s)
    overrides the consumer's suspend time for SUSPEND_CURRENT_QUEUE_A_MOMENT."""

    message_queue: MessageQueue
    auto_commit: bool = True
    suspend_current_queue_time: float | None = None


ConcurrentlyListener = Callable[
    [list[MessageExt], ConsumeConcurrentlyContext],
    Union[ConsumeConcurrentlyStatus, Awaitable[ConsumeConcurrentlyStatus | None], None],  # noqa: UP007
]
OrderlyListener = Callable[
    [list[MessageExt], ConsumeOrderlyContext],
    Union[ConsumeOrderlyStatus, Awaitable[ConsumeOrderlyStatus | None], None],  # noqa: UP007
]


@dataclass
class _Stats:
    pulled: int = 0
    consumed_ok: int = 0
    consumed_failed: int = 0
    sent_back: int = 0
    flow_control_times: int = 0
    extra: dict[str, int] = field(default_factory=dict)


class PushConsumer:
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
    ) -> None:
        check_group(group)
        if group == "DEFAULT_CONSUMER":
            raise ClientError("consumer group can not be DEFAULT_CONSUMER, please specify another one")
        self.group = group
        # A private copy: start() may set instance_name, which must not leak into other clients sharing the config.
        self.config = dataclasses.replace(config) if config is not None else ClientConfig()
        if namesrv_addr is not None:
            self.config.namesrv_addr = namesrv_addr
        self.message_model_enum = message_model
        self.consume_from_where_enum = consume_from_where
        ts = consume_timestamp if consume_timestamp is not None else time.time() - 30 * 60
        self.consume_timestamp_ms = parse_consume_timestamp(ts)
        self.allocate_strategy: AllocateMessageQueueStrategy = allocate_strategy or AllocateMessageQueueAveragely()
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
        self.local_offset_store_dir = local_offset_store_dir
        self.offset_store: OffsetStore | None = offset_store
        self._subscriptions: dict[str, str | MessageSelector] = {}
        self._listener: Callable[..., Any] | None = None
        self._listener_async = False  # is_async_callable(self._listener), worked out once
        self._consume_task_names: dict[MessageQueue, str] = {}  # no dataclass repr per consume request
        self.consume_orderly = False
        self._instance: ClientInstance | None = None
        self._rebalance: _RebalancePush | None = None
        self._pull_api: PullAPIWrapper | None = None
        self._inner_producer: Producer | None = None
        self._tasks = TaskSet(log)
        self._consume_tasks = TaskSet(log)
        self._pull_tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self._mq_locks: dict[MessageQueue, asyncio.Lock] = {}
        self._consume_sem = asyncio.Semaphore(consume_thread_max)
        self._executor: ThreadPoolExecutor | None = None
        self._running = False
        self._stopping = False
        self.paused = False
        self.stats = _Stats()
        self.start_timestamp = 0

    # -- configuration ------------------------------------------------------------------------------------

    @property
    def message_model(self) -> str:
        return self.message_model_enum.value

    @property
    def consume_from_where(self) -> str:
        return self.consume_from_where_enum.value

    consume_type = CONSUME_PASSIVELY

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        """Subscribe ``topic`` with a tag expression (``"*"``, ``"A || B"``) or ``MessageSelector.by_sql(...)``."""
        self._subscriptions[topic] = expression
        if self._rebalance is not None and self._instance is not None:
            self._rebalance.subscription_inner[topic] = build_subscription_data(topic, expression)
            self._instance.tasks.spawn(self._after_subscription_change(topic), "subscribe")

    def unsubscribe(self, topic: str) -> None:
        self._subscriptions.pop(topic, None)
        if self._rebalance is not None:
            self._rebalance.subscription_inner.pop(topic, None)

    async def _after_subscription_change(self, topic: str) -> None:
        assert self._instance is not None
        await self._instance.update_topic_route(topic)
        await self._instance.send_heartbeat_to_all_brokers()
        self._instance.rebalance_immediately()

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
    def instance(self) -> ClientInstance:
        if self._instance is None or not self._running:
            raise ClientNotStartedError(f"the consumer {self.group!r} is not started")
        return self._instance

    @property
    def client_id(self) -> str:
        return self.instance.client_id

    async def start(self) -> None:
        if self._running:
            return
        if self._listener is None:
            raise ClientError("no message listener registered (register_message_listener[_orderly])")
        if self.message_model_enum is MessageModel.CLUSTERING and self.config.instance_name == "DEFAULT":
            self.config.instance_name = unique_instance_name()
        instance = ClientInstance(self.config)
        self._instance = instance
        rebalance = _RebalancePush(self, instance)
        for topic, expr in self._subscriptions.items():
            rebalance.subscription_inner[topic] = build_subscription_data(topic, expr)
        if self.message_model_enum is MessageModel.CLUSTERING:
            rt = retry_topic(self.group)
            rebalance.subscription_inner[rt] = build_subscription_data(rt, "*")
        self._rebalance = rebalance
        self._pull_api = PullAPIWrapper(instance, self.group)
        if self.offset_store is None:
            if self.message_model_enum is MessageModel.BROADCASTING:
                self.offset_store = LocalFileOffsetStore(instance.client_id, self.group, self.local_offset_store_dir)
            else:
                self.offset_store = RemoteBrokerOffsetStore(instance, self.group)
        await self.offset_store.load()
        self._executor = ThreadPoolExecutor(max_workers=self.consume_thread_max,
                                            thread_name_prefix=f"ConsumeMessageThread_{self.group[:100]}_")  # fmt: skip
        self._consume_sem = asyncio.Semaphore(self.consume_thread_max)
        self._tasks = TaskSet(log)
        self._consume_tasks = TaskSet(log)
        instance.register_consumer(self)
        self._running = True
        self._stopping = False
        self.start_timestamp = now_ms()
        inner = Producer(CLIENT_INNER_PRODUCER_GROUP, config=self.config)
        await inner.start(instance)
        self._inner_producer = inner
        await instance.start()
        if self.consume_orderly and self.message_model_enum is MessageModel.CLUSTERING:
            self._tasks.every(lambda: REBALANCE_LOCK_INTERVAL, rebalance.lock_all, "lock-mq", 1.0)
        if not self.consume_orderly:
            self._tasks.every(lambda: self.consume_timeout, self.clean_expired_messages, "clean-expired",
                              self.consume_timeout)  # fmt: skip
        for topic in list(rebalance.subscription_inner):
            try:
                await instance.update_topic_route(topic)
            except (RemotingError, ProtocolError) as exc:
                log.warning("consumer.route_failed topic=%s error=%s", topic, exc)
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
        for task in list(self._pull_tasks.values()):
            task.cancel()
        await self._tasks.aclose()
        await self._consume_tasks.wait(self.await_termination_when_shutdown)
        await self._consume_tasks.aclose()
        if self.consume_orderly and self.message_model_enum is MessageModel.CLUSTERING:
            await rebalance.unlock_all(False)
        await self.persist_consumer_offset()
        self._running = False
        await instance.unregister_consumer(self.group)
        if self._inner_producer is not None:
            await self._inner_producer.shutdown()
        await instance.shutdown()
        rebalance.destroy()
        if self._pull_tasks:
            await asyncio.gather(*self._pull_tasks.values(), return_exceptions=True)
            self._pull_tasks.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=False)
        log.info("consumer.stopped group=%s", self.group)

    async def __aenter__(self) -> PushConsumer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.shutdown()

    def suspend(self) -> None:
        """Pause pulling (queues stay assigned)."""
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        if self._instance is not None:
            self._instance.rebalance_immediately()

    # -- ConsumerInner (called by the instance) -----------------------------------------------------------------

    def subscriptions(self) -> list[SubscriptionData]:
        return list(self._rebalance.subscription_inner.values()) if self._rebalance else []

    def update_topic_subscribe_info(self, topic: str, mqs: set[MessageQueue]) -> None:
        if self._rebalance is not None and topic in self._rebalance.subscription_inner:
            self._rebalance.topic_subscribe_info_table[topic] = set(mqs)

    def is_subscribe_topic_need_update(self, topic: str) -> bool:
        if self._rebalance is None or topic not in self._rebalance.subscription_inner:
            return False
        return topic not in self._rebalance.topic_subscribe_info_table

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
        return {
            "jstack": "",
            "mqTable": mq_table,
            "properties": props,
            "statusTable": {},
            "subscriptionSet": [s.to_json() for s in self.subscriptions()],
        }

    async def consume_message_directly(self, msg: MessageExt, broker_name: str | None) -> dict[str, Any]:
        assert self._listener is not None
        mq = MessageQueue(msg.topic, broker_name or "", msg.queue_id)
        restore_retry_topic([msg], retry_topic(self.group))
        begin = time.monotonic()
        result: dict[str, Any] = {"order": self.consume_orderly, "autoCommit": True}
        try:
            if self.consume_orderly:
                octx = ConsumeOrderlyContext(mq)
                status = await call_user(
                    self._listener, [msg], octx, executor=self._executor, is_async=self._listener_async
                )
                result["autoCommit"] = octx.auto_commit
                result["consumeResult"] = {
                    ConsumeOrderlyStatus.COMMIT: "CR_COMMIT", ConsumeOrderlyStatus.ROLLBACK: "CR_ROLLBACK",
                    ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT: "CR_LATER",
                }.get(status, "CR_SUCCESS")  # fmt: skip
            else:
                status = await call_user(self._listener, [msg], ConsumeConcurrentlyContext(mq),
                                         executor=self._executor, is_async=self._listener_async)  # fmt: skip
                later = status is ConsumeConcurrentlyStatus.RECONSUME_LATER
                result["consumeResult"] = "CR_LATER" if later else "CR_SUCCESS"
        except Exception as exc:
            result["consumeResult"] = "CR_THROW_EXCEPTION"
            result["remark"] = repr(exc)
        result["spentTimeMills"] = int((time.monotonic() - begin) * 1000)
        return result

    # -- pulling ------------------------------------------------------------------------------------------

    def dispatch_pull_requests(self, requests: list[PullRequest]) -> None:
        if self._stopping:
            return
        for req in requests:
            old = self._pull_tasks.pop(req.message_queue, None)
            if old is not None:
                old.cancel()
            task = self._tasks.spawn(self._pull_loop(req), f"pull-{req.message_queue}")
            self._pull_tasks[req.message_queue] = task
            task.add_done_callback(functools.partial(self._forget_pull_task, req.message_queue))

    def _forget_pull_task(self, mq: MessageQueue, task: asyncio.Task[None]) -> None:
        if self._pull_tasks.get(mq) is task:
            del self._pull_tasks[mq]

    def stop_pulling(self, mq: MessageQueue) -> None:
        task = self._pull_tasks.pop(mq, None)
        if task is not None:
            task.cancel()

    async def _pull_loop(self, req: PullRequest) -> None:
        delay: float | None = 0.0
        while self._running and not self._stopping and not req.process_queue.dropped:
            if delay:
                await asyncio.sleep(delay)
                if not self._running or req.process_queue.dropped:
                    return
            delay = await self.pull_message(req)
            if delay is None:
                return

    async def pull_message(self, req: PullRequest) -> float | None:
        """One pull (Java ``DefaultMQPushConsumerImpl.pullMessage``); returns the delay before the next, or None
        to stop this queue's loop."""
        pq = req.process_queue
        mq = req.message_queue
        assert self._rebalance is not None and self._pull_api is not None and self.offset_store is not None
        delay_exc = self.pull_time_delay_when_exception
        pq.last_pull_timestamp = time.monotonic()
        if self.paused:
            return PULL_DELAY_WHEN_SUSPEND
        flow_delay = self.flow_control_delay(pq)
        if flow_delay is not None:
            self.stats.flow_control_times += 1
            return flow_delay
        if self.consume_orderly:
            if not pq.locked:
                log.info("pull.later_not_locked mq=%s", mq)
                return delay_exc
            if not req.previously_locked:
                try:
                    offset = await self._rebalance.compute_pull_from_where(mq)
                except Exception as exc:
                    log.error("pull.offset_failed mq=%s error=%s", mq, exc)
                    return delay_exc
                req.previously_locked = True
                req.next_offset = offset
        sub = self._rebalance.subscription_inner.get(mq.topic)
        if sub is None:
            log.warning("pull.no_subscription mq=%s", mq)
            return delay_exc
        commit_offset_value = 0
        commit_enable = False
        if self.message_model_enum is MessageModel.CLUSTERING:
            commit_offset_value = await self.offset_store.read_offset(mq, ReadOffsetType.READ_FROM_MEMORY)
            commit_enable = commit_offset_value > 0
        sub_expression = sub.sub_string if self.post_subscription_when_pull and not sub.class_filter_mode else None
        sys_flag = build_pull_sys_flag(commit_enable, True, sub_expression is not None, sub.class_filter_mode)
        try:
            raw = await self._pull_api.pull_kernel(
                mq, sub_expression, sub.expression_type, sub.sub_version, req.next_offset, self.pull_batch_size,
                sys_flag, max(commit_offset_value, 0), int(self.broker_suspend_max_time * 1000),
                self.consumer_timeout_when_suspend,
            )  # fmt: skip
            result = self._pull_api.process_pull_result(mq, raw, sub)
        except BrokerError as exc:
            if not mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                log.warning("pull.failed mq=%s error=%s", mq, exc)
            if exc.code == ResponseCode.FLOW_CONTROL:
                return PULL_DELAY_WHEN_BROKER_FLOW_CONTROL
            return delay_exc
        except (RemotingError, ClientError, ProtocolError) as exc:
            if not mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                log.warning("pull.failed mq=%s error=%s", mq, exc)
            return delay_exc
        if pq.dropped:
            return None
        if result.status is PullStatus.FOUND:
            req.next_offset = result.next_begin_offset
            if not result.messages:
                return 0.0
            self.stats.pulled += len(result.messages)
            dispatch = pq.put_messages(result.messages)
            self._submit_consume_request(result.messages, pq, mq, dispatch)
            return self.pull_interval
        if result.status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
            req.next_offset = result.next_begin_offset
            if pq.msg_count == 0:  # Java correctTagsOffset
                self.offset_store.update_offset(mq, req.next_offset, True)
            return 0.0
        # OFFSET_ILLEGAL: drop the queue, store the corrected offset, let the next rebalance re-add it.
        log.warning("pull.offset_illegal mq=%s next=%d", mq, result.next_begin_offset)
        req.next_offset = result.next_begin_offset
        pq.dropped = True

        async def fix() -> None:
            assert self.offset_store is not None and self._rebalance is not None
            self.offset_store.update_offset(mq, req.next_offset, False)
            await self.offset_store.persist(mq)
            await self._rebalance.remove_process_queue(mq)

        self._tasks.later(self.offset_illegal_fix_delay, fix, f"fix-offset-{mq}")
        return None

    def flow_control_delay(self, pq: ProcessQueue) -> float | None:
        """The pause before the next pull when this queue's cache is over a threshold, else None."""
        if pq.msg_count > self.pull_threshold_for_queue:
            return PULL_DELAY_WHEN_CACHE_FLOW_CONTROL
        if pq.msg_size // (1024 * 1024) > self.pull_threshold_size_for_queue:
            return PULL_DELAY_WHEN_CACHE_FLOW_CONTROL
        if not self.consume_orderly and pq.max_span > self.consume_concurrently_max_span:
            return PULL_DELAY_WHEN_CACHE_FLOW_CONTROL
        return None

    # -- consuming ----------------------------------------------------------------------------------------

    def _submit_consume_request(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool
    ) -> None:
        if self.consume_orderly:
            if dispatch:
                self._consume_tasks.spawn(self._consume_orderly(pq, mq), f"consume-orderly-{mq}")
            return
        size = max(1, self.consume_message_batch_max_size)
        names = self._consume_task_names
        name = names.get(mq)
        if name is None:
            if len(names) >= 4096:  # queues come and go with rebalances: keep the cache bounded
                names.clear()
            name = names[mq] = f"consume-{mq}"
        for i in range(0, len(msgs), size):
            self._consume_tasks.spawn(self._consume_concurrently(msgs[i : i + size], pq, mq), name)

    def _submit_consume_later(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        async def later() -> None:
            await asyncio.sleep(CONSUME_LATER_DELAY)
            self._submit_consume_request(msgs, pq, mq, True)

        self._consume_tasks.spawn(later(), f"consume-later-{mq}")

    async def _consume_concurrently(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        async with self._consume_sem:
            if pq.dropped:
                return
            assert self._listener is not None
            ctx = ConsumeConcurrentlyContext(mq)
            restore_retry_topic(msgs, retry_topic(self.group))
            start = str(now_ms())
            for m in msgs:
                m.properties[PROP_CONSUME_START_TIME] = start
            status: ConsumeConcurrentlyStatus
            try:
                got = await call_user(
                    self._listener, list(msgs), ctx, executor=self._executor, is_async=self._listener_async
                )
                status = ConsumeConcurrentlyStatus.RECONSUME_LATER if got is ConsumeConcurrentlyStatus.RECONSUME_LATER \
                    else ConsumeConcurrentlyStatus.CONSUME_SUCCESS  # fmt: skip
            except Exception as exc:
                log.warning("consume.failed group=%s mq=%s error=%r", self.group, mq, exc)
                status = ConsumeConcurrentlyStatus.RECONSUME_LATER
            if pq.dropped:
                log.warning("consume.dropped_after group=%s mq=%s", self.group, mq)
                return
            await self._process_consume_result(status, ctx, msgs, pq, mq)

    async def _process_consume_result(
        self,
        status: ConsumeConcurrentlyStatus,
        ctx: ConsumeConcurrentlyContext,
        msgs: list[MessageExt],
        pq: ProcessQueue,
        mq: MessageQueue,
    ) -> None:
        if not msgs:
            return
        ack_index = ctx.ack_index
        if status is ConsumeConcurrentlyStatus.CONSUME_SUCCESS:
            ack_index = min(ack_index, len(msgs) - 1)
            self.stats.consumed_ok += ack_index + 1
            self.stats.consumed_failed += len(msgs) - ack_index - 1
        else:
            ack_index = -1
            self.stats.consumed_failed += len(msgs)
        done = list(msgs)
        if self.message_model_enum is MessageModel.BROADCASTING:
            for m in msgs[ack_index + 1 :]:
                log.warning("consume.broadcast_dropped group=%s msg_id=%s", self.group, m.msg_id)
        else:
            back_failed: list[MessageExt] = []
            for m in msgs[ack_index + 1 :]:
                if not await self.send_message_back(m, ctx.delay_level_when_next_consume, mq.broker_name):
                    m.reconsume_times += 1
                    back_failed.append(m)
            if back_failed:
                failed_ids = {id(m) for m in back_failed}
                done = [m for m in msgs if id(m) not in failed_ids]
                self._submit_consume_later(back_failed, pq, mq)
        offset = pq.remove_messages(done)
        if offset >= 0 and not pq.dropped:
            assert self.offset_store is not None
            self.offset_store.update_offset(mq, offset, True)

    async def clean_expired_messages(self) -> None:
        """Java ``ProcessQueue.cleanExpiredMsg``: a message whose listener call started more than
        ``consume_timeout`` ago is sent back (delay level 3) and dropped from the cache, so the committed offset
        can move past it. At most 16 per queue per round, oldest first."""
        if self._rebalance is None or self.consume_orderly:
            return
        now = now_ms()
        limit_ms = int(self.consume_timeout * 1000)
        for mq, pq in list(self._rebalance.process_queue_table.items()):
            for _ in range(min(16, len(pq))):
                msgs = pq.messages()
                if not msgs:
                    break
                first = msgs[0]
                started = first.properties.get(PROP_CONSUME_START_TIME)
                if not started or now - int(started) <= limit_ms:
                    break
                log.warning("consume.timeout group=%s mq=%s msg_id=%s", self.group, mq, first.msg_id)
                if not await self.send_message_back(first, 3, mq.broker_name):
                    break
                if pq.first_offset == first.queue_offset:
                    offset = pq.remove_messages([first])
                    if offset >= 0 and not pq.dropped and self.offset_store is not None:
                        self.offset_store.update_offset(mq, offset, True)

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
        new = Message(retry_topic(self.group), msg.body, flag=msg.flag, properties=msg.properties)
        new.properties[PROP_ORIGIN_MESSAGE_ID] = msg.origin_message_id or msg.msg_id
        new.properties[PROP_RETRY_TOPIC] = msg.topic
        new.properties[PROP_RECONSUME_TIME] = str(reconsume_time)
        limit = self._max_reconsume_times_orderly() if self.consume_orderly else self._max_reconsume_times()
        new.properties[PROP_MAX_RECONSUME_TIMES] = str(limit)
        new.properties.pop(PROP_TRAN_MSG, None)
        new.properties[PROP_DELAY] = str(delay_level)
        await self._inner_producer.send(new)

    # -- orderly ------------------------------------------------------------------------------------------

    def _max_reconsume_times_orderly(self) -> int:
        return 2**31 - 1 if self.max_reconsume_times == -1 else self.max_reconsume_times

    def _submit_orderly_later(self, pq: ProcessQueue, mq: MessageQueue, delay: float) -> None:
        delay = min(max(delay, 0.01), 30.0)

        async def later() -> None:
            await asyncio.sleep(delay)
            await self._consume_orderly(pq, mq)

        self._consume_tasks.spawn(later(), f"consume-orderly-later-{mq}")

    def _try_lock_later_and_reconsume(self, mq: MessageQueue, pq: ProcessQueue, delay: float) -> None:
        async def later() -> None:
            await asyncio.sleep(delay)
            assert self._rebalance is not None
            ok = self._running and await self._rebalance.lock(mq)
            self._submit_orderly_later(pq, mq, 0.01 if ok else 3.0)

        self._consume_tasks.spawn(later(), f"relock-{mq}")

    async def _consume_orderly(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        if pq.dropped:
            return
        clustering = self.message_model_enum is MessageModel.CLUSTERING
        lock = self._mq_locks.setdefault(mq, asyncio.Lock())
        async with lock:
            if clustering and not (pq.locked and not pq.is_lock_expired()):
                if not pq.dropped:
                    self._try_lock_later_and_reconsume(mq, pq, 0.1)
                return
            begin = time.monotonic()
            while True:
                if pq.dropped:
                    return
                if clustering and (not pq.locked or pq.is_lock_expired()):
                    self._try_lock_later_and_reconsume(mq, pq, 0.01)
                    return
                if time.monotonic() - begin > MAX_TIME_CONSUME_CONTINUOUSLY:
                    self._submit_orderly_later(pq, mq, 0.01)
                    return
                msgs = pq.take_messages(max(1, self.consume_message_batch_max_size))
                restore_retry_topic(msgs, retry_topic(self.group))
                if not msgs:
                    return
                ctx = ConsumeOrderlyContext(mq)
                status: ConsumeOrderlyStatus
                async with pq.consume_lock:
                    if pq.dropped:
                        return
                    async with self._consume_sem:
                        try:
                            assert self._listener is not None
                            got = await call_user(
                                self._listener, list(msgs), ctx, executor=self._executor,
                                is_async=self._listener_async,
                            )
                            status = got if isinstance(got, ConsumeOrderlyStatus) else ConsumeOrderlyStatus.SUCCESS
                        except Exception as exc:
                            log.warning("consume_orderly.failed group=%s mq=%s error=%r", self.group, mq, exc)
                            status = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                if not await self._process_orderly_result(msgs, status, ctx, pq, mq):
                    return

    async def _process_orderly_result(
        self,
        msgs: list[MessageExt],
        status: ConsumeOrderlyStatus,
        ctx: ConsumeOrderlyContext,
        pq: ProcessQueue,
        mq: MessageQueue,
    ) -> bool:
        """Java ``ConsumeMessageOrderlyService.processConsumeResult``; False stops the consume loop."""
        cont = True
        commit_offset = -1
        suspend = ctx.suspend_current_queue_time
        suspend_time = self.suspend_current_queue_time if suspend is None else suspend
        if ctx.auto_commit:
            if status is ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT:
                self.stats.consumed_failed += len(msgs)
                if await self._check_reconsume_times(msgs):
                    pq.make_message_to_consume_again(msgs)
                    self._submit_orderly_later(pq, mq, suspend_time)
                    cont = False
                else:
                    commit_offset = pq.commit()
            else:
                self.stats.consumed_ok += len(msgs)
                commit_offset = pq.commit()
        else:
            if status is ConsumeOrderlyStatus.SUCCESS:
                self.stats.consumed_ok += len(msgs)
            elif status is ConsumeOrderlyStatus.COMMIT:
                commit_offset = pq.commit()
            elif status is ConsumeOrderlyStatus.ROLLBACK:
                pq.rollback()
                self._submit_orderly_later(pq, mq, suspend_time)
                cont = False
            else:
                self.stats.consumed_failed += len(msgs)
                if await self._check_reconsume_times(msgs):
                    pq.make_message_to_consume_again(msgs)
                    self._submit_orderly_later(pq, mq, suspend_time)
                    cont = False
        if commit_offset >= 0 and not pq.dropped:
            assert self.offset_store is not None
            self.offset_store.update_offset(mq, commit_offset, False)
        return cont

    async def _check_reconsume_times(self, msgs: Sequence[MessageExt]) -> bool:
        """True: suspend and retry locally; messages over the retry limit go to the retry topic (→ DLQ)."""
        suspend = False
        limit = self._max_reconsume_times_orderly()
        for m in msgs:
            if m.reconsume_times >= limit:
                m.properties[PROP_RECONSUME_TIME] = str(m.reconsume_times)
                try:
                    await self._resend_to_retry_topic(m, m.reconsume_times, 3 + m.reconsume_times)
                except Exception as exc:
                    log.error("consume_orderly.send_back_failed msg_id=%s error=%s", m.msg_id, exc)
                    suspend = True
                    m.reconsume_times += 1
            else:
                suspend = True
                m.reconsume_times += 1
        return suspend


class _RebalancePush(RebalanceImpl):
    retry_topic_from_max_on_timestamp = True

    def __init__(self, consumer: PushConsumer, instance: ClientInstance) -> None:
        super().__init__(consumer.group, consumer.message_model, consumer.allocate_strategy, instance)
        self.consumer = consumer

    @property
    def consume_type(self) -> str:
        return CONSUME_PASSIVELY

    async def message_queue_changed(self, topic: str, mq_all: set[MessageQueue], mq_divided: set[MessageQueue]) -> None:
        sub = self.subscription_inner.get(topic)
        if sub is not None:
            sub.sub_version = now_ms()
        c = self.consumer
        n = len(self.process_queue_table)
        if n:
            if c.pull_threshold_for_topic != -1:
                c.pull_threshold_for_queue = max(1, c.pull_threshold_for_topic // n)
            if c.pull_threshold_size_for_topic != -1:
                c.pull_threshold_size_for_queue = max(1, c.pull_threshold_size_for_topic // n)
        await self.instance.send_heartbeat_to_all_brokers()

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

    def remove_dirty_offset(self, mq: MessageQueue) -> None:
        assert self.consumer.offset_store is not None
        self.consumer.offset_store.remove_offset(mq)

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        c = self.consumer
        assert c.offset_store is not None
        return await self.start_offset(c.offset_store, c.consume_from_where_enum, c.consume_timestamp_ms, mq)

    def dispatch_pull_requests(self, requests: list[PullRequest]) -> None:
        self.consumer.dispatch_pull_requests(requests)
