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
    "notifyConsumerIdsChangedEnable": BOOL,
}  # fmt: skip


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

    def to_json(self) -> dict[str, Any]:
        return {
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
