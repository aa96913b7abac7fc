"""Request → the resources it needs, exactly as Java 4.9.7/4.9.8 ``PlainAccessValidator.parse`` derives them.

A group is named by its retry topic ``%RETRY%<group>``. A field that is absent names no resource (Java skips
a null resource), so such a request is checked for key and signature only. Codes not listed need no
resource at all (SEND_BATCH_MESSAGE, QUERY_CONSUMER_OFFSET, END_TRANSACTION, LOCK_BATCH_MQ, the ACL admin
codes 50-54, ...); the admin-only codes are ``permission.ADMIN_CODES``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rocketq.acl.errors import AclDenied
from rocketq.acl.permission import PUB, RETRY_PREFIX, SUB
from rocketq.codes import RequestCode
from rocketq.errors import ProtocolError
from rocketq.protocol import fastjson

#: the Java frame a failure to read the request is reported from (``new AclException(t.getMessage(), t)``)
PARSE_FRAME = "org.apache.rocketmq.acl.plain.PlainAccessValidator.parse(PlainAccessValidator.java:134)"


_POP_CODES = frozenset({
    RequestCode.POP_MESSAGE, RequestCode.ACK_MESSAGE, RequestCode.CHANGE_MESSAGE_INVISIBLETIME,
    RequestCode.PEEK_MESSAGE, RequestCode.NOTIFICATION, RequestCode.POLLING_INFO,
})  # fmt: skip


def _retry(group: str | None) -> str | None:
    return None if group is None else RETRY_PREFIX + group


def _send(out: dict[str, int], topic: str | None, group: str | None) -> None:
    # 4.9.4+: a send to a retry topic needs SUB on the group, not PUB on the topic
    if topic is not None and topic.startswith(RETRY_PREFIX):
        _add(out, _retry(group), SUB)
    else:
        _add(out, topic, PUB)


def _add(out: dict[str, int], resource: str | None, perm: int) -> None:
    if resource is not None:
        out[resource] = perm


#: codes Java checks for key and signature only, that rocketq also checks for resources when ``strict``
STRICT_CODES = frozenset(
    {RequestCode.SEND_BATCH_MESSAGE, RequestCode.QUERY_CONSUMER_OFFSET, RequestCode.LOCK_BATCH_MQ,
     RequestCode.UNLOCK_BATCH_MQ}
)  # fmt: skip


def needed(
    code: int, ext: Mapping[str, str], body: bytes | bytearray | memoryview | None, *, strict: bool = False
) -> dict[str, int]:
    """Resource → needed permission for one request; ``AclDenied`` when a body it reads cannot be read.

    ``strict`` (rocketq, ``aclStrictResources``): a batch send needs what a single send needs, reading a
    group's offset SUB on the group and topic, locking queues SUB on the group and their topics."""
    out: dict[str, int] = {}
    get = ext.get
    if strict and code in STRICT_CODES:
        if code == RequestCode.SEND_BATCH_MESSAGE:
            _send(out, get("b"), get("a"))
        elif code == RequestCode.QUERY_CONSUMER_OFFSET:
            _add(out, _retry(get("consumerGroup")), SUB)
            _add(out, get("topic"), SUB)
        else:
            _lock(out, body)
        return out
    if code == RequestCode.SEND_MESSAGE:
        _send(out, get("topic"), get("group"))  # Java reads "group", which the V1 header does not have
    elif code == RequestCode.SEND_MESSAGE_V2:
        _send(out, get("b"), get("a"))
    elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
        _add(out, _retry(get("group")), SUB)
    elif code == RequestCode.PULL_MESSAGE:
        _add(out, get("topic"), SUB)
        _add(out, _retry(get("consumerGroup")), SUB)
    elif code in _POP_CODES:
        # rocketq: a pop, ack or change reads the topic and the group (SUB on both), as a pull does
        _add(out, get("topic"), SUB)
        _add(out, _retry(get("consumerGroup")), SUB)
    elif code == RequestCode.QUERY_MESSAGE:
        _add(out, get("topic"), SUB)
    elif code == RequestCode.HEART_BEAT:
        _heartbeat(out, body)
    elif code in (RequestCode.UNREGISTER_CLIENT, RequestCode.GET_CONSUMER_LIST_BY_GROUP):
        _add(out, _retry(get("consumerGroup")), SUB)
    elif code == RequestCode.UPDATE_CONSUMER_OFFSET:
        _add(out, _retry(get("consumerGroup")), SUB)
        _add(out, get("topic"), SUB)
    return out


def _heartbeat(out: dict[str, int], body: bytes | bytearray | memoryview | None) -> None:
    try:
        data = fastjson.loads(bytes(body or b""))
        consumers = _list(data.get("consumerDataSet", []) if isinstance(data, dict) else None)
        for consumer in consumers:
            if not isinstance(consumer, dict):
                raise ValueError("consumerDataSet holds a non-object")
            _add(out, _retry(_name(consumer.get("groupName"))), SUB)
            for sub in _list(consumer.get("subscriptionDataSet", [])):
                if not isinstance(sub, dict):
                    raise ValueError("subscriptionDataSet holds a non-object")
                _add(out, _name(sub.get("topic")), SUB)
    except (ProtocolError, ValueError) as exc:
        raise AclDenied(f"cannot read the heartbeat body: {exc}", PARSE_FRAME) from None


def _lock(out: dict[str, int], body: bytes | bytearray | memoryview | None) -> None:
    try:
        data = fastjson.loads(bytes(body or b""))
        if not isinstance(data, dict):
            raise ValueError("expected a JSON object")
        _add(out, _retry(_name(data.get("consumerGroup"))), SUB)
        for mq in _list(data.get("mqSet", [])):
            if not isinstance(mq, dict):
                raise ValueError("mqSet holds a non-object")
            _add(out, _name(mq.get("topic")), SUB)
    except (ProtocolError, ValueError) as exc:
        raise AclDenied(f"cannot read the lock body: {exc}", PARSE_FRAME) from None


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"expected a JSON array, got {type(value).__name__}")
    return value


def _name(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return str(value)
