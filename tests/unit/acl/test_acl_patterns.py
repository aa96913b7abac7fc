"""Every remote-address pattern form of plain ACL (Java RemoteAddressStrategyFactory)."""

from __future__ import annotations

import pytest

from rocketq.acl.errors import AclConfigError
from rocketq.acl.patterns import compile_pattern

TABLE = [
    # blank: nothing
    ("", "127.0.0.1", False),
    ("   ", "127.0.0.1", False),
    (None, "127.0.0.1", False),
    # everything
    ("*", "10.1.2.3", True),
    ("*.*.*.*", "192.168.0.1", True),
    ("*:*:*:*:*:*:*:*", "::1", True),
    # one address
    ("192.168.0.1", "192.168.0.1", True),
    ("192.168.0.1", "192.168.0.2", False),
    ("::1", "0:0:0:0:0:0:0:1", True),
    ("2001:db8::1", "2001:DB8:0:0:0:0:0:1", True),
    ("2001:db8::1", "2001:db8::2", False),
    # comma list
    ("1.1.1.1,2.2.2.2", "2.2.2.2", True),
    ("1.1.1.1,2.2.2.2", "3.3.3.3", False),
    ("1.1.1.1,::1", "0:0:0:0:0:0:0:1", True),
    # braces: last octet / group
    ("192.168.1.{1,2,3}", "192.168.1.3", True),
    ("192.168.1.{1,2,3}", "192.168.1.4", False),
    ("192.168.1.{1,2,3}", "192.168.2.1", False),
    ("2001:db8::ac5:{1,2}", "2001:db8::ac5:2", True),
    ("2001:db8::ac5:{1,2}", "2001:db8::ac5:3", False),
    # IPv4 ranges: the first '*' or a-b in segments 2-4, later segments ignored
    ("10.*.*.*", "10.200.3.4", True),
    ("10.*.*.*", "11.0.0.1", False),
    ("192.168.*.*", "192.168.77.1", True),
    ("192.168.*.*", "192.169.0.1", False),
    ("192.168.1.*", "192.168.1.255", True),
    ("192.168.1.1-20", "192.168.1.20", True),
    ("192.168.1.1-20", "192.168.1.1", True),
    ("192.168.1.1-20", "192.168.1.21", False),
    ("192.168.1.1-20", "192.168.1.0", False),
    ("192.168.10-20.*", "192.168.15.99", True),
    ("192.168.10-20.*", "192.168.21.1", False),
    ("192.168.*.*", "::1", False),
    # IPv6 ranges
    ("2001:db8::ac5:*", "2001:db8::ac5:ffff", True),
    ("2001:db8::ac5:*", "2001:db8::ac6:1", False),
    ("2001:db8::ac5:1-200", "2001:db8::ac5:1ff", True),
    ("2001:db8::ac5:1-200", "2001:db8::ac5:201", False),
    ("2::ac5:78:1-200:*", "2::ac5:78:100:1", True),
    ("2::ac5:78:1-200:*", "2::ac5:78:300:1", False),
    ("2001:db8::ac5:*", "10.0.0.1", False),
]


@pytest.mark.parametrize("pattern,address,expected", TABLE)
def test_pattern_table(pattern: str | None, address: str, expected: bool) -> None:
    assert compile_pattern(pattern).matches(address) is expected


@pytest.mark.parametrize(
    "pattern",
    [
        "not-an-ip",
        "192.168.1.300",
        "192.168.1.{1,x}",
        "192.168.{1,2}",
        "192.168.1.20-1",
        "192.168.1.-5",
        "192.168.1.1-300",
        "*.1.2.3",  # Java accepts it, then fails on every match: refused when read
        "300.1.*.*",
        "2001:db8::*:1",  # '*' only at the end
        "2001:db8::1-2:5",  # the range must be the last group
        "1.1.1.1,bogus",
    ],
)
def test_patterns_that_cannot_be_honoured_are_refused(pattern: str) -> None:
    with pytest.raises(AclConfigError, match="address pattern"):
        compile_pattern(pattern)
