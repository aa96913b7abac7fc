"""Typed request/response headers of the broker's requests: one frozen dataclass per Java header class.

The machinery — ``Header``, ``wire(...)`` field declarations, the generated and compiled ``from_ext``/``to_ext``
and the Java widths of integer fields — is ``rocketq.protocol.header_codec``.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass

from rocketq.protocol.header_codec import Header, HeaderError, compile_from_ext, compile_to_ext, wire
from rocketq.protocol.topics import AUTO_CREATE_TOPIC

__all__ = ["Header", "HeaderError", "compile_from_ext", "compile_to_ext", "wire"]

_KW = {"frozen": True, "slots": True, "kw_only": True}


# ------------------------------------------------------------------------------------------------ send


@dataclass(**_KW)
class SendMessageRequestHeader(Header):
    """V1 names (code 10). ``from_ext_any`` also reads the V2 single-letter keys (codes 310/320)."""

    producer_group: str = wire("producerGroup")
    topic: str = wire("topic")
    default_topic: str = wire("defaultTopic", AUTO_CREATE_TOPIC, not_null=True)
    default_topic_queue_nums: int = wire("defaultTopicQueueNums", 4, not_null=True, int32=True)
    queue_id: int = wire("queueId", -1, not_null=True, int32=True)
    sys_flag: int = wire("sysFlag", 0, not_null=True, int32=True)
    born_timestamp: int = wire("bornTimestamp", 0, not_null=True)
    flag: int = wire("flag", 0, not_null=True, int32=True)
    properties: str | None = wire("properties", None)
    reconsume_times: int | None = wire("reconsumeTimes", None, int32=True)
    unit_mode: bool | None = wire("unitMode", None)
    batch: bool | None = wire("batch", None)
    max_reconsume_times: int | None = wire("maxReconsumeTimes", None, int32=True)


_V2_KEYS = {
    "a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums", "e": "queueId",
    "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties", "j": "reconsumeTimes",
    "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch", "n": "bname",
}  # fmt: skip
_V1_TO_V2 = {v: k for k, v in _V2_KEYS.items()}


_from_v2: typing.Callable[[dict[str, str]], SendMessageRequestHeader] | None = None
_to_v2: typing.Callable[[Header], dict[str, str]] | None = None


def send_header_from_v2(ext: dict[str, str]) -> SendMessageRequestHeader:
    """Read the V2 single-letter keys (a V1 name is read when its letter is absent)."""
    global _from_v2
    if _from_v2 is None:
        _from_v2 = compile_from_ext(SendMessageRequestHeader, _V1_TO_V2)
    return _from_v2(ext)


def send_header_to_v2(header: SendMessageRequestHeader) -> dict[str, str]:
    global _to_v2
    if _to_v2 is None:
        _to_v2 = compile_to_ext(SendMessageRequestHeader, _V1_TO_V2)
    return _to_v2(header)


@dataclass(**_KW)
class ReplyMessageRequestHeader(Header):
    """PUSH_REPLY_MESSAGE_TO_CLIENT (326): a reply the broker hands to the requesting client."""

    producer_group: str = wire("producerGroup")
    topic: str = wire("topic")
    default_topic: str = wire("defaultTopic")
    default_topic_queue_nums: int = wire("defaultTopicQueueNums", int32=True)
    queue_id: int = wire("queueId", int32=True)
    sys_flag: int = wire("sysFlag", int32=True)
    born_timestamp: int = wire("bornTimestamp")
    flag: int = wire("flag", int32=True)
    properties: str | None = wire("properties", None)
    reconsume_times: int | None = wire("reconsumeTimes", None, int32=True)
    unit_mode: bool | None = wire("unitMode", None)
    born_host: str = wire("bornHost")
    store_host: str = wire("storeHost")
    store_timestamp: int = wire("storeTimestamp")


@dataclass(**_KW)
class SendMessageResponseHeader(Header):
    msg_id: str = wire("msgId")
    queue_id: int = wire("queueId", int32=True)
    queue_offset: int = wire("queueOffset")
    transaction_id: str | None = wire("transactionId", None)


# ------------------------------------------------------------------------------------------------ pull


PULL_FLAG_COMMIT_OFFSET = 0x1
PULL_FLAG_SUSPEND = 0x2
PULL_FLAG_SUBSCRIPTION = 0x4
PULL_FLAG_CLASS_FILTER = 0x8
PULL_FLAG_LITE_PULL = 0x10


@dataclass(**_KW)
class PullMessageRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    queue_offset: int = wire("queueOffset")
    max_msg_nums: int = wire("maxMsgNums", 32, not_null=True, int32=True)
    sys_flag: int = wire("sysFlag", 0, not_null=True, int32=True)
    commit_offset: int = wire("commitOffset", 0, not_null=True)
    suspend_timeout_millis: int = wire("suspendTimeoutMillis", 0, not_null=True)
    subscription: str | None = wire("subscription", None)
    sub_version: int = wire("subVersion", 0, not_null=True)
    expression_type: str | None = wire("expressionType", None)


@dataclass(**_KW)
class PullMessageResponseHeader(Header):
    suggest_which_broker_id: int = wire("suggestWhichBrokerId")
    next_begin_offset: int = wire("nextBeginOffset")
    min_offset: int = wire("minOffset")
    max_offset: int = wire("maxOffset")


# ------------------------------------------------------------------------------------- offsets, queries


@dataclass(**_KW)
class QueryConsumerOffsetRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)


@dataclass(**_KW)
class UpdateConsumerOffsetRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    commit_offset: int = wire("commitOffset")


@dataclass(**_KW)
class OffsetResponseHeader(Header):
    """Response of QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP."""

    offset: int = wire("offset")


@dataclass(**_KW)
class TopicQueueRequestHeader(Header):
    """GET_MAX_OFFSET, GET_MIN_OFFSET, GET_EARLIEST_MSG_STORETIME."""

    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)


@dataclass(**_KW)
class SearchOffsetRequestHeader(Header):
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    timestamp: int = wire("timestamp")


@dataclass(**_KW)
class EarliestMsgStoretimeResponseHeader(Header):
    timestamp: int = wire("timestamp")


@dataclass(**_KW)
class ViewMessageRequestHeader(Header):
    offset: int = wire("offset")


@dataclass(**_KW)
class QueryMessageRequestHeader(Header):
    topic: str = wire("topic")
    key: str = wire("key")
    max_num: int = wire("maxNum", int32=True)
    begin_timestamp: int = wire("beginTimestamp")
    end_timestamp: int = wire("endTimestamp")


@dataclass(**_KW)
class QueryMessageResponseHeader(Header):
    index_last_update_timestamp: int = wire("indexLastUpdateTimestamp")
    index_last_update_phyoffset: int = wire("indexLastUpdatePhyoffset")


# --------------------------------------------------------------------------------------- client mgmt


@dataclass(**_KW)
class GetConsumerListByGroupRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")


@dataclass(**_KW)
class UnregisterClientRequestHeader(Header):
    client_id: str = wire("clientID")
    producer_group: str | None = wire("producerGroup", None)
    consumer_group: str | None = wire("consumerGroup", None)


@dataclass(**_KW)
class NotifyConsumerIdsChangedRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")


@dataclass(**_KW)
class ConsumerSendMsgBackRequestHeader(Header):
    offset: int = wire("offset")
    group: str = wire("group")
    delay_level: int = wire("delayLevel", 0, not_null=True, int32=True)
    origin_msg_id: str | None = wire("originMsgId", None)
    origin_topic: str | None = wire("originTopic", None)
    unit_mode: bool = wire("unitMode", False)
    max_reconsume_times: int | None = wire("maxReconsumeTimes", None, int32=True)


@dataclass(**_KW)
class EndTransactionRequestHeader(Header):
    producer_group: str = wire("producerGroup")
    tran_state_table_offset: int = wire("tranStateTableOffset")
    commit_log_offset: int = wire("commitLogOffset")
    commit_or_rollback: int = wire("commitOrRollback", int32=True)
    from_transaction_check: bool = wire("fromTransactionCheck", False)
    msg_id: str = wire("msgId", "", not_null=True)
    transaction_id: str | None = wire("transactionId", None)


@dataclass(**_KW)
class CheckTransactionStateRequestHeader(Header):
    tran_state_table_offset: int = wire("tranStateTableOffset")
    commit_log_offset: int = wire("commitLogOffset")
    msg_id: str | None = wire("msgId", None)
    transaction_id: str | None = wire("transactionId", None)
    offset_msg_id: str | None = wire("offsetMsgId", None)


# --------------------------------------------------------------------------------------------- admin


@dataclass(**_KW)
class CreateTopicRequestHeader(Header):
    topic: str = wire("topic")
    default_topic: str = wire("defaultTopic", AUTO_CREATE_TOPIC, not_null=True)
    read_queue_nums: int = wire("readQueueNums", 16, not_null=True, int32=True)
    write_queue_nums: int = wire("writeQueueNums", 16, not_null=True, int32=True)
    perm: int = wire("perm", 6, not_null=True, int32=True)
    topic_filter_type: str = wire("topicFilterType", "SINGLE_TAG", not_null=True)
    topic_sys_flag: int | None = wire("topicSysFlag", None, int32=True)
    order: bool = wire("order", False)


@dataclass(**_KW)
class TopicRequestHeader(Header):
    """DELETE_TOPIC_IN_BROKER, GET_TOPIC_STATS_INFO, QUERY_TOPIC_CONSUME_BY_WHO."""

    topic: str = wire("topic")


@dataclass(**_KW)
class ConsumerGroupRequestHeader(Header):
    """GET_CONSUMER_CONNECTION_LIST and similar group-only requests."""

    consumer_group: str = wire("consumerGroup")


@dataclass(**_KW)
class DeleteSubscriptionGroupRequestHeader(Header):
    group_name: str = wire("groupName")
    #: also forget the group's consumer offsets (mqadmin deleteSubGroup -r true); kept otherwise, as Java keeps them
    remove_offset: bool = wire("removeOffset", False)


@dataclass(**_KW)
class GetConsumeStatsRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str | None = wire("topic", None)


@dataclass(**_KW)
class CloneGroupOffsetRequestHeader(Header):
    """CLONE_GROUP_OFFSET (314): copy ``src_group``'s committed offsets to ``dest_group`` (one topic, or every
    topic the source has offsets on); ``offline`` skips the check against the source's online subscriptions."""

    src_group: str = wire("srcGroup")
    dest_group: str = wire("destGroup")
    topic: str | None = wire("topic", None)
    offline: bool = wire("offline", False)


@dataclass(**_KW)
class ViewBrokerStatsDataRequestHeader(Header):
    """VIEW_BROKER_STATS_DATA (315): one of Java's stats tables (``TOPIC_PUT_NUMS``...) and its key."""

    stats_name: str = wire("statsName")
    stats_key: str = wire("statsKey")


@dataclass(**_KW)
class GetConsumeStatsInBrokerHeader(Header):
    """GET_BROKER_CONSUME_STATS (317)."""

    is_order: bool = wire("isOrder", False)


@dataclass(**_KW)
class QueryConsumeQueueRequestHeader(Header):
    """QUERY_CONSUME_QUEUE (321): ``count`` units of one queue from ``index``."""

    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    index: int = wire("index")
    count: int = wire("count", int32=True)
    consumer_group: str | None = wire("consumerGroup", None)


@dataclass(**_KW)
class ConsumerCallRequestHeader(Header):
    """GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309): the broker passes them on to one
    consumer; ``msg_id`` (an offset message id) only in the latter."""

    consumer_group: str = wire("consumerGroup")
    client_id: str = wire("clientId")
    msg_id: str | None = wire("msgId", None)


@dataclass(**_KW)
class ResetOffsetRequestHeader(Header):
    """INVOKE_BROKER_TO_RESET_OFFSET (222) and RESET_CONSUMER_CLIENT_OFFSET (220)."""

    topic: str = wire("topic")
    group: str = wire("group")
    timestamp: int = wire("timestamp")
    is_force: bool = wire("isForce", True)


# ------------------------------------------------------------------------------------------------ pop (5.x)


@dataclass(**_KW)
class PopMessageRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    max_msg_nums: int = wire("maxMsgNums", int32=True)
    invisible_time: int = wire("invisibleTime")
    poll_time: int = wire("pollTime")
    born_time: int = wire("bornTime")
    init_mode: int = wire("initMode", int32=True)
    exp_type: str | None = wire("expType", None)
    exp: str | None = wire("exp", None)
    order: bool = wire("order", False)
    attempt_id: str | None = wire("attemptId", None)


@dataclass(**_KW)
class PopMessageResponseHeader(Header):
    pop_time: int = wire("popTime")
    invisible_time: int = wire("invisibleTime")
    revive_qid: int = wire("reviveQid", int32=True)
    rest_num: int = wire("restNum")
    start_offset_info: str | None = wire("startOffsetInfo", None)
    msg_offset_info: str | None = wire("msgOffsetInfo", None)
    order_count_info: str | None = wire("orderCountInfo", None)


@dataclass(**_KW)
class AckMessageRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    extra_info: str = wire("extraInfo")
    offset: int = wire("offset")


@dataclass(**_KW)
class ChangeInvisibleTimeRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    extra_info: str = wire("extraInfo")
    offset: int = wire("offset")
    invisible_time: int = wire("invisibleTime")


@dataclass(**_KW)
class ChangeInvisibleTimeResponseHeader(Header):
    pop_time: int = wire("popTime")
    invisible_time: int = wire("invisibleTime")
    revive_qid: int = wire("reviveQid", int32=True)


@dataclass(**_KW)
class PeekMessageRequestHeader(Header):
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    max_msg_nums: int = wire("maxMsgNums", int32=True)
    consumer_group: str = wire("consumerGroup")


@dataclass(**_KW)
class NotificationRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    poll_time: int = wire("pollTime")
    born_time: int = wire("bornTime")
    order: bool = wire("order", False)
    attempt_id: str | None = wire("attemptId", None)


@dataclass(**_KW)
class NotificationResponseHeader(Header):
    has_msg: bool = wire("hasMsg")
    polling_full: bool = wire("pollingFull", False)


@dataclass(**_KW)
class PollingInfoRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)


@dataclass(**_KW)
class PollingInfoResponseHeader(Header):
    polling_num: int = wire("pollingNum", int32=True)
