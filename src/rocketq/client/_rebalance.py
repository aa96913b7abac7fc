"""Queue rebalancing shared by the push and lite-pull consumers (Java ``RebalanceImpl``).

For each subscribed topic: BROADCASTING takes every readable queue; CLUSTERING sorts the topic's queues and
the group's client ids (GET_CONSUMER_LIST_BY_GROUP) and asks the allocation strategy for this client's share.
``update_process_queue_table`` then drops queues no longer owned (after ``remove_unnecessary_message_queue``
agrees: offsets persisted, orderly locks released) and adds new ones at ``compute_pull_from_where``; for
orderly consumption a new queue is taken only if LOCK_BATCH_MQ grants it.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass

from rocketq.client._instance import ClientInstance
from rocketq.client.allocate import AllocateMessageQueueStrategy
from rocketq.client.offset_store import OffsetStore, ReadOffsetType
from rocketq.client.process_queue import ProcessQueue
from rocketq.client.subscription import ConsumeFromWhere
from rocketq.errors import BrokerError, RemotingError
from rocketq.protocol.bodies import MessageQueue, SubscriptionData
from rocketq.protocol.route import MASTER_ID
from rocketq.protocol.topics import RETRY_PREFIX

log = logging.getLogger("rocketq.client.rebalance")

BROADCASTING = "BROADCASTING"
CLUSTERING = "CLUSTERING"
CONSUME_ACTIVELY = "CONSUME_ACTIVELY"
CONSUME_PASSIVELY = "CONSUME_PASSIVELY"


@dataclass(slots=True)
class PullRequest:
    consumer_group: str
    message_queue: MessageQueue
    process_queue: ProcessQueue
    next_offset: int
    previously_locked: bool = False


class RebalanceImpl(ABC):
    def __init__(
        self,
        consumer_group: str,
        message_model: str,
        strategy: AllocateMessageQueueStrategy,
        instance: ClientInstance,
    ) -> None:
        self.consumer_group = consumer_group
        self.message_model = message_model
        self.strategy = strategy
        self.instance = instance
        self.process_queue_table: dict[MessageQueue, ProcessQueue] = {}
        self.topic_subscribe_info_table: dict[str, set[MessageQueue]] = {}
        self.subscription_inner: dict[str, SubscriptionData] = {}

    # -- hooks --------------------------------------------------------------------------------------------

    @property
    @abstractmethod
    def consume_type(self) -> str: ...

    @abstractmethod
    async def message_queue_changed(
        self, topic: str, mq_all: set[MessageQueue], mq_divided: set[MessageQueue]
    ) -> None: ...

    @abstractmethod
    async def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool: ...

    @abstractmethod
    def remove_dirty_offset(self, mq: MessageQueue) -> None: ...

    @abstractmethod
    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """The offset to start a newly assigned queue at (-1: not now). Raises when it cannot be computed."""

    @abstractmethod
    def dispatch_pull_requests(self, requests: list[PullRequest]) -> None: ...

    #: Java's push consumer starts a retry topic at its max offset under CONSUME_FROM_TIMESTAMP; the lite-pull
    #: consumer searches it by time like any topic.
    retry_topic_from_max_on_timestamp = False

    async def start_offset(
        self, offset_store: OffsetStore, where: ConsumeFromWhere, timestamp_ms: int, mq: MessageQueue
    ) -> int:
        """computePullFromWhere: the stored offset, else where ``where`` says a new group starts (-1: not now)."""
        last = await offset_store.read_offset(mq, ReadOffsetType.READ_FROM_STORE)
        if last >= 0:
            return last
        if last != -1:
            return -1
        is_retry = mq.topic.startswith(RETRY_PREFIX)
        if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
            return 0
        if where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
            if is_retry and self.retry_topic_from_max_on_timestamp:
                return await self.instance.max_offset(mq)
            return await self.instance.search_offset(mq, timestamp_ms)
        # LAST_OFFSET (and the deprecated MIN/MAX/LAST_AND_FROM_MIN variants, which Java treats the same)
        if is_retry:
            return 0
        return await self.instance.max_offset(mq)

    # -- locks (orderly) ----------------------------------------------------------------------------------

    def _master_addr(self, broker_name: str) -> str | None:
        found = self.instance.find_broker_address_in_subscribe(broker_name, MASTER_ID, True)
        return found[0] if found else None

    async def lock(self, mq: MessageQueue) -> bool:
        addr = self._master_addr(mq.broker_name)
        if addr is None:
            return False
        try:
            locked = await self.instance.api.lock_batch_mq(
                addr, self.consumer_group, self.instance.client_id, [mq], 1.0
            )
        except (RemotingError, BrokerError) as exc:
            log.warning("lock.failed mq=%s error=%s", mq, exc)
            return False
        now = time.monotonic()
        for m in locked:
            pq = self.process_queue_table.get(m)
            if pq is not None:
                pq.locked = True
                pq.last_lock_timestamp = now
        ok = mq in locked
        log.info("lock.%s group=%s mq=%s", "ok" if ok else "refused", self.consumer_group, mq)
        return ok

    def _by_broker(self) -> dict[str, list[MessageQueue]]:
        out: dict[str, list[MessageQueue]] = {}
        for mq in self.process_queue_table:
            out.setdefault(mq.broker_name, []).append(mq)
        return out

    async def lock_all(self) -> None:
        for broker_name, mqs in self._by_broker().items():
            addr = self._master_addr(broker_name)
            if addr is None:
                continue
            try:
                locked = await self.instance.api.lock_batch_mq(
                    addr, self.consumer_group, self.instance.client_id, mqs, 1.0
                )
            except (RemotingError, BrokerError) as exc:
                log.warning("lock_all.failed broker=%s error=%s", broker_name, exc)
                continue
            now = time.monotonic()
            for mq in mqs:
                pq = self.process_queue_table.get(mq)
                if pq is None:
                    continue
                if mq in locked:
                    pq.locked = True
                    pq.last_lock_timestamp = now
                else:
                    pq.locked = False
                    log.warning("lock.lost group=%s mq=%s", self.consumer_group, mq)

    async def unlock(self, mq: MessageQueue, oneway: bool) -> None:
        addr = self._master_addr(mq.broker_name)
        if addr is None:
            return
        try:
            await self.instance.api.unlock_batch_mq(
                addr, self.consumer_group, self.instance.client_id, [mq], 1.0, oneway=oneway
            )
        except (RemotingError, BrokerError) as exc:
            log.warning("unlock.failed mq=%s error=%s", mq, exc)

    async def unlock_all(self, oneway: bool) -> None:
        for broker_name, mqs in self._by_broker().items():
            addr = self._master_addr(broker_name)
            if addr is None:
                continue
            try:
                await self.instance.api.unlock_batch_mq(
                    addr, self.consumer_group, self.instance.client_id, mqs, 1.0, oneway=oneway
                )
            except (RemotingError, BrokerError) as exc:
                log.warning("unlock_all.failed broker=%s error=%s", broker_name, exc)
                continue
            for mq in mqs:
                pq = self.process_queue_table.get(mq)
                if pq is not None:
                    pq.locked = False

    # -- rebalance ----------------------------------------------------------------------------------------

    async def do_rebalance(self, is_order: bool) -> None:
        for topic in list(self.subscription_inner):
            try:
                await self.rebalance_by_topic(topic, is_order)
            except (RemotingError, BrokerError) as exc:
                if not topic.startswith(RETRY_PREFIX):
                    log.warning("rebalance.topic_failed topic=%s error=%s", topic, exc)
        self.truncate_message_queue_not_my_topic()

    def allocate(self, topic: str, mq_set: set[MessageQueue], cid_all: list[str]) -> set[MessageQueue]:
        mq_all = sorted(mq_set)
        cids = sorted(cid_all)
        try:
            result = self.strategy(self.consumer_group, self.instance.client_id, mq_all, cids)
        except Exception:
            log.exception("allocate.failed strategy=%s", getattr(self.strategy, "name", self.strategy))
            raise
        return set(result or [])

    async def rebalance_by_topic(self, topic: str, is_order: bool) -> None:
        mq_set = self.topic_subscribe_info_table.get(topic)
        if mq_set is None:
            # Java waits for the next periodic route poll (30 s); asking now makes new topics usable sooner.
            await self.instance.update_topic_route(topic)
            mq_set = self.topic_subscribe_info_table.get(topic)
        retry_topic = topic.startswith(RETRY_PREFIX)
        if self.message_model == BROADCASTING:
            if mq_set is None:
                log.warning("rebalance.no_route group=%s topic=%s", self.consumer_group, topic)
                self.instance.note_unsettled(topic)
                return
            changed, requests = await self.update_process_queue_table(topic, set(mq_set), is_order)
            if changed:
                await self.message_queue_changed(topic, mq_set, mq_set)
            self.dispatch_pull_requests(requests)
            return
        cid_all = await self.instance.find_consumer_id_list(topic, self.consumer_group)
        if cid_all is None and mq_set and not retry_topic:
            # The broker may never have had a heartbeat from this client: none went out while no route named
            # it (a consumer started before its topic existed), and the next is up to 30 s away. Send one now.
            await self.instance.send_heartbeat_to_all_brokers()
            cid_all = await self.instance.find_consumer_id_list(topic, self.consumer_group)
        if mq_set is None and not retry_topic:
            log.warning("rebalance.no_route group=%s topic=%s", self.consumer_group, topic)
        if cid_all is None and mq_set is not None:
            # A new group's retry topic is routed only after the broker has registered it: expected at first.
            level = logging.DEBUG if retry_topic else logging.WARNING
            log.log(level, "rebalance.no_consumer_ids group=%s topic=%s", self.consumer_group, topic)
        if mq_set is None or not mq_set or not cid_all:
            if not retry_topic:
                self.instance.note_unsettled(topic)
            return
        try:
            divided = self.allocate(topic, mq_set, cid_all)
        except Exception:
            return
        changed, requests = await self.update_process_queue_table(topic, divided, is_order)
        if changed:
            log.info("rebalance.changed group=%s topic=%s client=%s cids=%d assigned=%s",
                     self.consumer_group, topic, self.instance.client_id, len(cid_all), sorted(divided))  # fmt: skip
            await self.message_queue_changed(topic, mq_set, divided)
        # Java dispatches before messageQueueChanged; we dispatch after it, so the first pulls carry the
        # subscription version the broker has just been told in the heartbeat (else SUBSCRIPTION_NOT_LATEST).
        self.dispatch_pull_requests(requests)

    def truncate_message_queue_not_my_topic(self) -> None:
        for mq in list(self.process_queue_table):
            if mq.topic not in self.subscription_inner:
                pq = self.process_queue_table.pop(mq)
                pq.dropped = True
                log.info("rebalance.truncate group=%s mq=%s", self.consumer_group, mq)

    async def update_process_queue_table(
        self, topic: str, mq_set: set[MessageQueue], is_order: bool
    ) -> tuple[bool, list[PullRequest]]:
        """Apply a new assignment; returns (changed, pull requests for the added queues, to dispatch)."""
        changed = False
        for mq, pq in list(self.process_queue_table.items()):
            if mq.topic != topic:
                continue
            if mq not in mq_set:
                pq.dropped = True
                if await self.remove_unnecessary_message_queue(mq, pq):
                    self.process_queue_table.pop(mq, None)
                    changed = True
                    log.info("rebalance.remove group=%s mq=%s", self.consumer_group, mq)
            elif pq.is_pull_expired() and self.consume_type == CONSUME_PASSIVELY:
                pq.dropped = True
                if await self.remove_unnecessary_message_queue(mq, pq):
                    self.process_queue_table.pop(mq, None)
                    changed = True
                    log.error("rebalance.remove_stalled group=%s mq=%s", self.consumer_group, mq)
        requests: list[PullRequest] = []
        for mq in sorted(mq_set):
            if mq in self.process_queue_table:
                continue
            if is_order and not await self.lock(mq):
                log.warning("rebalance.add_failed_lock group=%s mq=%s", self.consumer_group, mq)
                continue
            self.remove_dirty_offset(mq)
            pq = ProcessQueue()
            pq.locked = True
            try:
                next_offset = await self.compute_pull_from_where(mq)
            except Exception as exc:
                log.info("rebalance.offset_failed group=%s mq=%s error=%s", self.consumer_group, mq, exc)
                continue
            if next_offset < 0:
                log.warning("rebalance.add_failed group=%s mq=%s", self.consumer_group, mq)
                continue
            if mq in self.process_queue_table:
                continue
            self.process_queue_table[mq] = pq
            requests.append(PullRequest(self.consumer_group, mq, pq, next_offset))
            changed = True
            log.info("rebalance.add group=%s mq=%s offset=%d", self.consumer_group, mq, next_offset)
        return changed, requests

    async def remove_process_queue(self, mq: MessageQueue) -> None:
        pq = self.process_queue_table.pop(mq, None)
        if pq is not None:
            pq.dropped = True
            await self.remove_unnecessary_message_queue(mq, pq)

    def destroy(self) -> None:
        for pq in self.process_queue_table.values():
            pq.dropped = True
        self.process_queue_table.clear()
