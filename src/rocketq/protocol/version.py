"""Client version ordinals (the ``version`` of every request) → Java ``MQVersion.Version`` names.

RocketMQ 5.1's metrics label clients with ``MQVersion.getVersionDesc(version)`` lower-cased (``v4_9_7``); an
ordinal past the table is ``HIGHER_VERSION``, as in Java. The table is built from its regular shape instead of
listed: sixteen 3.0.0 pre-releases, then a ``_SNAPSHOT`` and a release for each version from 3.0.1 on.
"""

from __future__ import annotations

__all__ = ["version_desc"]

_V3_0_0 = (
    "V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1", "V3_0_0_BETA1", "V3_0_0_BETA2", "V3_0_0_BETA3", "V3_0_0_BETA4",
    "V3_0_0_BETA5", "V3_0_0_BETA6_SNAPSHOT", "V3_0_0_BETA6", "V3_0_0_BETA7_SNAPSHOT", "V3_0_0_BETA7",
    "V3_0_0_BETA8_SNAPSHOT", "V3_0_0_BETA8", "V3_0_0_BETA9_SNAPSHOT", "V3_0_0_BETA9", "V3_0_0_FINAL",
)  # fmt: skip
#: the 3.x versions after 3.0.0 by minor: (minor, first patch, last patch); 4.0.0 to 5.9.9 are all there
_V3_PATCHES = ((0, 1, 15), (1, 0, 9), (2, 0, 9), *((minor, 1, 9) for minor in range(3, 10)))


def _table() -> tuple[str, ...]:
    versions = [(3, minor, patch) for minor, first, last in _V3_PATCHES for patch in range(first, last + 1)]
    versions += [(major, minor, patch) for major in (4, 5) for minor in range(10) for patch in range(10)]
    names = list(_V3_0_0)
    for major, minor, patch in versions:
        names += [f"V{major}_{minor}_{patch}_SNAPSHOT", f"V{major}_{minor}_{patch}"]
    names.append("HIGHER_VERSION")
    return tuple(names)


_NAMES = _table()


def version_desc(ordinal: int) -> str:
    """Java's ``MQVersion.getVersionDesc``; a negative ordinal (no Java client sends one) is ``UNKNOWN``."""
    if ordinal < 0:
        return "UNKNOWN"
    return _NAMES[min(ordinal, len(_NAMES) - 1)]
