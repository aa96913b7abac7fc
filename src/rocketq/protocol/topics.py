"""Topic and group names every side agrees on (Java ``common/topic/TopicValidator`` and parts of ``MixAll``).

The system topics a broker creates or writes to, the ``%RETRY%``/``%DLQ%`` prefixes of a group's topics, the
topics a client may not send to, and the rules a topic or group name must follow. Broker, client, store and
the Spark connector read them from here so that the values cannot drift apart.

The name rules are kept exactly as they were on each side:

* ``topic_name_error`` is the broker's check (TopicValidator.validateTopic): empty, longer than 127 characters,
  or outside ``^[%|a-zA-Z0-9_-]+$``. The client (Validators.checkTopic) first rejects a blank name, also one of
  spaces only, as "blank", then applies the same rule;
* ``group_name_error`` is the client's check of a producer or consumer group (Validators.checkGroup): blank,
  longer than 255 characters, or outside the same character set.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "AUTO_CREATE_TOPIC",
    "BENCHMARK_TOPIC",
    "DLQ_PREFIX",
    "GROUP_MAX_LENGTH",
    "NOT_ALLOWED_SEND_TOPICS",
    "OFFSET_MOVED_EVENT",
    "RETRY_PREFIX",
    "RMQ_SYS_PREFIX",
    "ROCKETQ_SYSTEM_TOPIC_PREFIX",
    "SCHEDULE_TOPIC",
    "SELF_TEST_TOPIC",
    "SINK_COMMIT_TOPIC",
    "SINK_STAGING_TOPIC",
    "SYSTEM_TOPICS",
    "SYSTEM_TOPIC_PREFIX",
    "TOPIC_MAX_LENGTH",
    "TRACE_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "TRANS_HALF_TOPIC",
    "TRANS_OP_HALF_TOPIC",
    "VALID_NAME_PATTERN",
    "dlq_topic",
    "group_name_error",
    "is_system_topic",
    "reply_topic",
    "retry_topic",
    "topic_name_error",
]

# ----------------------------------------------------------------------------------------- system topics

#: The template topic a broker with autoCreateTopicEnable offers; producers send unknown topics "through" it.
AUTO_CREATE_TOPIC: Final = "TBW102"
#: Delayed messages wait here, queue = delay level - 1 (the store rewrites them; ScheduleMessageService).
SCHEDULE_TOPIC: Final = "SCHEDULE_TOPIC_XXXX"
TRANS_HALF_TOPIC: Final = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC: Final = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
#: Half messages checked transactionCheckMax times end up here.
TRANS_CHECK_MAX_TIME_TOPIC: Final = "TRANS_CHECK_MAX_TIME_TOPIC"
SELF_TEST_TOPIC: Final = "SELF_TEST_TOPIC"
OFFSET_MOVED_EVENT: Final = "OFFSET_MOVED_EVENT"
BENCHMARK_TOPIC: Final = "BenchmarkTest"
#: rocketq's own (not Java's): the Spark sink stages its rows here before committing them (protocol.sink).
SINK_STAGING_TOPIC: Final = "RQ_SYS_SINK_STAGING"
#: rocketq's own: the sink's commit intents and completed commits, so a slave's successor knows them.
SINK_COMMIT_TOPIC: Final = "RQ_SYS_SINK_COMMIT"

#: The transaction topics' prefix (and that of Java's RMQ_SYS_TRACE_TOPIC).
RMQ_SYS_PREFIX: Final = "RMQ_SYS_"
#: Java's prefix of newer system topics (``rmq_sys_wheel_timer`` …).
SYSTEM_TOPIC_PREFIX: Final = "rmq_sys_"
#: The prefix of rocketq's own system topics.
ROCKETQ_SYSTEM_TOPIC_PREFIX: Final = "RQ_SYS_"

#: Java's RMQ_SYS_TRACE_TOPIC: the clients' message traces (created at start-up with traceTopicEnable).
TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"

#: Topics no admin request may create or delete (TopicValidator.SYSTEM_TOPIC_SET; ``is_system_topic``).
SYSTEM_TOPICS: Final = frozenset(
    {AUTO_CREATE_TOPIC, SCHEDULE_TOPIC, BENCHMARK_TOPIC, TRANS_HALF_TOPIC, TRACE_TOPIC, TRANS_OP_HALF_TOPIC,
     TRANS_CHECK_MAX_TIME_TOPIC, SELF_TEST_TOPIC, OFFSET_MOVED_EVENT}
)  # fmt: skip


def is_system_topic(topic: str) -> bool:
    """TopicValidator.isSystemTopic, and rocketq's own ``RQ_SYS_`` topics."""
    return topic in SYSTEM_TOPICS or topic.startswith((SYSTEM_TOPIC_PREFIX, ROCKETQ_SYSTEM_TOPIC_PREFIX))


#: the groups a broker has from the start (Java MixAll's system groups); user-facing lists leave them out
SYSTEM_GROUPS: Final = (
    "TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "__MONITOR_CONSUMER", "CLIENT_INNER_PRODUCER",
    "SELF_TEST_P_GROUP", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER", "CID_ONSAPI_PULL", "CID_RMQ_SYS_TRACE",
)  # fmt: skip
SYSTEM_GROUP_PREFIX: Final = "CID_RMQ_SYS_"


def is_system_group(group: str) -> bool:
    """MixAll.isSysConsumerGroup or one of the groups every broker starts with."""
    return group.startswith(SYSTEM_GROUP_PREFIX) or group in SYSTEM_GROUPS


#: Topics a client may not send to directly (TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET).
NOT_ALLOWED_SEND_TOPICS: Final = frozenset(
    {SCHEDULE_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC, SELF_TEST_TOPIC,
     OFFSET_MOVED_EVENT}
)  # fmt: skip

# ---------------------------------------------------------------------------------------- group topics

RETRY_PREFIX: Final = "%RETRY%"
DLQ_PREFIX: Final = "%DLQ%"
_REPLY_TOPIC_SUFFIX: Final = "REPLY_TOPIC"


def retry_topic(group: str) -> str:
    """``%RETRY%<group>``: where a group's failed messages come back from (MixAll.getRetryTopic)."""
    return RETRY_PREFIX + group


def dlq_topic(group: str) -> str:
    """``%DLQ%<group>``: where a group's messages go after the last retry (MixAll.getDLQTopic)."""
    return DLQ_PREFIX + group


def reply_topic(cluster: str) -> str:
    """``<cluster>_REPLY_TOPIC``, the request-reply topic every broker of a cluster creates (MixAll.getReplyTopic)."""
    return f"{cluster}_{_REPLY_TOPIC_SUFFIX}"


# ------------------------------------------------------------------------------------------ name rules

VALID_NAME_PATTERN: Final = "^[%|a-zA-Z0-9_-]+$"
_VALID_NAME = re.compile(VALID_NAME_PATTERN)
TOPIC_MAX_LENGTH: Final = 127
GROUP_MAX_LENGTH: Final = 255


def topic_name_error(topic: str) -> str | None:
    """Why a topic name is invalid, or None (TopicValidator.validateTopic)."""
    if not topic:
        return "the specified topic is blank"
    if len(topic) > TOPIC_MAX_LENGTH:
        return f"the specified topic is longer than topic max length {TOPIC_MAX_LENGTH}"
    if not _VALID_NAME.match(topic):
        return f"the specified topic [{topic}] contains illegal characters, allowing only {VALID_NAME_PATTERN}"
    return None


def group_name_error(group: str) -> str | None:
    """Why a producer or consumer group name is invalid, or None (Validators.checkGroup)."""
    if not group or not group.strip():
        return "the specified group is blank"
    if len(group) > GROUP_MAX_LENGTH:
        return f"the specified group is longer than group max length {GROUP_MAX_LENGTH}"
    if not _VALID_NAME.match(group):
        return f"the specified group [{group}] contains illegal characters, allowing only {VALID_NAME_PATTERN}"
    return None
