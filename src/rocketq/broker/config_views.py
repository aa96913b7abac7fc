"""What the store and replication are given from the broker's configuration: each in its own terms (the store
and the replication package know nothing of ``BrokerConfig``), named as Java names the broker's keys."""

from __future__ import annotations

from pathlib import Path

from rocketq.broker.config import BrokerConfig
from rocketq.replication import HAConfig
from rocketq.replication.replicas import ReplicasConfig
from rocketq.store import FlushDiskType, StoreConfig


def store_config_from(cfg: BrokerConfig) -> StoreConfig:
    return StoreConfig(
        store_path_root_dir=cfg.storePathRootDir,
        mapped_file_size_commit_log=cfg.mappedFileSizeCommitLog,
        mapped_file_size_consume_queue=cfg.mappedFileSizeConsumeQueue,
        flush_disk_type=FlushDiskType(cfg.flushDiskType),
        flush_interval_commit_log=cfg.flushIntervalCommitLog,
        flush_commit_log_least_pages=cfg.flushCommitLogLeastPages,
        flush_commit_log_thorough_interval=cfg.flushCommitLogThoroughInterval,
        sync_flush_timeout=cfg.syncFlushTimeout,
        max_message_size=cfg.maxMessageSize,
        file_reserved_time=cfg.fileReservedTime,
        delete_when=cfg.deleteWhen,
        disk_max_used_space_ratio=cfg.diskMaxUsedSpaceRatio,
        disk_min_free_bytes=cfg.diskMinFreeBytes,
        disk_check_interval=cfg.diskCheckInterval,
        max_hash_slot_num=cfg.maxHashSlotNum,
        max_index_num=cfg.maxIndexNum,
        message_delay_level=cfg.messageDelayLevel,
        check_crc_on_recover=cfg.checkCRCOnRecover,
        max_transfer_count_on_message_in_memory=cfg.maxTransferCountOnMessageInMemory,
        max_transfer_bytes_on_message_in_memory=cfg.maxTransferBytesOnMessageInMemory,
        access_message_in_memory_max_ratio=cfg.accessMessageInMemoryMaxRatio,
        commit_log_cached_bytes=cfg.commitLogCachedBytes,
    )


def replicas_config_from(config: BrokerConfig) -> ReplicasConfig:
    return ReplicasConfig(
        cluster_name=config.brokerClusterName,
        broker_name=config.brokerName,
        broker_addr=config.broker_addr,
        controller_addrs=tuple(config.controller_addrs),
        store_dir=Path(config.storePathRootDir),
        heartbeat_interval_ms=config.brokerHeartbeatInterval,
        sync_metadata_period_ms=config.syncBrokerMetadataPeriod,
        check_sync_state_set_period_ms=config.checkSyncStateSetPeriod,
        max_time_slave_not_catchup_ms=config.haMaxTimeSlaveNotCatchup,
        heartbeat_timeout_ms=config.controllerHeartBeatTimeoutMills,
        election_priority=config.brokerElectionPriority,
    )


def ha_config_from(config: BrokerConfig) -> HAConfig:
    return HAConfig(
        heartbeat_interval_ms=config.haSendHeartbeatInterval,
        housekeeping_interval_ms=config.haHousekeepingInterval,
        transfer_batch_size=config.haTransferBatchSize,
        slave_fallbehind_max=config.haSlaveFallbehindMax,
        slave_timeout_ms=config.slaveTimeout,
        reconnect_interval_ms=config.haReconnectInterval,
    )
