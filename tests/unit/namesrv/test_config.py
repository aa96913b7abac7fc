"""NamesrvConfig: defaults, validation and the Java-style properties view."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.errors import ConfigError
from rocketq.namesrv.config import NamesrvConfig, parse_properties


def test_defaults() -> None:
    c = NamesrvConfig()
    assert (c.listen_host, c.listen_port) == ("0.0.0.0", 9876)
    assert (c.scan_interval, c.broker_expiry, c.order_message_enable) == (10.0, 120.0, False)
    assert c.resolved_kv_config_path == Path("data/namesrv/kvConfig.json")


def test_explicit_kv_path(tmp_path: Path) -> None:
    c = NamesrvConfig(home_dir=tmp_path, kv_config_path=tmp_path / "x.json")
    assert c.resolved_kv_config_path == tmp_path / "x.json"


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"listen_port": 70000}, "listen_port"),
        ({"scan_interval": 0}, "scan_interval"),
        ({"broker_expiry": -1}, "broker_expiry"),
        ({"idle_timeout": float("nan")}, "idle_timeout"),
        ({"max_connections": 0}, "max_connections"),
        ({"max_partial_frame_bytes": 1024}, "max_partial_frame_bytes"),
    ],
)
def test_invalid(kwargs: dict[str, float], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        NamesrvConfig(**kwargs)  # type: ignore[arg-type]
    assert info.value.key == key


def test_update_from_properties_reports_applied_keys() -> None:
    c = NamesrvConfig()
    applied = c.update_from_properties(
        {"scanNotActiveBrokerInterval": "2500", "serverChannelMaxIdleTimeSeconds": "300", "listenPort": "1", "x": "y"}
    )
    assert applied == ["scanNotActiveBrokerInterval", "serverChannelMaxIdleTimeSeconds"]
    assert (c.scan_interval, c.idle_timeout, c.listen_port) == (2.5, 300.0, 9876)


@pytest.mark.parametrize(
    ("key", "text"),
    [("brokerChannelExpiredTime", "89999"), ("brokerChannelExpiredTime", "86400001"),
     ("brokerChannelExpiredTime", "120000.5"), ("scanNotActiveBrokerInterval", "999"),
     ("scanNotActiveBrokerInterval", "-1"), ("serverChannelMaxIdleTimeSeconds", "89"),
     ("serverChannelMaxIdleTimeSeconds", "inf"), ("serverChannelMaxIdleTimeSeconds", "nan"),
     ("orderMessageEnable", "1"), ("brokerChannelExpiredTime", "9" * 5000)],
)  # fmt: skip
def test_update_from_properties_refuses_values_that_would_drop_live_brokers(key: str, text: str) -> None:
    """Out of bounds or of the wrong type: ConfigError naming the Java key, and nothing applied."""
    c = NamesrvConfig()
    with pytest.raises(ConfigError) as info:
        c.update_from_properties({"orderMessageEnable": "true", key: text})
    assert info.value.key == key and len(str(info.value)) < 200
    assert (c.order_message_enable, c.broker_expiry, c.scan_interval, c.idle_timeout) == (False, 120.0, 10.0, 120.0)


def test_update_from_properties_takes_the_bounds_themselves() -> None:
    c = NamesrvConfig()
    c.update_from_properties({"brokerChannelExpiredTime": "90000", "scanNotActiveBrokerInterval": "1000",
                              "serverChannelMaxIdleTimeSeconds": "90", "orderMessageEnable": "TRUE"})  # fmt: skip
    assert (c.broker_expiry, c.scan_interval, c.idle_timeout, c.order_message_enable) == (90.0, 1.0, 90.0, True)


def test_parse_properties() -> None:
    text = "# comment\n! also\n a = 1 \nb:2\nc\n\nd=x=y\n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "", "d": "x=y"}


def test_remoting_limits_by_property_and_strictly_from_the_command_line() -> None:
    c = NamesrvConfig()
    assert c.update_from_properties({"serverMaxConnections": "7", "serverMaxWriteBufferBytes": "99999999"}) == [
        "serverMaxConnections", "serverMaxWriteBufferBytes"
    ]  # fmt: skip
    assert (c.server_limits().max_connections, c.server_limits().max_write_buffer) == (7, 99999999)
    assert "serverMaxPartialFrameBytes=134217728\n" in c.to_properties()
    with pytest.raises(ConfigError) as info:
        c.update_from_properties({"serverWriteBufferLowWaterMark": "999999999"})
    assert info.value.key == "write_high_water" and c.write_low_water == 1024 * 1024  # nothing applied
    with pytest.raises(ConfigError) as info:
        c.update_from_properties({"serverMaxConection": "1"}, strict=True)
    assert info.value.key == "serverMaxConection"
