"""Tag filtering: the ``TAG`` subscription type (RocketMQ 4.9 semantics).

* ``tagsCode`` of a message is Java's ``String.hashCode()`` of its ``TAGS`` property (0 for no / empty tag),
  computed over UTF-16 code units (``store/MessageExtBrokerInner.tagsString2tagsCode``).
* A subscription string is ``*`` (or ``None`` / empty) for "everything", otherwise tags joined by ``||``
  (``common/filter/FilterAPI.buildSubscriptionData``): split on ``||``, Java-``trim()`` each part, skip empty
  parts. Only the exact string ``*`` means "everything"; ``" * "`` is the single tag ``*``, as in Java.
* The broker matches on the hash (``broker/filter/ExpressionMessageFilter.isMatchedByConsumeQueue``):
  everything matches ``*``, a missing tagsCode matches, otherwise ``(int) tagsCode`` must be in the code set.
  Hash collisions give false positives, which the client removes by re-checking the tag string
  (``client/impl/consumer/PullAPIWrapper.processPullResult``): a message without a tag never passes a
  non-empty tag set, and an empty tag set (``*``, or a degenerate string such as ``"||"``) lets everything
  through.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rocketq.common.hashing import java_string_hash

__all__ = ["SUB_ALL", "TagExpression", "java_string_hash", "java_trim", "tags_code"]

SUB_ALL = "*"
_SEPARATOR = "||"
_MASK32 = 0xFFFFFFFF
# Java's String.trim() removes every char <= U+0020 from both ends (not Unicode whitespace in general).
_JAVA_TRIM_CHARS = "".join(chr(c) for c in range(0x21))


def tags_code(tags: str | None) -> int:
    """The ConsumeQueue ``tagsCode`` of a message's ``TAGS`` value: 0 for ``None`` or ``""``."""
    if not tags:
        return 0
    return _cached_hash(tags)


# A topic has few distinct tags, and tags_code runs once per stored message.
_cached_hash = lru_cache(maxsize=4096)(java_string_hash)


def java_trim(s: str) -> str:
    """Java ``String.trim()``: strip every character ``<= U+0020`` from both ends."""
    return s.strip(_JAVA_TRIM_CHARS)


def _to_int32(value: int) -> int:
    value &= _MASK32
    return value - 0x100000000 if value & 0x80000000 else value


@dataclass(frozen=True, slots=True)
class TagExpression:
    """A parsed ``TAG`` subscription expression.

    ``expression`` is the subscription string as the broker keeps it (``*`` for ``None`` / empty input);
    ``tags`` and ``codes`` are the Java ``tagsSet`` / ``codeSet`` (both empty when ``matches_all``).
    """

    expression: str
    tags: frozenset[str]
    codes: frozenset[int]
    matches_all: bool

    @classmethod
    def parse(cls, expression: str | None) -> TagExpression:
        """Parse a subscription string such as ``"TagA || TagB"``, ``"*"``, ``""`` or ``None``."""
        if expression is None or expression == "" or expression == SUB_ALL:
            return cls(SUB_ALL, frozenset(), frozenset(), True)
        tags: set[str] = set()
        for part in expression.split(_SEPARATOR):
            tag = java_trim(part)
            if tag:
                tags.add(tag)
        return cls(expression, frozenset(tags), frozenset(java_string_hash(t) for t in tags), False)

    def matches_code(self, code: int | None) -> bool:
        """Broker-side check of a ConsumeQueue ``tagsCode`` (``None``: the entry has no tagsCode -> match).

        Only the low 32 bits take part, as in Java's ``tagsCode.intValue()``.
        """
        if self.matches_all or code is None:
            return True
        return _to_int32(code) in self.codes

    def matches_tag(self, tag: str | None) -> bool:
        """Client-side re-check of a pulled message's tag string (exact, case-sensitive)."""
        if not self.tags:
            return True
        return tag is not None and tag in self.tags

    def __str__(self) -> str:
        return self.expression
