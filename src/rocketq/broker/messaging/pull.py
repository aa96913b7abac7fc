"""Pulling, transport-neutral: the rules of Java 4.9's PullMessageProcessor without its remoting.

Store status → response code and nextBeginOffset follow RocketMQ 4.9's PullMessageProcessor (protocol
reference §3.2). A pull that finds nothing and may be suspended comes back with ``suspend_seconds`` set: the
front end parks it (``PullHoldService``) and calls ``pull`` again, without permission to park, when a message
arrives or the time is up.

Every answer names the broker the client should pull from next (``suggest_which_broker_id``, see
``suggest_broker_id``). A slave serves pulls whatever ``slaveReadEnable`` says (Java 4.9 sets
PULL_RETRY_IMMEDIATELY for a slave that may not be read and then overwrites it with the store's status), so a
consumer whose master is gone keeps reading from the slave; it only never commits offsets on a pull there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rocketq.broker.context import BrokerContext
from rocketq.broker.message_filter import FilterBuildError, build_filter
from rocketq.broker.messaging.bounds import group_error, offset_error
from rocketq.codes import ResponseCode
from rocketq.protocol.bodies import PERM_READ, SubscriptionData
from rocketq.protocol.headers import (
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUBSCRIPTION,
    PULL_FLAG_SUSPEND,
    PullMessageRequestHeader,
)
from rocketq.store import GetMessageStatus


@dataclass(slots=True)
class PullOutcome:
    """A pull's outcome. ``body`` is the found records laid end to end (empty unless SUCCESS).

    ``suspend_seconds`` > 0: nothing to answer yet — the front end parks the request for that long
    (long polling) and runs the pull again when a message arrives or the time is up.
    """

    code: int
    remark: str | None
    next_begin_offset: int = 0
    min_offset: int = 0
    max_offset: int = 0
    body: bytes = b""
    suspend_seconds: float = 0.0
    #: tags-code filter of a parked pull (a new message wakes it only when it matches)
    matches_code: Callable[[int], bool] | None = None
    #: the broker id the client should pull this queue from next (0: the master)
    suggest_which_broker_id: int = 0


def suggest_broker_id(*, slave_read_enable: bool, pulling_behind: bool, broker_id: int, slowly_broker_id: int) -> int:
    """Java 4.9 PullMessageProcessor's ``suggestWhichBrokerId``.

    ``pulling_behind``: the store's ``suggest_pulling_from_slave`` (the pull reads further behind the log's end
    than ``accessMessageInMemoryMaxRatio`` % of RAM). Without ``slaveReadEnable`` always the master; with it, the
    group's ``whichBrokerWhenConsumeSlowly`` when behind, else the group's ``brokerId`` (0 unless set).
    """
    if not slave_read_enable:
        return 0
    return slowly_broker_id if pulling_behind else broker_id


# Java caps holds well below the clients' 30 s read timeout.
_MAX_SUSPEND_MS = 25_000
_SUCCESS = ResponseCode.SUCCESS


class PullService:
    def __init__(self, ctx: BrokerContext) -> None:
        self._ctx = ctx
        # the tables themselves: a pull reads them with one dict lookup each (the managers only on a miss)
        self._group_table = ctx.groups.table
        self._topic_table = ctx.topics.table

    def pull(self, h: PullMessageRequestHeader, *, remote: str, allow_suspend: bool) -> PullOutcome:
        ctx = self._ctx
        cfg = ctx.config
        if not cfg.brokerPermission & PERM_READ:
            return PullOutcome(ResponseCode.NO_PERMISSION, f"the broker[{cfg.brokerIP1}] pulling message is forbidden")
        # before the group is found or created: nothing is stored for a pull refused here
        error = group_error("consumerGroup", h.consumer_group)
        if error is None and h.sys_flag & PULL_FLAG_COMMIT_OFFSET:
            error = offset_error("commitOffset", h.commit_offset)
        if error is not None:
            return PullOutcome(ResponseCode.SYSTEM_ERROR, error)
        group_cfg = self._group_table.get(h.consumer_group) or ctx.groups.find_or_create(h.consumer_group)
        if group_cfg is None:
            return PullOutcome(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group [{h.consumer_group}] does not exist"
            )
        if not group_cfg.consume_enable:
            return PullOutcome(ResponseCode.NO_PERMISSION, f"subscription group no permission, {h.consumer_group}")
        tc = self._topic_table.get(h.topic)
        if tc is None:
            return PullOutcome(ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist, apply first please!")
        if not tc.perm & PERM_READ:
            return PullOutcome(ResponseCode.NO_PERMISSION, f"the topic[{h.topic}] pulling message is forbidden")
        if h.queue_id < 0 or h.queue_id >= tc.read_queue_nums:
            return PullOutcome(
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{h.queue_id}] is illegal, topic:[{h.topic}] topicConfig.readQueueNums:"
                f"[{tc.read_queue_nums}] consumer:[{remote}]",
            )

        if h.sys_flag & PULL_FLAG_SUBSCRIPTION:
            expression_type = h.expression_type or "TAG"
            sub = SubscriptionData.of(h.topic, h.subscription or "*", expression_type, h.sub_version)
        else:
            info = ctx.consumers.get(h.consumer_group)
            if info is None:
                return PullOutcome(
                    ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's group info not exist, {h.consumer_group}"
                )
            found = info.subscriptions.get(h.topic)
            if found is None:
                return PullOutcome(
                    ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's subscription not exist, {h.topic}"
                )
            if found.sub_version < h.sub_version:
                return PullOutcome(
                    ResponseCode.SUBSCRIPTION_NOT_LATEST, f"the consumer's subscription not latest, {found.sub_string}"
                )
            sub = found
        if sub.expression_type != "TAG" and not cfg.enablePropertyFilter:
            return PullOutcome(
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {sub.expression_type}",
            )
        try:
            message_filter = build_filter(sub)
        except FilterBuildError as exc:
            return PullOutcome(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc))

        result = ctx.store.get_message(h.topic, h.queue_id, h.queue_offset, h.max_msg_nums, message_filter)
        status = result.status
        next_begin = result.next_begin_offset
        suggest = suggest_broker_id(
            slave_read_enable=cfg.slaveReadEnable, pulling_behind=result.suggest_pulling_from_slave,
            broker_id=group_cfg.broker_id, slowly_broker_id=group_cfg.which_broker_when_consume_slowly,
        )  # fmt: skip
        body: bytes = b""
        # Java's store makes a queue's file on first lookup, so a queue never written reads as an empty one
        remark = "NO_MESSAGE_IN_QUEUE" if status == GetMessageStatus.NO_MATCHED_LOGIC_QUEUE else status.name
        try:
            if status == GetMessageStatus.FOUND:
                code = _SUCCESS
                body = result.to_bytes()
                ctx.metrics.on_group_get(h.topic, h.consumer_group, result.message_count, len(body))
            elif status in (GetMessageStatus.NO_MATCHED_MESSAGE, GetMessageStatus.MESSAGE_WAS_REMOVING):
                code = ResponseCode.PULL_RETRY_IMMEDIATELY
            elif status in (GetMessageStatus.NO_MESSAGE_IN_QUEUE, GetMessageStatus.NO_MATCHED_LOGIC_QUEUE):
                code = ResponseCode.PULL_OFFSET_MOVED if h.queue_offset != 0 else ResponseCode.PULL_NOT_FOUND
            elif status in (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY):
                code = ResponseCode.PULL_OFFSET_MOVED
            else:  # OFFSET_OVERFLOW_ONE, OFFSET_FOUND_NULL
                code = ResponseCode.PULL_NOT_FOUND
        finally:
            result.release()

        is_slave = ctx.role.is_slave
        if code == ResponseCode.PULL_OFFSET_MOVED and is_slave and not cfg.offsetCheckInSlave:
            # a slave does not move a consumer's offset: it may just lag its master
            code = ResponseCode.PULL_RETRY_IMMEDIATELY
            next_begin = h.queue_offset
            suggest = group_cfg.broker_id

        commit = h.sys_flag & PULL_FLAG_COMMIT_OFFSET and not is_slave
        # Java 5.1's commitPullOffset: every answered (or parked) pull records where the group pulls next
        ctx.offsets.commit_pull(h.consumer_group, h.topic, h.queue_id, next_begin)
        if code == ResponseCode.PULL_NOT_FOUND and allow_suspend and h.sys_flag & PULL_FLAG_SUSPEND:
            timeout_ms = h.suspend_timeout_millis if cfg.longPollingEnable else cfg.shortPollingTimeMills
            timeout_ms = max(0, min(timeout_ms, _MAX_SUSPEND_MS))
            if timeout_ms > 0:
                if commit:
                    ctx.offsets.commit(h.consumer_group, h.topic, h.queue_id, h.commit_offset)
                matches = message_filter.is_matched_by_consume_queue if message_filter is not None else None
                return PullOutcome(code, remark, suspend_seconds=timeout_ms / 1000.0, matches_code=matches)

        if commit:
            ctx.offsets.commit(h.consumer_group, h.topic, h.queue_id, h.commit_offset)
        return PullOutcome(
            code, remark, next_begin, result.min_offset, result.max_offset, body, suggest_which_broker_id=suggest
        )
