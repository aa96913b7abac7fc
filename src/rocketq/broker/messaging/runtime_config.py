"""Broker configuration changed at run time (UPDATE_BROKER_CONFIG; mqadmin updateBrokerConfig).

Java writes every key it is given into its config objects (and rewrites the ``-c`` file), whether or not the
running broker ever reads the field again; unknown keys and unparsable values are dropped silently. Here a
change is all or nothing: every key must be one the running broker really applies (``LIVE_KEYS``), with a
value of the right type, or nothing changes and the answer names the key. Keys that only matter at start-up
are refused with that reason; Java tuning keys rocketq has no use for are accepted and ignored, as in
broker.conf. Nothing is written back to broker.conf: a restart returns to the operator's file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from rocketq.broker.config import FAIL_CLOSED_KEYS, IGNORED_JAVA_KEYS, BrokerConfig, convert_value
from rocketq.broker.context import BrokerContext
from rocketq.codes import ResponseCode
from rocketq.errors import ConfigError

#: keys the running broker reads at each use (or that are pushed to the part that copied them)
LIVE_KEYS = frozenset(
    {
        "maxMessageSize", "brokerPermission", "autoCreateSubscriptionGroup",
        "longPollingEnable", "shortPollingTimeMills", "enablePropertyFilter", "offsetCheckInSlave", "slaveReadEnable",
        "traceOn", "waitTimeMillsInSendQueue", "sendQueueCapacity", "rejectTransactionMessage",
        "clientChannelExpiredTimeMills", "clientScanIntervalMills", "consumerOffsetPersistIntervalMills",
        "maxTransferCountOnMessageInMemory", "maxTransferBytesOnMessageInMemory", "fileReservedTime",
        "diskMaxUsedSpaceRatio", "diskMinFreeBytes", "diskCheckInterval", "maxTopicQueueNums",
    }
)  # fmt: skip


class RuntimeConfigService:
    def __init__(self, ctx: BrokerContext) -> None:
        self._ctx = ctx

    def properties(self) -> dict[str, str]:
        """GET_BROKER_CONFIG: every key with its current value."""
        return self._ctx.config.as_properties()

    async def update(self, props: Mapping[str, str]) -> tuple[int, str | None]:
        """Apply ``props`` (all or nothing); answered once a new broker permission reached the name servers."""
        ctx = self._ctx
        changes: dict[str, object] = {}
        ignored: dict[str, str] = {}
        types = {f.name: f.type for f in dataclasses.fields(BrokerConfig)}
        try:
            for key, raw in props.items():
                if key in FAIL_CLOSED_KEYS:
                    if convert_value(key, raw, bool):
                        raise ConfigError(key, FAIL_CLOSED_KEYS[key])
                    ignored[key] = raw
                elif key in IGNORED_JAVA_KEYS:
                    ignored[key] = raw
                elif key not in types or key == "extra":
                    raise ConfigError(key, "unknown broker configuration key")
                elif key not in LIVE_KEYS:
                    raise ConfigError(key, "only read at start-up: set it in broker.conf and restart the broker")
                else:
                    changes[key] = convert_value(key, raw, types[key])
            dataclasses.replace(ctx.config, **changes).validate()  # type: ignore[arg-type]
        except ConfigError as exc:
            return ResponseCode.SYSTEM_ERROR, str(exc)
        cfg = ctx.config
        permission_changed = changes.get("brokerPermission", cfg.brokerPermission) != cfg.brokerPermission
        for key, value in changes.items():
            setattr(cfg, key, value)
        cfg.extra.update(ignored)
        # the parts that keep their own copy
        store_cfg = ctx.store.config
        store_cfg.max_message_size = cfg.maxMessageSize
        store_cfg.max_transfer_count_on_message_in_memory = cfg.maxTransferCountOnMessageInMemory
        store_cfg.max_transfer_bytes_on_message_in_memory = cfg.maxTransferBytesOnMessageInMemory
        store_cfg.file_reserved_time = cfg.fileReservedTime
        store_cfg.disk_max_used_space_ratio = cfg.diskMaxUsedSpaceRatio
        store_cfg.disk_min_free_bytes = cfg.diskMinFreeBytes
        store_cfg.disk_check_interval = cfg.diskCheckInterval
        ctx.groups.auto_create = cfg.autoCreateSubscriptionGroup
        for listener in ctx.config_listeners:
            listener()
        if permission_changed:
            # Java: a new data version, so the name servers take the lowered (or restored) topic permissions
            ctx.topics.bump_version()
            ctx.topics.persist_soon()
            await ctx.publish_topics()
        return ResponseCode.SUCCESS, None
