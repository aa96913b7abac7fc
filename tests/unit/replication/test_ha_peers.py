"""Who may connect to the HA port: this machine always (loopback, or a peer with the connection's own address),
anyone else only when ``haAllowedAddresses`` lists it."""

from __future__ import annotations

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.broker.ha_access import HAPeerPolicy, peer_ip
from rocketq.errors import ConfigError


def test_an_empty_list_admits_loopback_only() -> None:
    policy = HAPeerPolicy.parse("")
    for host in ("127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"):
        assert policy.allows(host), host
    for host in ("10.0.0.5", "192.0.2.2", "fd00::2", "::ffff:10.0.0.5", "0.0.0.0"):
        assert not policy.allows(host), host
    assert policy.describe() == "(loopback only)"


def test_a_peer_with_the_connections_own_address_is_this_machine() -> None:
    policy = HAPeerPolicy.parse("")
    assert policy.allows("192.0.2.2", "192.0.2.2")
    assert policy.allows("::ffff:192.0.2.2", "192.0.2.2") and policy.allows("192.0.2.2", "::ffff:192.0.2.2")
    assert not policy.allows("192.0.2.3", "192.0.2.2")
    assert not policy.allows("192.0.2.2", "")


def test_listed_patterns_admit_their_addresses_only() -> None:
    policy = HAPeerPolicy.parse(" 10.0.0.5 ; 192.168.1.1-20;fd00::{2,3}; 172.16.*.* ")
    for host in ("10.0.0.5", "192.168.1.7", "fd00::3", "172.16.200.1", "::ffff:10.0.0.5", "127.0.0.1"):
        assert policy.allows(host), host
    for host in ("10.0.0.6", "192.168.1.21", "fd00::4", "172.17.0.1"):
        assert not policy.allows(host), host


def test_a_comma_list_is_one_pattern() -> None:
    policy = HAPeerPolicy.parse("10.0.0.5,10.0.0.9")
    assert policy.allows("10.0.0.9") and not policy.allows("10.0.0.7")


def test_star_admits_everyone_explicitly() -> None:
    assert HAPeerPolicy.parse("*").allows("203.0.113.9")


def test_peer_ip_unwraps_v4_mapped_addresses() -> None:
    assert peer_ip("::ffff:192.0.2.2") == "192.0.2.2"
    assert peer_ip("fe80::1%eth0") == "fe80::1%eth0"
    assert peer_ip("not an address") == "not an address"


@pytest.mark.parametrize("bad", ["10.0.0.300", "10.*.*.*.*", "fd00::*:1", "hostname.example"])
def test_a_pattern_that_cannot_be_honoured_is_refused_at_start(bad: str) -> None:
    with pytest.raises(ConfigError) as err:
        BrokerConfig.from_mapping({"haAllowedAddresses": f"10.0.0.1;{bad}"})
    assert err.value.key == "haAllowedAddresses" and bad in str(err.value)
