"""Remote-address patterns of plain ACL (Java ``RemoteAddressStrategyFactory``), compiled once, matched often.

| pattern                                  | matches                                                        |
|------------------------------------------|----------------------------------------------------------------|
| blank                                    | nothing                                                        |
| ``*``, ``*.*.*.*``, ``*:*:*:*:*:*:*:*``  | everything                                                     |
| ``1.2.3.{4,5}`` / ``2::a:{1,2}``         | the listed last octets (IPv6: last group)                      |
| ``a,b,c``                                | exactly those addresses                                        |
| ``10.*.*.*``, ``192.168.1.1-20``         | the first ``*``/``a-b`` segment is the range; later ones ignored |
| ``2::ac5:78:1-200:*``, ``2::ac5:*``      | the same for IPv6 (``*`` only at the end)                      |
| anything else                            | that one address (IPv4 or IPv6)                                |

A pattern Java would accept and then fail on at match time (a range whose first three segments hold no
range, an out-of-range head) is refused here when the file is read: a rule that cannot be honoured never
turns into "allow".
"""

from __future__ import annotations

import ipaddress
from abc import ABC, abstractmethod
from dataclasses import dataclass

from rocketq.acl.errors import AclConfigError

_EVERYTHING = frozenset({"*", "*.*.*.*", "*:*:*:*:*:*:*:*"})


def _is_v4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def _v6(text: str) -> str | None:
    """``text`` as eight upper-case four-digit groups (Java ``AclUtils.expandIP``), None if not IPv6."""
    try:
        return ipaddress.IPv6Address(text).exploded.upper()
    except ValueError:
        return None


def normalize(address: str) -> str:
    """The form a pattern compares a client address in: IPv4 as is, IPv6 fully expanded."""
    if ":" in address:
        return _v6(address) or address
    return address


class AddressPattern(ABC):
    """A compiled pattern: ``matches(client_ip)``; one subclass per form of the table above."""

    text: str

    @abstractmethod
    def matches(self, address: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class _Const(AddressPattern):
    text: str
    result: bool

    def matches(self, address: str) -> bool:
        return self.result


@dataclass(frozen=True, slots=True)
class _Set(AddressPattern):
    text: str
    members: frozenset[str]

    def matches(self, address: str) -> bool:
        return normalize(address) in self.members


@dataclass(frozen=True, slots=True)
class _Range4(AddressPattern):
    text: str
    head: tuple[int, ...]  # the octets before the ranged one
    start: int
    end: int

    def matches(self, address: str) -> bool:
        if ":" in address or not _is_v4(address):
            return False
        octets = tuple(int(p) for p in address.split("."))
        n = len(self.head)
        return octets[:n] == self.head and self.start <= octets[n] <= self.end


@dataclass(frozen=True, slots=True)
class _Range6(AddressPattern):
    text: str
    head: tuple[str, ...]  # the expanded groups before the ranged one
    start: int
    end: int

    def matches(self, address: str) -> bool:
        full = _v6(address) if ":" in address else None
        if full is None:
            return False
        groups = full.split(":")
        n = len(self.head)
        return tuple(groups[:n]) == self.head and self.start <= int(groups[n], 16) <= self.end


def compile_pattern(text: str | None) -> AddressPattern:
    """Compile one pattern; raises ``AclConfigError`` (naming the pattern) for one that cannot be honoured."""
    raw = "" if text is None else str(text)
    if not raw.strip():
        return _Const(raw, False)
    if raw in _EVERYTHING:
        return _Const(raw, True)
    try:
        if raw.endswith("}"):
            return _braces(raw)
        if "," in raw:
            return _Set(raw, frozenset(_one(p, raw) for p in raw.split(",") if p))
        if "*" in raw or "-" in raw:
            return _range6(raw) if ":" in raw else _range4(raw)
        return _Set(raw, frozenset({_one(raw, raw)}))
    except (ValueError, IndexError) as exc:  # int() of a bad segment, a segment missing
        raise AclConfigError(f"address pattern {raw!r}: {exc}") from None


def _bad(raw: str, why: str) -> AclConfigError:
    return AclConfigError(f"address pattern {raw!r}: {why}")


def _one(address: str, raw: str) -> str:
    if _is_v4(address):
        return address
    full = _v6(address)
    if full is None:
        raise _bad(raw, f"{address!r} is not an IPv4 or IPv6 address")
    return full


def _braces(raw: str) -> AddressPattern:
    sep = ":" if ":" in raw else "."
    parts = [p for p in raw.split(sep) if p]
    last = parts[-1] if parts else ""
    if not last.startswith("{") or (sep == "." and len(parts) < 4):
        raise _bad(raw, "a {a,b} list must be the last segment of a full address")
    prefix = raw[: raw.index("{")]
    tails = [t for t in last[1:-1].split(",") if t]
    return _Set(raw, frozenset(_one(prefix + t, raw) for t in tails))


def _span(value: str, base: int, top: int, raw: str) -> tuple[int, int] | None:
    """The range a segment gives (None: a plain segment)."""
    if value == "*":
        return 0, top
    if "-" not in value:
        return None
    if value.startswith("-"):
        raise _bad(raw, f"range {value!r} has no start")
    bounds = [b for b in value.split("-") if b]
    start, end = int(bounds[0], base), int(bounds[1], base)
    if not (0 <= start <= end <= top):
        raise _bad(raw, f"range {value!r} is outside 0..{top} or reversed")
    return start, end


def _range4(raw: str) -> AddressPattern:
    parts = [p.strip() for p in raw.split(".") if p]
    if len(parts) != 4:
        raise _bad(raw, "an IPv4 range needs four segments")
    for i in (1, 2, 3):  # Java looks at segments 2-4 only, the first range found wins
        span = _span(parts[i], 10, 255, raw)
        if span is not None and span[1] > 0:
            head = tuple(int(p) for p in parts[:i])
            if not all(0 <= o <= 255 for o in head):
                raise _bad(raw, "an octet before the range is outside 0..255")
            return _Range4(raw, head, span[0], span[1])
    raise _bad(raw, "no '*' or 'a-b' range in segments 2 to 4")


def _range6(raw: str) -> AddressPattern:
    star, dash = raw.find("*"), raw.find("-")
    if star >= 0 and star != len(raw) - 1:
        raise _bad(raw, "'*' may only end an IPv6 pattern")
    last_colon = raw.rfind(":")
    if dash >= 0 and dash <= (last_colon if star < 0 else raw.rfind(":", 0, last_colon)):
        raise _bad(raw, "the 'a-b' range must be the last group (before a final '*')")
    # Expand the part before the ranged group to the groups it stands for (Java v6ipProcess).
    if star >= 0 and dash >= 0:
        prefix, ranged, width = raw[: raw.rfind(":", 0, last_colon)], raw[raw.rfind(":", 0, last_colon) + 1 :], 6
        ranged = ranged.split(":")[0]
    else:
        prefix, ranged, width = raw[:last_colon], raw[last_colon + 1 :], 7
    head = _expand(prefix, width, raw)
    span = _span(ranged.strip(), 16, 0xFFFF, raw)
    if span is None or span[1] == 0:
        raise _bad(raw, "no '*' or 'a-b' range in the last group")
    return _Range6(raw, head, span[0], span[1])


def _expand(prefix: str, width: int, raw: str) -> tuple[str, ...]:
    """``prefix`` (may hold one ``::``) as ``width`` four-digit upper-case groups."""
    if prefix.count("::") > 1:
        raise _bad(raw, "more than one '::'")
    if "::" in prefix:
        left, right = prefix.split("::")
        lg, rg = [g for g in left.split(":") if g], [g for g in right.split(":") if g]
        groups = [*lg, *["0"] * (width - len(lg) - len(rg)), *rg]
    else:
        groups = prefix.split(":")
    if len(groups) != width:
        raise _bad(raw, f"expected {width} groups before the range")
    for g in groups:
        if not 0 <= int(g, 16) <= 0xFFFF or len(g) > 4:
            raise _bad(raw, f"group {g!r} is not 0..ffff")
    return tuple(g.upper().zfill(4) for g in groups)
