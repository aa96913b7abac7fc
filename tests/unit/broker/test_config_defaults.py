"""brokerIP1's default (Java's RemotingUtil.getLocalAddress rule, with the address lookup injected, so nothing
here depends on this machine's network cards) and the "did you mean" of a mistyped key (issue 20, 14 and 19)."""

from __future__ import annotations

import pytest

from rocketq.broker.config import BrokerConfig, default_broker_ip
from rocketq.common.suggest import did_you_mean
from rocketq.errors import ConfigError
from rocketq.namesrv.config import NamesrvConfig
from rocketq.remoting.local_address import choose_local_address, local_address


@pytest.mark.parametrize(
    ("addresses", "chosen"),
    [
        (["127.0.0.1", "10.0.0.5"], "10.0.0.5"),  # loopback skipped
        (["127.0.0.1", "192.168.1.7", "172.17.0.1", "10.0.0.5"], "172.17.0.1"),  # the first that is not 192.168
        (["127.0.0.1", "192.168.1.7", "192.168.2.9"], "192.168.2.9"),  # only 192.168: the last one, as Java
        (["127.0.0.1", "127.0.1.1"], None),  # only loopback
        (["::1", "fe80::1", "not-an-address"], None),  # IPv6 is not advertised (store hosts are IPv4 here)
        ([], None),
    ],
)
def test_java_choice_of_the_local_address(addresses: list[str], chosen: str | None) -> None:
    assert choose_local_address(addresses) == chosen


def test_local_address_falls_back_to_loopback() -> None:
    assert local_address(lambda: ["127.0.0.1"]) == "127.0.0.1"
    assert local_address(lambda: ["127.0.0.1", "203.0.113.9"]) == "203.0.113.9"


def test_broker_ip_default_is_the_bound_address_or_the_looked_up_one() -> None:
    def lookup() -> str:
        return "203.0.113.9"

    assert default_broker_ip("0.0.0.0", lookup) == "203.0.113.9"  # every interface: Java's default
    assert default_broker_ip("::", lookup) == "203.0.113.9"
    assert default_broker_ip("127.0.0.1", lookup) == "127.0.0.1"  # bound to one address: that one
    assert default_broker_ip("10.1.2.3", lookup) == "10.1.2.3"


def test_a_mistyped_key_gets_a_suggestion() -> None:
    with pytest.raises(ConfigError, match=r"unknown broker configuration key — did you mean flushDiskType\?"):
        BrokerConfig.from_mapping({"flushDiskTyp": "ASYNC_FLUSH"})
    with pytest.raises(ConfigError, match=r"did you mean autoCreateTopicEnable\?"):
        BrokerConfig.from_mapping({"autocreatetopicenable": "true"})  # wrong case only
    with pytest.raises(ConfigError, match=r"did you mean sendMessageThreadPoolNums\?"):  # an ignored Java key
        BrokerConfig.from_mapping({"sendMessageThreadPoolNum": "4"})
    with pytest.raises(ConfigError) as nothing_close:
        BrokerConfig.from_mapping({"zzzzqqq": "1"})
    assert "did you mean" not in str(nothing_close.value)
    with pytest.raises(ConfigError, match=r"did you mean serverMaxConnections\?"):
        NamesrvConfig().update_from_properties({"serverMaxConection": "5"}, strict=True)


def test_did_you_mean() -> None:
    assert did_you_mean("flushDiskTyp", ["flushDiskType", "brokerName"]) == " — did you mean flushDiskType?"
    assert did_you_mean("BROKERNAME", ["flushDiskType", "brokerName"]) == " — did you mean brokerName?"
    assert did_you_mean("x", ["flushDiskType", "brokerName"]) == ""
