"""The request registry: for each broker request code, its typed header and the resources it touches.

This is what the request gate knows about a request before any processor runs (Java's ACL validator keeps the
same table by hand in ``PlainAccessValidator.parse``): the header class that reads its extFields, and which
topic and consumer group it reads or writes, or that it is an administrative operation. An ACL check, an
audit record or a per-topic metric reads ``resources_of(cmd)`` instead of parsing the request again.

Sends name their topic in SEND_MESSAGE_V2's single-letter key ``b`` (producer group ``a``); a heartbeat names
its groups in its JSON body, which the gate does not decode: ``body_names_groups`` is set instead.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from rocketq.codes import RequestCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    CloneGroupOffsetRequestHeader,
    ConsumerCallRequestHeader,
    ConsumerGroupRequestHeader,
    ConsumerSendMsgBackRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    EndTransactionRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    Header,
    NotificationRequestHeader,
    PeekMessageRequestHeader,
    PollingInfoRequestHeader,
    PopMessageRequestHeader,
    PullMessageRequestHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryMessageRequestHeader,
    ResetOffsetRequestHeader,
    SearchOffsetRequestHeader,
    SendMessageRequestHeader,
    TopicQueueRequestHeader,
    TopicRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewBrokerStatsDataRequestHeader,
    ViewMessageRequestHeader,
    send_header_from_v2,
)


class Access(enum.Flag):
    """What a request does to the resources it names (ACL 1.0's PUB / SUB, plus admin operations)."""

    NONE = 0
    PUB = enum.auto()
    SUB = enum.auto()
    ADMIN = enum.auto()


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """One request code's entry: header class and the extFields keys that name its resources."""

    header: type[Header] | None
    access: Access
    topic_key: str | None = None
    group_key: str | None = None
    #: the groups are in the JSON body (HEART_BEAT), not in the header
    body_names_groups: bool = False


@dataclass(frozen=True, slots=True)
class RequestResources:
    """The resources one request touches, as the gate sees them."""

    code: int
    access: Access
    topic: str | None
    group: str | None
    body_names_groups: bool = False


_PUB, _SUB, _ADMIN = Access.PUB, Access.SUB, Access.ADMIN

#: Every broker request code rocketq serves. A code missing here is refused by the gate once ACL is on.
REQUESTS: dict[int, RequestSpec] = {
    RequestCode.SEND_MESSAGE: RequestSpec(SendMessageRequestHeader, _PUB, "topic", "producerGroup"),
    RequestCode.SEND_MESSAGE_V2: RequestSpec(SendMessageRequestHeader, _PUB, "b", "a"),
    RequestCode.SEND_BATCH_MESSAGE: RequestSpec(SendMessageRequestHeader, _PUB, "b", "a"),
    RequestCode.SEND_REPLY_MESSAGE: RequestSpec(SendMessageRequestHeader, _PUB, "topic", "producerGroup"),
    RequestCode.SEND_REPLY_MESSAGE_V2: RequestSpec(SendMessageRequestHeader, _PUB, "b", "a"),
    RequestCode.CONSUMER_SEND_MSG_BACK: RequestSpec(ConsumerSendMsgBackRequestHeader, _SUB, None, "group"),
    RequestCode.PULL_MESSAGE: RequestSpec(PullMessageRequestHeader, _SUB, "topic", "consumerGroup"),
    RequestCode.POP_MESSAGE: RequestSpec(PopMessageRequestHeader, _SUB, "topic", "consumerGroup"),
    RequestCode.PEEK_MESSAGE: RequestSpec(PeekMessageRequestHeader, _SUB, "topic", "consumerGroup"),
    RequestCode.NOTIFICATION: RequestSpec(NotificationRequestHeader, _SUB, "topic", "consumerGroup"),
    RequestCode.POLLING_INFO: RequestSpec(PollingInfoRequestHeader, _SUB, "topic", "consumerGroup"),
    RequestCode.ACK_MESSAGE: RequestSpec(AckMessageRequestHeader, _SUB, "topic", "consumerGroup"),
    RequestCode.CHANGE_MESSAGE_INVISIBLETIME: RequestSpec(
        ChangeInvisibleTimeRequestHeader, _SUB, "topic", "consumerGroup"
    ),
    RequestCode.QUERY_MESSAGE: RequestSpec(QueryMessageRequestHeader, _SUB, "topic"),
    RequestCode.VIEW_MESSAGE_BY_ID: RequestSpec(ViewMessageRequestHeader, _SUB),
    RequestCode.HEART_BEAT: RequestSpec(None, _SUB, body_names_groups=True),
    RequestCode.UNREGISTER_CLIENT: RequestSpec(UnregisterClientRequestHeader, _SUB, None, "consumerGroup"),
    RequestCode.CHECK_CLIENT_CONFIG: RequestSpec(None, _SUB),
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: RequestSpec(
        GetConsumerListByGroupRequestHeader, _SUB, None, "consumerGroup"
    ),
    RequestCode.QUERY_CONSUMER_OFFSET: RequestSpec(
        QueryConsumerOffsetRequestHeader, _SUB, "topic", "consumerGroup"
    ),
    RequestCode.UPDATE_CONSUMER_OFFSET: RequestSpec(
        UpdateConsumerOffsetRequestHeader, _SUB, "topic", "consumerGroup"
    ),
    RequestCode.LOCK_BATCH_MQ: RequestSpec(None, _SUB, body_names_groups=True),
    RequestCode.UNLOCK_BATCH_MQ: RequestSpec(None, _SUB, body_names_groups=True),
    RequestCode.END_TRANSACTION: RequestSpec(EndTransactionRequestHeader, _PUB, None, "producerGroup"),
    RequestCode.GET_MAX_OFFSET: RequestSpec(TopicQueueRequestHeader, _SUB, "topic"),
    RequestCode.GET_MIN_OFFSET: RequestSpec(TopicQueueRequestHeader, _SUB, "topic"),
    RequestCode.GET_EARLIEST_MSG_STORETIME: RequestSpec(TopicQueueRequestHeader, _SUB, "topic"),
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: RequestSpec(SearchOffsetRequestHeader, _SUB, "topic"),
    # administrative operations
    RequestCode.UPDATE_AND_CREATE_TOPIC: RequestSpec(CreateTopicRequestHeader, _ADMIN, "topic"),
    RequestCode.DELETE_TOPIC_IN_BROKER: RequestSpec(TopicRequestHeader, _ADMIN, "topic"),
    RequestCode.GET_ALL_TOPIC_CONFIG: RequestSpec(None, _ADMIN),
    RequestCode.GET_TOPIC_STATS_INFO: RequestSpec(TopicRequestHeader, _ADMIN, "topic"),
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: RequestSpec(None, _ADMIN),
    RequestCode.DELETE_SUBSCRIPTIONGROUP: RequestSpec(DeleteSubscriptionGroupRequestHeader, _ADMIN, None, "groupName"),
    RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: RequestSpec(None, _ADMIN),
    RequestCode.GET_CONSUME_STATS: RequestSpec(GetConsumeStatsRequestHeader, _ADMIN, "topic", "consumerGroup"),
    RequestCode.GET_BROKER_RUNTIME_INFO: RequestSpec(None, _ADMIN),
    RequestCode.GET_BROKER_HA_STATUS: RequestSpec(None, _ADMIN),
    RequestCode.GET_CONSUMER_CONNECTION_LIST: RequestSpec(ConsumerGroupRequestHeader, _ADMIN, None, "consumerGroup"),
    RequestCode.GET_PRODUCER_CONNECTION_LIST: RequestSpec(None, _ADMIN, None, "producerGroup"),
    RequestCode.GET_ALL_PRODUCER_INFO: RequestSpec(None, _ADMIN),
    RequestCode.GET_BROKER_CONFIG: RequestSpec(None, _ADMIN),
    RequestCode.UPDATE_BROKER_CONFIG: RequestSpec(None, _ADMIN),
    RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: RequestSpec(TopicRequestHeader, _ADMIN, "topic"),
    RequestCode.GET_ALL_CONSUMER_OFFSET: RequestSpec(None, _ADMIN),
    RequestCode.GET_ALL_DELAY_OFFSET: RequestSpec(None, _ADMIN),
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: RequestSpec(ResetOffsetRequestHeader, _ADMIN, "topic", "group"),
    RequestCode.CLONE_GROUP_OFFSET: RequestSpec(CloneGroupOffsetRequestHeader, _ADMIN, "topic", "destGroup"),
    RequestCode.VIEW_BROKER_STATS_DATA: RequestSpec(ViewBrokerStatsDataRequestHeader, _ADMIN),
    RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: RequestSpec(None, _ADMIN),
    RequestCode.CLEAN_UNUSED_TOPIC: RequestSpec(None, _ADMIN),
    RequestCode.DELETE_EXPIRED_COMMITLOG: RequestSpec(None, _ADMIN),
    RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER: RequestSpec(None, _ADMIN),
    RequestCode.GET_BROKER_CONSUME_STATS: RequestSpec(GetConsumeStatsInBrokerHeader, _ADMIN),
    RequestCode.GET_CONSUMER_RUNNING_INFO: RequestSpec(ConsumerCallRequestHeader, _ADMIN, None, "consumerGroup"),
    RequestCode.CONSUME_MESSAGE_DIRECTLY: RequestSpec(ConsumerCallRequestHeader, _ADMIN, None, "consumerGroup"),
    RequestCode.QUERY_CONSUME_QUEUE: RequestSpec(QueryConsumeQueueRequestHeader, _ADMIN, "topic", "consumerGroup"),
}


def spec_of(code: int) -> RequestSpec | None:
    return REQUESTS.get(code)


def resources_of(cmd: RemotingCommand) -> RequestResources | None:
    """The topic and group ``cmd`` touches and how (None: a code the registry does not know)."""
    spec = REQUESTS.get(cmd.code)
    if spec is None:
        return None
    return RequestResources(
        cmd.code, spec.access, _field(cmd.ext_fields, spec.topic_key), _field(cmd.ext_fields, spec.group_key),
        spec.body_names_groups,
    )  # fmt: skip


#: a V2 send may still carry a field under its V1 name (``send_header_from_v2`` reads both the same way)
_V1_NAME = {"a": "producerGroup", "b": "topic"}


def _field(ext: dict[str, str], key: str | None) -> str | None:
    if key is None:
        return None
    value = ext.get(key)
    if value is None and key in _V1_NAME:
        value = ext.get(_V1_NAME[key])
    return value


#: the sends whose header has the V1 names (the others have SEND_MESSAGE_V2's single letters)
_V1_SENDS = (RequestCode.SEND_MESSAGE, RequestCode.SEND_REPLY_MESSAGE)


def parse_header(cmd: RemotingCommand) -> Header | None:
    """``cmd``'s typed header as the registry names it (None: no header class); raises ``HeaderError``."""
    spec = REQUESTS.get(cmd.code)
    if spec is None or spec.header is None:
        return None
    if spec.header is SendMessageRequestHeader and cmd.code not in _V1_SENDS:
        return send_header_from_v2(cmd.ext_fields)
    return spec.header.from_ext(cmd.ext_fields)
