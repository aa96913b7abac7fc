"""The push consumer's pulling: one long-polling loop per owned queue (Java ``PullMessageService`` and
``DefaultMQPushConsumerImpl.pullMessage`` with its ``PullCallback``).

Each queue the rebalance assigns gets a task running ``PullMessageService.pull_once`` until the queue is dropped:
flow control first (no pull while the queue caches too much, or spans too many offsets in concurrent mode), then
PULL_MESSAGE with the SUSPEND flag and the committed offset piggy-backed, then the result — found messages go to
the consume service, an empty answer moves the offset, an illegal offset drops the queue for the next rebalance.

The service reads its consumer through ``PullingConsumer``: the settings a pull uses are read at every pull (a
rebalance resizes the per-queue thresholds), so they stay the consumer's attributes.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import Protocol

from rocketq.client._consume_service import ConsumeStats
from rocketq.client._consumer_base import (
    PULL_DELAY_WHEN_BROKER_FLOW_CONTROL,
    ConsumerRebalance,
    cache_flow_control_delay,
)
from rocketq.client._pull_api import PullAPIWrapper, build_pull_sys_flag
from rocketq.client._rebalance import PullRequest
from rocketq.client._tasks import TaskSet
from rocketq.client.message import MessageExt, PullStatus
from rocketq.client.offset_store import OffsetStore, ReadOffsetType
from rocketq.client.process_queue import ProcessQueue
from rocketq.client.subscription import MessageModel
from rocketq.codes import ResponseCode
from rocketq.errors import BrokerError, ClientError, ProtocolError, RemotingError
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.topics import RETRY_PREFIX

__all__ = ["PULL_DELAY_WHEN_SUSPEND", "PullMessageService", "PullingConsumer"]

# The push consumer's logger: these were always its events ("pull.*"), and log filters name it.
log = logging.getLogger("rocketq.client.push_consumer")

#: Java PULL_TIME_DELAY_MILLS_WHEN_SUSPEND, seconds.
PULL_DELAY_WHEN_SUSPEND = 1.0


class PullingConsumer(Protocol):
    """What a pull reads of the push consumer (its settings, its state) and where found messages go."""

    pull_batch_size: int
    pull_interval: float
    pull_threshold_for_queue: int
    pull_threshold_size_for_queue: int
    consume_concurrently_max_span: int
    broker_suspend_max_time: float
    consumer_timeout_when_suspend: float
    pull_time_delay_when_exception: float
    post_subscription_when_pull: bool
    offset_illegal_fix_delay: float
    message_model_enum: MessageModel
    paused: bool
    consume_orderly: bool
    group: str
    offset_store: OffsetStore | None
    stats: ConsumeStats
    _running: bool
    _stopping: bool
    _rebalance: ConsumerRebalance | None
    _pull_api: PullAPIWrapper | None
    _tasks: TaskSet  # the consumer's background tasks: pull loops run there, and are cancelled with them

    def _submit_consume_request(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool
    ) -> None: ...


class PullMessageService:
    """The pull loops of one push consumer, one task per queue."""

    def __init__(self, consumer: PullingConsumer) -> None:
        self._consumer = consumer
        self._tasks: dict[MessageQueue, asyncio.Task[None]] = {}

    def dispatch(self, requests: list[PullRequest]) -> None:
        """Start pulling the queues of ``requests`` (a queue's earlier loop is stopped first)."""
        c = self._consumer
        if c._stopping:
            return
        for req in requests:
            old = self._tasks.pop(req.message_queue, None)
            if old is not None:
                old.cancel()
            task = c._tasks.spawn(self._loop(req), f"pull-{req.message_queue}")
            self._tasks[req.message_queue] = task
            task.add_done_callback(functools.partial(self._forget, req.message_queue))

    def _forget(self, mq: MessageQueue, task: asyncio.Task[None]) -> None:
        if self._tasks.get(mq) is task:
            del self._tasks[mq]

    def stop(self, mq: MessageQueue) -> None:
        task = self._tasks.pop(mq, None)
        if task is not None:
            task.cancel()

    def cancel_all(self) -> None:
        for task in list(self._tasks.values()):
            task.cancel()

    async def wait_all(self) -> None:
        """After ``cancel_all``: until every loop has ended."""
        if self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
            self._tasks.clear()

    async def _loop(self, req: PullRequest) -> None:
        c = self._consumer
        delay: float | None = 0.0
        while c._running and not c._stopping and not req.process_queue.dropped:
            if delay:
                await asyncio.sleep(delay)
                if not c._running or req.process_queue.dropped:
                    return
            delay = await self.pull_once(req)
            if delay is None:
                return

    def flow_control_delay(self, pq: ProcessQueue) -> float | None:
        """The pause before the next pull when this queue's cache is over a threshold, else None."""
        c = self._consumer
        max_span = None if c.consume_orderly else c.consume_concurrently_max_span  # span: concurrent mode only
        return cache_flow_control_delay(pq, c.pull_threshold_for_queue, c.pull_threshold_size_for_queue, max_span)

    async def pull_once(self, req: PullRequest) -> float | None:
        """One pull (Java ``DefaultMQPushConsumerImpl.pullMessage``); returns the delay before the next, or None
        to stop this queue's loop."""
        c = self._consumer
        pq = req.process_queue
        mq = req.message_queue
        rebalance, pull_api, offset_store = c._rebalance, c._pull_api, c.offset_store
        assert rebalance is not None and pull_api is not None and offset_store is not None
        delay_exc = c.pull_time_delay_when_exception
        pq.last_pull_timestamp = time.monotonic()
        if c.paused:
            return PULL_DELAY_WHEN_SUSPEND
        flow_delay = self.flow_control_delay(pq)
        if flow_delay is not None:
            c.stats.flow_control_times += 1
            return flow_delay
        if c.consume_orderly:
            if not pq.locked:
                log.info("pull.later_not_locked mq=%s", mq)
                return delay_exc
            if not req.previously_locked:
                try:
                    offset = await rebalance.compute_pull_from_where(mq)
                except Exception as exc:
                    log.error("pull.offset_failed mq=%s error=%s", mq, exc)
                    return delay_exc
                req.previously_locked = True
                req.next_offset = offset
        sub = rebalance.subscription_inner.get(mq.topic)
        if sub is None:
            log.warning("pull.no_subscription mq=%s", mq)
            return delay_exc
        commit_offset_value = 0
        commit_enable = False
        if c.message_model_enum is MessageModel.CLUSTERING:
            commit_offset_value = await offset_store.read_offset(mq, ReadOffsetType.READ_FROM_MEMORY)
            commit_enable = commit_offset_value > 0
        sub_expression = sub.sub_string if c.post_subscription_when_pull and not sub.class_filter_mode else None
        sys_flag = build_pull_sys_flag(commit_enable, True, sub_expression is not None, sub.class_filter_mode)
        began = time.monotonic()
        try:
            raw = await pull_api.pull_kernel(
                mq, sub_expression, sub.expression_type, sub.sub_version, req.next_offset, c.pull_batch_size,
                sys_flag, max(commit_offset_value, 0), int(c.broker_suspend_max_time * 1000),
                c.consumer_timeout_when_suspend,
            )  # fmt: skip
            result = pull_api.process_pull_result(mq, raw, sub)
        except BrokerError as exc:
            if not mq.topic.startswith(RETRY_PREFIX):
                log.warning("pull.failed mq=%s error=%s", mq, exc)
            if exc.code == ResponseCode.FLOW_CONTROL:
                return PULL_DELAY_WHEN_BROKER_FLOW_CONTROL
            return delay_exc
        except (RemotingError, ClientError, ProtocolError) as exc:
            if not mq.topic.startswith(RETRY_PREFIX):
                log.warning("pull.failed mq=%s error=%s", mq, exc)
            return delay_exc
        if pq.dropped:
            return None
        if result.status is PullStatus.FOUND:
            req.next_offset = result.next_begin_offset
            c.stats.on_pull(c.group, mq.topic, len(result.messages), (time.monotonic() - began) * 1000)
            if c.stats.meter is not None:
                c.stats.meter.on_arrived(mq.topic, c.stats.client_id, c.group, result.messages)
            if not result.messages:
                return 0.0
            dispatch = pq.put_messages(result.messages)
            c._submit_consume_request(result.messages, pq, mq, dispatch)
            return c.pull_interval
        if result.status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
            req.next_offset = result.next_begin_offset
            if pq.msg_count == 0:  # Java correctTagsOffset
                offset_store.update_offset(mq, req.next_offset, True)
            return 0.0
        # OFFSET_ILLEGAL: drop the queue, store the corrected offset, let the next rebalance re-add it.
        log.warning("pull.offset_illegal mq=%s next=%d", mq, result.next_begin_offset)
        req.next_offset = result.next_begin_offset
        pq.dropped = True

        async def fix() -> None:
            assert c.offset_store is not None and c._rebalance is not None
            c.offset_store.update_offset(mq, req.next_offset, False)
            await c.offset_store.persist(mq)
            await c._rebalance.remove_process_queue(mq)

        c._tasks.later(c.offset_illegal_fix_delay, fix, f"fix-offset-{mq}")
        return None
