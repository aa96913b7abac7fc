"""Moved to ``rocketq.common.stats_items`` (the client keeps such tables too); the broker's name for it."""

from rocketq.common.stats_items import (
    BROKER_GET_NUMS,
    BROKER_PUT_NUMS,
    GROUP_GET_NUMS,
    GROUP_GET_SIZE,
    SNDBCK_PUT_NUMS,
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
    ItemStats,
    StatsTable,
    WindowStats,
)

__all__ = [
    "BROKER_GET_NUMS",
    "BROKER_PUT_NUMS",
    "GROUP_GET_NUMS",
    "GROUP_GET_SIZE",
    "SNDBCK_PUT_NUMS",
    "TOPIC_PUT_NUMS",
    "TOPIC_PUT_SIZE",
    "ItemStats",
    "StatsTable",
    "WindowStats",
]
