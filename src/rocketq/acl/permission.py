"""Permission bits and strings of plain ACL (Java ``acl.common.Permission``)."""

from __future__ import annotations

DENY = 1
ANY = 2
PUB = 4
SUB = 8

#: the strings a file may give a permission as (Java trims them)
PERM_STRINGS = {"DENY": DENY, "PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB}

#: request codes only an ``admin`` account may send (Java ``Permission.ADMIN_CODE``)
ADMIN_CODES = frozenset({17, 25, 200, 207, 215})

#: the prefix that turns a group into its resource name (``MixAll.RETRY_GROUP_TOPIC_PREFIX``)
RETRY_PREFIX = "%RETRY%"


def check(needed: int, owned: int) -> bool:
    """Whether ``owned`` grants ``needed`` (a DENY bit refuses everything)."""
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def perm_text(bits: int) -> str:
    for text, value in PERM_STRINGS.items():
        if value == bits:
            return text
    return "DENY"
