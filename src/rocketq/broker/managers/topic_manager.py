"""Topic configurations of one broker, persisted to ``config/topics.json`` (TopicConfigSerializeWrapper)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketq.broker.managers.entries import (
    BOOL,
    INT32,
    STR,
    BadEntry,
    fields_error,
    prune_data_version,
    prune_map,
)
from rocketq.broker.managers.persist import BackgroundWriter, ConfigManager
from rocketq.codes import ResponseCode
from rocketq.errors import BrokerError
from rocketq.protocol.bodies import (
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    DataVersion,
    TopicConfig,
    encode_topic_config_wrapper,
)
from rocketq.protocol.topics import (
    AUTO_CREATE_TOPIC,
    BENCHMARK_TOPIC,
    DLQ_PREFIX,
    NOT_ALLOWED_SEND_TOPICS,
    OFFSET_MOVED_EVENT,
    RETRY_PREFIX,
    SCHEDULE_TOPIC,
    SELF_TEST_TOPIC,
    TOPIC_MAX_LENGTH,
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    is_system_topic,
    reply_topic,
    topic_name_error,
)

# The topic names and rules live in protocol.topics (shared with the client); the broker's modules import them
# from here, so they stay re-exported under the names they had.
__all__ = [
    "AUTO_CREATE_TOPIC",
    "BENCHMARK_TOPIC",
    "DLQ_PREFIX",
    "MAX_TOPIC_LENGTH",
    "NOT_ALLOWED_SEND_TOPICS",
    "OFFSET_MOVED_EVENT",
    "RETRY_PREFIX",
    "SCHEDULE_TOPIC",
    "SELF_TEST_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "TRANS_HALF_TOPIC",
    "TRANS_OP_HALF_TOPIC",
    "TopicConfigManager",
    "topic_name_error",
]

log = logging.getLogger("rocketq.broker.topics")

MAX_TOPIC_LENGTH = TOPIC_MAX_LENGTH

#: a topic's fields in topics.json and their Java types (TopicConfig: ints, a string, a boolean)
TOPIC_FIELDS = {
    "topicName": STR, "readQueueNums": INT32, "writeQueueNums": INT32, "perm": INT32, "topicSysFlag": INT32,
    "topicFilterType": STR, "order": BOOL,
}  # fmt: skip


def topic_entry_error(name: str, raw: object) -> str | None:
    """Why a topicConfigTable entry cannot be written or read back (None: it can)."""
    return fields_error(raw, TOPIC_FIELDS, required=("topicName",))


class TopicConfigManager(ConfigManager):
    """Topic configurations; a change is written by the broker's writer thread, never on the event loop
    (a send that creates its topic waits for ``flushed()`` before it is answered, as Java persists first)."""

    def __init__(
        self,
        config_dir: Path,
        *,
        cluster_name: str,
        broker_name: str,
        default_topic_queue_nums: int = 8,
        auto_create_topic_enable: bool = True,
        cluster_topic_enable: bool = True,
        broker_topic_enable: bool = True,
        delay_level_count: int = 18,
        trace_topic: str | None = None,
        writer: BackgroundWriter | None = None,
    ) -> None:
        super().__init__(config_dir / "topics.json", writer)
        self.table: dict[str, TopicConfig] = {}
        self._system: dict[str, TopicConfig] = {}
        self._add_system(SELF_TEST_TOPIC, 1, 1)
        if auto_create_topic_enable:
            self._add_system(
                AUTO_CREATE_TOPIC,
                default_topic_queue_nums,
                default_topic_queue_nums,
                PERM_INHERIT | PERM_READ | PERM_WRITE,
            )
        self._add_system(BENCHMARK_TOPIC, 1024, 1024)
        perm = PERM_INHERIT | (PERM_READ | PERM_WRITE if cluster_topic_enable else 0)
        self._add_system(cluster_name, 16, 16, perm)
        perm = PERM_INHERIT | (PERM_READ | PERM_WRITE if broker_topic_enable else 0)
        self._add_system(broker_name, 1, 1, perm)
        self._add_system(OFFSET_MOVED_EVENT, 1, 1)
        self._add_system(SCHEDULE_TOPIC, delay_level_count, delay_level_count)
        if trace_topic:
            # traceTopicEnable: the trace topic exists from the start (one queue) even without auto-creation.
            self._add_system(trace_topic, 1, 1)
        self._add_system(reply_topic(cluster_name), 1, 1)

    def _add_system(self, name: str, read: int, write: int, perm: int = PERM_READ | PERM_WRITE) -> None:
        tc = TopicConfig(name, read, write, perm)
        self._system[name] = tc
        self.table[name] = tc

    # ----------------------------------------------------------------------------------- persistence

    def decode(self, obj: dict[str, Any]) -> None:
        for name, raw in (obj.get("topicConfigTable") or {}).items():
            tc = TopicConfig.from_json(raw)
            self.table[name] = tc
        dv = obj.get("dataVersion")
        if dv:
            self.data_version = DataVersion.from_json(dv)

    def snapshot(self) -> Callable[[], Any]:
        version, table = self.data_version, dict(self.table)  # configs are replaced, never changed in place
        return lambda: encode_topic_config_wrapper(version, table)

    def check(self, doc: dict[str, Any]) -> list[BadEntry]:
        return prune_map(doc, "topicConfigTable", topic_entry_error) + prune_data_version(doc)

    def good_table(self) -> dict[str, TopicConfig]:
        """The table without the topics that cannot be written (what the name servers are told)."""
        table = {}
        for name, tc in self.table.items():
            error = topic_entry_error(name, tc.to_json())
            if error is None:
                table[name] = tc
            else:
                self._report(BadEntry(name, error))
        return table

    def _changed(self) -> None:
        self.bump_version()
        self.persist_soon()

    # --------------------------------------------------------------------------------------- queries

    def system_topics(self) -> list[str]:
        """The topics every broker creates for itself at start (Java's getSystemTopic)."""
        return sorted(self._system)

    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def is_system(self, topic: str) -> bool:
        """A system topic (TopicValidator.isSystemTopic): Java's fixed set, the ``rmq_sys_`` prefix, and the topics
        this broker made at start (its cluster and broker names, the reply topic), and rocketq's own ``RQ_SYS_``."""
        return is_system_topic(topic) or topic in self._system

    def wrapper_json(self) -> dict[str, object]:
        """The file's document (GET_ALL_TOPIC_CONFIG answers it too), without bad entries."""
        return self.writable(encode_topic_config_wrapper(self.data_version, self.table))  # type: ignore[no-any-return]

    # --------------------------------------------------------------------------------------- changes

    def update(self, tc: TopicConfig) -> TopicConfig:
        error = topic_entry_error(tc.topic_name, tc.to_json())
        if error is not None:  # the gate checks the request; this keeps what could not be saved out of the table
            raise BrokerError(f"topic {tc.topic_name}: {error}", ResponseCode.SYSTEM_ERROR)
        old = self.table.get(tc.topic_name)
        self.table[tc.topic_name] = tc
        if old != tc:
            log.info("topic.updated name=%s config=%s", tc.topic_name, tc)
            self._changed()
        return tc

    def replace_all(self, table: dict[str, TopicConfig], version: DataVersion) -> None:
        """A slave takes its master's whole table and data version (SlaveSynchronize), then saves it. The table
        object is kept (readers hold it) and filled again."""
        self.table.clear()
        self.table.update(table)
        self.data_version = version
        self.persist_soon()

    def delete(self, topic: str) -> bool:
        if self.table.pop(topic, None) is None:
            return False
        self._changed()
        return True

    def create_in_send(
        self, topic: str, default_topic: str, queue_nums: int, topic_sys_flag: int = 0
    ) -> TopicConfig | None:
        """Auto-create ``topic`` from its template, as createTopicInSendMessageMethod does (None = refused)."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        template = self.table.get(default_topic)
        if template is None:
            return None
        if default_topic == AUTO_CREATE_TOPIC and AUTO_CREATE_TOPIC not in self._system:
            return None
        if not template.perm & PERM_INHERIT:
            return None
        nums = max(1, min(queue_nums, template.write_queue_nums))
        tc = TopicConfig(topic, nums, nums, template.perm & ~PERM_INHERIT, topic_sys_flag=topic_sys_flag)
        return self.update(tc)

    def create_system_if_absent(self, topic: str, queue_nums: int, perm: int = PERM_READ | PERM_WRITE) -> TopicConfig:
        """Retry, DLQ and transaction topics are created on demand with a fixed queue count."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        return self.update(TopicConfig(topic, queue_nums, queue_nums, perm))
