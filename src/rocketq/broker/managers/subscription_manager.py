"""Consumer-group configurations, persisted to ``config/subscriptionGroup.json``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocketq.broker.managers.entries import (
    BOOL,
    INT32,
    INT64,
    STR,
    BadEntry,
    fields_error,
    prune_data_version,
    prune_map,
)
from rocketq.broker.managers.persist import BackgroundWriter, ConfigManager
from rocketq.codes import ResponseCode
from rocketq.errors import BrokerError
from rocketq.protocol.bodies import DataVersion
from rocketq.protocol.topics import SYSTEM_GROUPS

#: a group's fields in subscriptionGroup.json and their Java types (SubscriptionGroupConfig)
GROUP_FIELDS = {
    "groupName": STR, "consumeEnable": BOOL, "consumeFromMinEnable": BOOL, "consumeBroadcastEnable": BOOL,
    "retryQueueNums": INT32, "retryMaxTimes": INT32, "brokerId": INT64, "whichBrokerWhenConsumeSlowly": INT64,
    "notifyConsumerIdsChangedEnable": BOOL, "consumeMessageOrderly": BOOL,
}  # fmt: skip

#: RocketMQ 5's CustomizedRetryPolicy default: the pop retry back-off per delivery attempt, ms
DEFAULT_CUSTOMIZED_NEXT_MS = (
    1_000, 5_000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000, 480_000, 540_000,
    600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000,
)  # fmt: skip


@dataclass(slots=True, frozen=True)
class RetryPolicy:
    """A group's ``groupRetryPolicy`` (RocketMQ 5): ``CUSTOMIZED`` with ``next`` ms per attempt (the last one
    reused), or ``EXPONENTIAL``: ``min(initial × multiplier^(attempt-1), max)``."""

    type: str = "CUSTOMIZED"
    next_ms: tuple[int, ...] = DEFAULT_CUSTOMIZED_NEXT_MS
    initial_ms: int = 5_000
    max_ms: int = 7_200_000
    multiplier: int = 2

    def delay_ms(self, reconsume_times: int) -> int:
        """The back-off before delivery ``reconsume_times + 1`` (Java's ``nextDelayDuration``)."""
        if self.type == "EXPONENTIAL":
            return int(min(self.initial_ms * self.multiplier ** min(max(reconsume_times, 0), 32), self.max_ms))
        return self.next_ms[min(max(reconsume_times, 0), len(self.next_ms) - 1)]

    @classmethod
    def from_json(cls, o: object) -> RetryPolicy:
        """Java's JSON (``{"type", "exponentialRetryPolicy", "customizedRetryPolicy"}``); a missing or null
        policy of the named type is Java's default customized list."""
        if not isinstance(o, dict):
            return cls()
        kind = str(o.get("type") or "CUSTOMIZED").upper()
        if kind == "EXPONENTIAL" and isinstance(exp := o.get("exponentialRetryPolicy"), dict):
            return cls("EXPONENTIAL", initial_ms=int(exp.get("initial", 5_000)), max_ms=int(exp.get("max", 7_200_000)),
                       multiplier=int(exp.get("multiplier", 2)))  # fmt: skip
        custom = o.get("customizedRetryPolicy")
        if isinstance(custom, dict) and isinstance(nxt := custom.get("next"), list) and nxt:
            return cls("CUSTOMIZED", next_ms=tuple(int(v) for v in nxt))
        return cls()

    def to_json(self) -> dict[str, Any]:
        if self.type == "EXPONENTIAL":
            exp = {"initial": self.initial_ms, "max": self.max_ms, "multiplier": self.multiplier}
            return {"type": "EXPONENTIAL", "exponentialRetryPolicy": exp}
        return {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": list(self.next_ms)}}


def group_entry_error(name: str, raw: object) -> str | None:
    """Why a subscriptionGroupTable entry cannot be written or read back (None: it can)."""
    return fields_error(raw, GROUP_FIELDS, required=("groupName",))


@dataclass(slots=True)
class SubscriptionGroupConfig:
    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    #: RocketMQ 5: the group pops FIFO (a queue is blocked while a popped message is un-acked)
    consume_message_orderly: bool = False
    #: RocketMQ 5: the pop back-off; None = Java's default customized list (not written to the file)
    group_retry_policy: RetryPolicy | None = None

    @property
    def retry_policy(self) -> RetryPolicy:
        return self.group_retry_policy or RetryPolicy()

    @property
    def max_delivery_attempts(self) -> int:
        """What 5.x clients are told (``retryMaxTimes + 1``): the delivery after which a message goes to DLQ."""
        return self.retry_max_times + 1

    def to_json(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}  # the 5.x fields only when set: a 4.9 file stays byte-for-byte Java 4.9's
        if self.consume_message_orderly:
            extra["consumeMessageOrderly"] = True
        if self.group_retry_policy is not None:
            extra["groupRetryPolicy"] = self.group_retry_policy.to_json()
        return extra | {
            "brokerId": self.broker_id,
            "consumeBroadcastEnable": self.consume_broadcast_enable,
            "consumeEnable": self.consume_enable,
            "consumeFromMinEnable": self.consume_from_min_enable,
            "groupName": self.group_name,
            "notifyConsumerIdsChangedEnable": self.notify_consumer_ids_changed_enable,
            "retryMaxTimes": self.retry_max_times,
            "retryQueueNums": self.retry_queue_nums,
            "whichBrokerWhenConsumeSlowly": self.which_broker_when_consume_slowly,
        }

    @classmethod
    def from_json(cls, o: dict[str, Any]) -> SubscriptionGroupConfig:
        return cls(
            group_name=str(o["groupName"]),
            consume_enable=bool(o.get("consumeEnable", True)),
            consume_from_min_enable=bool(o.get("consumeFromMinEnable", True)),
            consume_broadcast_enable=bool(o.get("consumeBroadcastEnable", True)),
            retry_queue_nums=int(o.get("retryQueueNums", 1)),
            retry_max_times=int(o.get("retryMaxTimes", 16)),
            broker_id=int(o.get("brokerId", 0)),
            which_broker_when_consume_slowly=int(o.get("whichBrokerWhenConsumeSlowly", 1)),
            notify_consumer_ids_changed_enable=bool(o.get("notifyConsumerIdsChangedEnable", True)),
            consume_message_orderly=bool(o.get("consumeMessageOrderly", False)),
            group_retry_policy=RetryPolicy.from_json(o["groupRetryPolicy"]) if o.get("groupRetryPolicy") else None,
        )


class SubscriptionGroupManager(ConfigManager):
    def __init__(self, config_dir: Path, *, auto_create: bool = True, writer: BackgroundWriter | None = None) -> None:
        super().__init__(config_dir / "subscriptionGroup.json", writer)
        self.auto_create = auto_create
        self.table: dict[str, SubscriptionGroupConfig] = {g: SubscriptionGroupConfig(g) for g in SYSTEM_GROUPS}

    def decode(self, obj: dict[str, Any]) -> None:
        for name, raw in (obj.get("subscriptionGroupTable") or {}).items():
            self.table[name] = SubscriptionGroupConfig.from_json(raw)
        if obj.get("dataVersion"):
            self.data_version = DataVersion.from_json(obj["dataVersion"])

    def to_json(self) -> dict[str, Any]:
        """The file's document (GET_ALL_SUBSCRIPTIONGROUP_CONFIG answers it too), without bad entries."""
        return self.writable(self._document())  # type: ignore[no-any-return]

    def _document(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_json(),
            "subscriptionGroupTable": {k: v.to_json() for k, v in sorted(self.table.items())},
        }

    def check(self, doc: dict[str, Any]) -> list[BadEntry]:
        return prune_map(doc, "subscriptionGroupTable", group_entry_error) + prune_data_version(doc)

    def snapshot(self) -> Callable[[], Any]:
        doc = self._document()  # small: built on the loop
        return lambda: doc

    def _changed(self) -> None:
        self.bump_version()
        self.persist_soon()

    def get(self, group: str) -> SubscriptionGroupConfig | None:
        return self.table.get(group)

    def find_or_create(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config, auto-created when ``autoCreateSubscriptionGroup`` (None otherwise)."""
        cfg = self.table.get(group)
        if cfg is None and self.auto_create:
            cfg = SubscriptionGroupConfig(group)
            self.table[group] = cfg
            self._changed()
        return cfg

    def update(self, cfg: SubscriptionGroupConfig) -> None:
        error = group_entry_error(cfg.group_name, cfg.to_json())
        if error is not None:  # the gate checks the request; this keeps what could not be saved out of the table
            raise BrokerError(f"subscription group {cfg.group_name}: {error}", ResponseCode.SYSTEM_ERROR)
        self.table[cfg.group_name] = cfg
        self._changed()

    def replace_all(self, table: dict[str, SubscriptionGroupConfig], version: DataVersion) -> None:
        """A slave takes its master's whole table and data version (SlaveSynchronize), then saves it. The table
        object is kept (readers hold it) and filled again."""
        self.table.clear()
        self.table.update(table)
        self.data_version = version
        self.persist_soon()

    def delete(self, group: str) -> bool:
        if self.table.pop(group, None) is None:
            return False
        self._changed()
        return True
