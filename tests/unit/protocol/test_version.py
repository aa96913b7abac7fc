"""MQVersion ordinal → name, checked against the ordinals the protocol reference names (rocketq.codes)."""

from __future__ import annotations

from rocketq.codes import VERSION_V3_0_11, VERSION_V3_1_8, VERSION_V3_4_9, VERSION_V4_9_4, VERSION_V4_9_8
from rocketq.protocol.version import version_desc


def test_known_ordinals() -> None:
    assert version_desc(0) == "V3_0_0_SNAPSHOT"
    assert version_desc(15) == "V3_0_0_FINAL"
    assert version_desc(VERSION_V3_0_11) == "V3_0_11"
    assert version_desc(VERSION_V3_1_8) == "V3_1_8"
    assert version_desc(VERSION_V3_4_9) == "V3_4_9"
    assert version_desc(VERSION_V4_9_4) == "V4_9_4"
    assert version_desc(VERSION_V4_9_8) == "V4_9_8"
    assert version_desc(VERSION_V4_9_8 - 1) == "V4_9_8_SNAPSHOT"


def test_past_the_table_and_negative() -> None:
    assert version_desc(612) == "HIGHER_VERSION"
    assert version_desc(10_000) == "HIGHER_VERSION"
    assert version_desc(611) == "V5_9_9"
    assert version_desc(-1) == "UNKNOWN"
