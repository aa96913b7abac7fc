"""Administration, transport-neutral: topics, subscription groups, offsets by queue, offset resets.

The rules of Java's AdminBrokerProcessor without its remoting: what a topic or group change checks and
touches, and the numbers behind topic stats, consume stats and a reset. The remoting processor
(``processors/admin.py``) encodes them in fastjson's shapes; a console or gRPC front would encode them its own way.

The walks over a topic's queues are coroutines that pause every ``WALK_SLICE`` queues (``pacing.Pacer``): a
topic with very many queues makes its own request slow, never every other client's.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.broker.context import BrokerContext
from rocketq.broker.managers.subscription_manager import SubscriptionGroupConfig
from rocketq.broker.messaging.bounds import group_error, queue_count_error
from rocketq.broker.messaging.pacing import Pacer
from rocketq.codes import ResponseCode
from rocketq.errors import BrokerError
from rocketq.protocol.bodies import TopicConfig
from rocketq.protocol.topics import topic_name_error

#: TopicFilterType's names (an UPDATE_AND_CREATE_TOPIC with another is refused, as Java's header check does)
TOPIC_FILTER_TYPES = frozenset({"SINGLE_TAG", "MULTI_TAG"})

#: the most consume-queue units one QUERY_CONSUME_QUEUE answers (Java: up to the end of the queue's file)
QUERY_CONSUME_QUEUE_MAX_COUNT = 1000
#: the most queues of one topic an admin walk visits: beyond it, a topic's stats would not fit in a 16 MiB
#: frame that any client could read, so the request is refused at once instead of building them
WALK_MAX_QUEUES = 131_072

_FROM_SLAVE = "Can't modify topic or subscription group from slave broker, please execute it from master broker."


@dataclass(frozen=True, slots=True)
class QueueOffsets:
    """One queue's offsets: the store's min/max, the last store time, and a group's committed offset."""

    queue_id: int
    min_offset: int
    max_offset: int
    last_timestamp: int
    consumer_offset: int = -1


class AdminService:
    def __init__(self, ctx: BrokerContext) -> None:
        self._ctx = ctx

    # ------------------------------------------------------------------------------------------ topics

    def _refused(self, topic: str | None = None) -> tuple[int, str] | None:
        """Java's checks before a topic or group is changed: on the master only; a valid, non-system topic."""
        if self._ctx.role.is_slave:
            return ResponseCode.SYSTEM_ERROR, _FROM_SLAVE
        if topic is not None:
            error = topic_name_error(topic)
            if error is not None:
                return ResponseCode.SYSTEM_ERROR, error
            if self._ctx.topics.is_system(topic):
                return ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic."
        return None

    async def create_topic(self, tc: TopicConfig) -> tuple[int, str | None]:
        """Create or update a topic; answered once the name servers know it, as Java does."""
        refused = self._refused(tc.topic_name)
        if refused is not None:
            return refused
        if tc.topic_filter_type not in TOPIC_FILTER_TYPES:  # CreateTopicRequestHeader.checkFields
            return ResponseCode.SYSTEM_ERROR, f"topicFilterType = [{tc.topic_filter_type}] value invalid"
        limit = self._ctx.config.maxTopicQueueNums
        for field, nums in (("readQueueNums", tc.read_queue_nums), ("writeQueueNums", tc.write_queue_nums)):
            error = queue_count_error(field, nums, limit)
            if error is not None:
                return ResponseCode.SYSTEM_ERROR, error
        self._ctx.topics.update(tc)
        await self._ctx.publish_topics()
        return ResponseCode.SUCCESS, None

    def delete_topic(self, topic: str) -> tuple[int, str | None]:
        """Delete a topic's configuration, queues and (unlike Java, which keeps them) its consumer offsets."""
        refused = self._refused(topic)
        if refused is not None:
            return refused
        ctx = self._ctx
        ctx.topics.delete(topic)
        ctx.offsets.remove_topic(topic)
        ctx.store.delete_topics({topic})
        ctx.registrar.kick()
        return ResponseCode.SUCCESS, None

    async def topic_offsets(self, topic: str, pacer: Pacer | None = None) -> list[QueueOffsets] | None:
        """Every write queue's offsets (None: no such topic)."""
        tc = self._ctx.topics.get(topic)
        if tc is None:
            return None
        pacer = pacer or Pacer()
        rows = []
        for qid in range(_walked(tc, tc.write_queue_nums)):
            rows.append(self._queue(topic, qid))
            await pacer.step()
        return rows

    def _queue(self, topic: str, qid: int, consumer_offset: int = -1) -> QueueOffsets:
        store = self._ctx.store
        max_off = store.get_max_offset_in_queue(topic, qid)
        last_ts = store.get_message_store_timestamp(topic, qid, max_off - 1) if max_off > 0 else 0
        return QueueOffsets(qid, store.get_min_offset_in_queue(topic, qid), max_off, last_ts, consumer_offset)

    def clean_unused_topics(self) -> list[str]:
        """CLEAN_UNUSED_TOPIC: drop the consume queues of topics no longer configured."""
        return self._ctx.store.clean_unused_topics(set(self._ctx.topics.table))

    def clean_expired_consume_queues(self) -> list[tuple[str, int]]:
        """CLEAN_EXPIRED_CONSUMEQUEUE: drop the consume queues whose messages all left the commit log."""
        return self._ctx.store.clean_expired_consume_queues()

    def delete_expired_commit_log(self) -> None:
        """DELETE_EXPIRED_COMMITLOG: the next retention runs delete expired files whatever the hour (Java's
        executeDeleteFilesManually; the store's cleanup thread does the deleting)."""
        self._ctx.store.trigger_delete_files()

    # ------------------------------------------------------------------------------------------ groups

    def update_group(self, cfg: SubscriptionGroupConfig) -> tuple[int, str | None]:
        refused = self._refused()
        if refused is not None:
            return refused
        # the retry topic gets retryQueueNums queues (0: the group never gets one)
        error = group_error("groupName", cfg.group_name) or queue_count_error(
            "retryQueueNums", cfg.retry_queue_nums, self._ctx.config.maxTopicQueueNums, low=0
        )
        if error is not None:
            return ResponseCode.SYSTEM_ERROR, error
        self._ctx.groups.update(cfg)
        return ResponseCode.SUCCESS, None

    def delete_group(self, group: str, remove_offsets: bool = False) -> tuple[int, str | None]:
        """Delete a group's configuration; its consumer offsets only when asked (Java's removeOffset), so a group
        created again under the name resumes where it was."""
        refused = self._refused()
        if refused is not None:
            return refused
        self._ctx.groups.delete(group)
        if remove_offsets:
            self._ctx.offsets.remove_group(group)
        return ResponseCode.SUCCESS, None

    def clone_offsets(self, src: str, dest: str, topic: str | None, offline: bool) -> list[str]:
        """CLONE_GROUP_OFFSET: ``dest`` takes ``src``'s committed offsets, topic by topic (``topic`` or every
        topic ``src`` has offsets on); returns the topics cloned. Java's rules: a topic without configuration is
        skipped, and unless ``offline`` so is one ``src`` does not subscribe to while it has online
        subscriptions; a topic ``src`` has no offsets on leaves ``dest``'s alone. Java clones the header's topic
        in its loop, so without ``-t`` it clones nothing; rocketq clones each topic of the loop."""
        ctx = self._ctx
        online = ctx.consumers.get(src)
        subscribed = online.subscriptions if online is not None and not offline else {}
        cloned = []
        for name in [topic] if topic else sorted(ctx.offsets.topics_of_group(src)):
            if ctx.topics.get(name) is None or (subscribed and name not in subscribed):
                continue
            if ctx.offsets.clone(src, dest, name):
                cloned.append(name)
        return cloned

    async def consume_offsets(
        self, group: str, topic: str | None, *, write_queues: bool = False, order_only: bool = False,
        pacer: Pacer | None = None,
    ) -> dict[str, list[QueueOffsets]]:  # fmt: skip
        """Per topic the group has offsets on (or ``topic``): each queue's broker offset and the group's.

        Java's rules: a topic without configuration is left out, and so is one the group does not subscribe
        to while it has online subscriptions; an offset never committed reads 0; ``last_timestamp`` is the
        store time of the last message the group consumed (0: none yet). Java counts the read queues for
        GET_CONSUME_STATS and the write queues for GET_BROKER_CONSUME_STATS (``write_queues``).
        """
        ctx = self._ctx
        store = ctx.store
        pacer = pacer or Pacer()
        topics = [topic] if topic else sorted(ctx.offsets.topics_of_group(group))
        online = ctx.consumers.get(group)
        subscribed = online.subscriptions if online is not None else {}
        out: dict[str, list[QueueOffsets]] = {}
        for name in topics:
            await pacer.step()
            tc = ctx.topics.get(name)
            if tc is None or (subscribed and name not in subscribed) or (order_only and not tc.order):
                continue
            committed = ctx.offsets.offsets_of(group, name)
            rows = []
            queues = _walked(tc, tc.write_queue_nums if write_queues else tc.read_queue_nums)
            if not pacer.visit(queues, WALK_MAX_QUEUES):
                raise BrokerError(
                    f"this request would walk more than {WALK_MAX_QUEUES} queues (group {group}, topic {name}); "
                    "ask for one group or one topic",
                    ResponseCode.SYSTEM_ERROR,
                )
            for qid in range(queues):
                consumer_off = max(committed.get(qid, 0), 0)
                last_ts = store.get_message_store_timestamp(name, qid, consumer_off - 1) if consumer_off > 0 else 0
                rows.append(QueueOffsets(qid, store.get_min_offset_in_queue(name, qid),
                                         max(store.get_max_offset_in_queue(name, qid), 0), max(last_ts, 0),
                                         consumer_off))  # fmt: skip
                await pacer.step()
            out[name] = rows
        return out

    async def broker_consume_offsets(
        self, order_only: bool, pacer: Pacer | None = None
    ) -> dict[str, dict[str, list[QueueOffsets]]]:
        """GET_BROKER_CONSUME_STATS: every subscription group's ``consume_offsets`` (Java's write-queue count)."""
        pacer = pacer or Pacer()
        return {
            group: await self.consume_offsets(group, None, write_queues=True, order_only=order_only, pacer=pacer)
            for group in sorted(self._ctx.groups.table)
        }

    def consume_tps(self, group: str, topic: str | None) -> float:
        """Messages per second the group pulled over the last minute, from ``topic`` or every topic it consumes
        (Java sums tpsGroupGetNums over the topics of its consume stats)."""
        topics = [topic] if topic else sorted(self._ctx.offsets.topics_of_group(group))
        return sum((self._ctx.metrics.group_consume_tps(group, name) for name in topics), 0.0)

    async def reset_offsets(
        self, group: str, topic: str, timestamp: int, force: bool, pacer: Pacer | None = None
    ) -> list[tuple[int, int]] | None:
        """INVOKE_BROKER_TO_RESET_OFFSET's rule per queue: the offset found for ``timestamp`` (-1 = the max
        offset) replaces the group's when ``force`` or when it is smaller. Unlike Java, rocketq also writes
        them to its own offset table, so a reset sticks while the group is offline. None: no such topic.

        The offsets are found in slices and committed together at the end: a reset cancelled half-way (a
        shutdown) changes nothing."""
        ctx = self._ctx
        tc = ctx.topics.get(topic)
        if tc is None:
            return None
        store = ctx.store
        pacer = pacer or Pacer()
        targets: list[int] = []
        for qid in range(_walked(tc, tc.write_queue_nums)):
            if timestamp == -1:
                targets.append(store.get_max_offset_in_queue(topic, qid))
            else:
                targets.append(store.get_offset_in_queue_by_time(topic, qid, timestamp))
            await pacer.step()
        current = ctx.offsets.offsets_of(group, topic)  # what the group committed meanwhile counts too
        table: list[tuple[int, int]] = []
        for qid, target in enumerate(targets):
            now = current.get(qid, -1)
            offset = target if force or now < 0 or target < now else now
            ctx.offsets.commit(group, topic, qid, offset)
            table.append((qid, offset))
        ctx.offsets.forget_pulled(group, topic)  # the consumers pull from the new offsets next
        return table


def _walked(tc: TopicConfig, queues: int) -> int:
    """``queues``, when a walk may visit that many of ``tc``'s queues; else the request is refused."""
    if queues > WALK_MAX_QUEUES:
        raise BrokerError(
            f"topic[{tc.topic_name}] has {queues} queues; an admin request walks at most {WALK_MAX_QUEUES}",
            ResponseCode.SYSTEM_ERROR,
        )
    return queues
