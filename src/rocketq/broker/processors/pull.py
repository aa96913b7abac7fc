"""PULL_MESSAGE (11): consume queue → commit log, filtering, long polling, commit offset on pull.

Store status → response code and nextBeginOffset follow RocketMQ 4.9's PullMessageProcessor (protocol
reference §3.2). Every answer carries the four header fields as strings (C++ clients need each of them).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketq.broker.message_filter import FilterBuildError, build_filter
from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.bodies import PERM_READ, SubscriptionData
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUBSCRIPTION,
    PULL_FLAG_SUSPEND,
    HeaderError,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
)
from rocketq.remoting.connection import Connection
from rocketq.store import GetMessageStatus

if TYPE_CHECKING:
    from rocketq.broker.controller import BrokerController

log = logging.getLogger("rocketq.broker.pull")

# Java caps holds well below the clients' 30 s read timeout.
_MAX_SUSPEND_MS = 25_000


class PullProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self) -> None:
        self.broker.dispatcher.register(RequestCode.PULL_MESSAGE, self.process)

    def process(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        return self._pull(conn, cmd, allow_suspend=True)

    def rerun(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        return self._pull(conn, cmd, allow_suspend=False)

    def _pull(self, conn: Connection, cmd: RemotingCommand, allow_suspend: bool) -> RemotingCommand | None:
        broker = self.broker
        cfg = broker.config
        try:
            h = PullMessageRequestHeader.from_ext(cmd.ext_fields)
        except HeaderError as exc:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(exc))
        if not cfg.brokerPermission & PERM_READ:
            return cmd.response(ResponseCode.NO_PERMISSION, f"the broker[{cfg.brokerIP1}] pulling message is forbidden")
        group_cfg = broker.groups.find_or_create(h.consumer_group)
        if group_cfg is None:
            return cmd.response(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group [{h.consumer_group}] does not exist"
            )
        if not group_cfg.consume_enable:
            return cmd.response(ResponseCode.NO_PERMISSION, f"subscription group no permission, {h.consumer_group}")
        tc = broker.topics.get(h.topic)
        if tc is None:
            return cmd.response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist, apply first please!")
        if not tc.perm & PERM_READ:
            return cmd.response(ResponseCode.NO_PERMISSION, f"the topic[{h.topic}] pulling message is forbidden")
        if h.queue_id < 0 or h.queue_id >= tc.read_queue_nums:
            return cmd.response(
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{h.queue_id}] is illegal, topic:[{h.topic}] topicConfig.readQueueNums:"
                f"[{tc.read_queue_nums}] consumer:[{conn.remote}]",
            )

        if h.sys_flag & PULL_FLAG_SUBSCRIPTION:
            expression_type = h.expression_type or "TAG"
            sub = SubscriptionData.of(h.topic, h.subscription or "*", expression_type, h.sub_version)
        else:
            info = broker.consumers.get(h.consumer_group)
            if info is None:
                return cmd.response(
                    ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's group info not exist, {h.consumer_group}"
                )
            found = info.subscriptions.get(h.topic)
            if found is None:
                return cmd.response(
                    ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's subscription not exist, {h.topic}"
                )
            if found.sub_version < h.sub_version:
                return cmd.response(
                    ResponseCode.SUBSCRIPTION_NOT_LATEST, f"the consumer's subscription not latest, {found.sub_string}"
                )
            sub = found
        if sub.expression_type != "TAG" and not cfg.enablePropertyFilter:
            return cmd.response(
                ResponseCode.NO_PERMISSION, "The broker does not support consumer to filter message by SQL92"
            )
        try:
            message_filter = build_filter(sub)
        except FilterBuildError as exc:
            return cmd.response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc))

        store = broker.store
        result = store.get_message(h.topic, h.queue_id, h.queue_offset, h.max_msg_nums, message_filter)
        status = result.status
        next_begin = result.next_begin_offset
        body: bytes = b""
        remark = status.name
        try:
            if status == GetMessageStatus.FOUND:
                code = ResponseCode.SUCCESS
                body = result.to_bytes()
                broker.stats.on_get(result.message_count, len(body))
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

        if code == ResponseCode.PULL_OFFSET_MOVED and cfg.is_slave and not cfg.offsetCheckInSlave:
            code = ResponseCode.PULL_RETRY_IMMEDIATELY
            next_begin = h.queue_offset

        if code == ResponseCode.PULL_NOT_FOUND and allow_suspend and h.sys_flag & PULL_FLAG_SUSPEND:
            timeout_ms = h.suspend_timeout_millis if cfg.longPollingEnable else cfg.shortPollingTimeMills
            timeout_ms = max(0, min(timeout_ms, _MAX_SUSPEND_MS))
            if timeout_ms > 0:
                self._commit_on_pull(h)
                matches = message_filter.is_matched_by_consume_queue if message_filter is not None else None
                broker.pull_holds.hold(conn, cmd, h.topic, h.queue_id, h.queue_offset, timeout_ms / 1000.0, matches)
                return None

        self._commit_on_pull(h)
        header = PullMessageResponseHeader(
            suggest_which_broker_id=0,
            next_begin_offset=next_begin,
            min_offset=result.min_offset,
            max_offset=result.max_offset,
        )
        return cmd.response(code, remark, header.to_ext(), body)

    def _commit_on_pull(self, h: PullMessageRequestHeader) -> None:
        if h.sys_flag & PULL_FLAG_COMMIT_OFFSET and not self.broker.config.is_slave:
            self.broker.offsets.commit(h.consumer_group, h.topic, h.queue_id, h.commit_offset)
