"""The console's form fields (rocketq.console.inputs): times, numbers, required fields, a refused section."""

from __future__ import annotations

import time

import pytest

from rocketq.console.inputs import attempt, int_field, parse_time_ms, required, time_field
from rocketq.errors import BrokerError


def test_a_time_is_local_time_or_epoch_milliseconds() -> None:
    ms = 1_795_000_000_000
    shown = time_field(ms)
    assert shown == time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))
    assert parse_time_ms(shown, "t") == ms  # what the page shows reads back (to the second)
    assert parse_time_ms(shown.replace(" ", "T"), "t") == ms  # as a datetime-local field would send it
    assert parse_time_ms(shown[:16], "t") == ms - int(shown[17:19]) * 1000
    assert parse_time_ms(f" {ms} ", "t") == ms
    for bad in ("yesterday", "-1", "2026-13-01 00:00:00", ""):
        with pytest.raises(ValueError, match=r"begin: .* is not a time"):
            parse_time_ms(bad, "begin")


def test_numbers_and_required_fields() -> None:
    assert int_field({}, "max", 64) == 64
    assert int_field({"max": " 7 "}, "max", 64, low=1) == 7
    with pytest.raises(ValueError, match="not a number"):
        int_field({"max": "lots"}, "max", 64)
    with pytest.raises(ValueError, match=r"out of range \(1\.\.10\)"):
        int_field({"max": "0"}, "max", 64, low=1, high=10)
    assert required({"topic": " T "}, "topic") == "T"
    with pytest.raises(ValueError, match="message id is required"):
        required({"msg_id": "  "}, "msg_id", "message id")


async def test_a_refused_section_is_its_reason() -> None:
    async def refused() -> int:
        raise BrokerError(206, "the consumer group not online")

    async def fine() -> int:
        return 3

    assert await attempt(fine()) == (3, None)
    value, reason = await attempt(refused())
    assert value is None and reason is not None and "not online" in reason
