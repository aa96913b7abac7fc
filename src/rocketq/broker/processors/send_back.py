"""CONSUMER_SEND_MSG_BACK (36): a consumer hands back a message it failed to consume.

RocketMQ 4.9's asyncConsumerSendMsgBack: the original is looked up by commit-log offset and re-stored
under ``%RETRY%{group}`` with the delay level 3 + reconsume times (or the level asked for), so it comes
back after 10 s, 30 s, 1 m, ...; past ``maxReconsumeTimes`` (the group's retryMaxTimes, 16) or for a
negative delay level it goes to ``%DLQ%{group}`` instead. The original message id and topic are kept.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from rocketq.broker.requeue import restore
from rocketq.broker.topic_manager import DLQ_PREFIX, RETRY_PREFIX
from rocketq.codes import VERSION_V3_4_9, RequestCode, ResponseCode
from rocketq.protocol.bodies import PERM_READ, PERM_WRITE
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import ConsumerSendMsgBackRequestHeader
from rocketq.protocol.message import PROP_DELAY, PROP_ORIGIN_MESSAGE_ID, PROP_RETRY_TOPIC, PROP_TRAN_MSG
from rocketq.remoting.connection import Connection

if TYPE_CHECKING:
    from rocketq.broker.controller import BrokerController


class SendBackProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self) -> None:
        self.broker.dispatcher.register(RequestCode.CONSUMER_SEND_MSG_BACK, self.process)

    def process(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        broker = self.broker
        h = ConsumerSendMsgBackRequestHeader.from_ext(cmd.ext_fields)
        group_cfg = broker.groups.find_or_create(h.group)
        if group_cfg is None:
            return cmd.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {h.group}")
        if not broker.config.brokerPermission & PERM_WRITE:
            return cmd.response(ResponseCode.NO_PERMISSION, "the broker sending message is forbidden")
        if group_cfg.retry_queue_nums <= 0:
            return cmd.response(ResponseCode.SUCCESS)
        original = broker.store.look_message_by_offset(h.offset)
        if original is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {h.offset}")
        props = dict(original.properties)
        props.setdefault(PROP_RETRY_TOPIC, original.topic)
        props.pop(PROP_TRAN_MSG, None)
        max_times = group_cfg.retry_max_times
        if h.max_reconsume_times is not None and conn.version >= VERSION_V3_4_9:
            max_times = h.max_reconsume_times
        delay = h.delay_level
        if original.reconsume_times >= max_times or delay < 0:
            topic = DLQ_PREFIX + h.group
            broker.topics.create_system_if_absent(topic, 1, PERM_READ | PERM_WRITE)
            queue_id = 0
            props.pop(PROP_DELAY, None)
        else:
            topic = RETRY_PREFIX + h.group
            broker.topics.create_system_if_absent(topic, max(1, group_cfg.retry_queue_nums), PERM_READ | PERM_WRITE)
            queue_id = random.randrange(max(1, group_cfg.retry_queue_nums))
            if delay == 0:
                delay = 3 + original.reconsume_times
            props[PROP_DELAY] = str(delay)
        broker.schedule_register()
        props.setdefault(PROP_ORIGIN_MESSAGE_ID, h.origin_msg_id or original.msg_id)
        msg = restore(original, topic, queue_id, props, reconsume_times=original.reconsume_times + 1)
        msg = broker.semantics.before_put(msg)
        result = broker.store.put_message(msg)
        if result.status.name == "PUT_OK":
            return cmd.response(ResponseCode.SUCCESS)
        return cmd.response(ResponseCode.SYSTEM_ERROR, f"send back failed: {result.status.name}")
