"""Reading a broker (offset) message id, and telling it apart from what users give instead.

An offset message id (what the broker answers a send with, ``msgId`` of SendResult's ``offset_msg_id``) is the
store host and the commit-log offset: ``ip (4|16) | port (4) | offset (8)``, 32 or 56 hex digits. A client message
id (``UNIQ_KEY``, set by the producer) has the same lengths, so the lengths alone cannot tell them apart; its
bytes where a port would be hold a pid and a hash, which read as a port beyond 65535 (or 0). Such an id can only
be found by searching a topic's index, so it is refused with a message saying that.
"""

from __future__ import annotations

from rocketq.client.errors import InvalidMessageIdError
from rocketq.errors import ProtocolError
from rocketq.protocol.message import parse_offset_msg_id

__all__ = ["check_message_id", "decode_offset_msg_id"]

_LENGTHS = (32, 56)  # hex digits: IPv4 and IPv6 ids


def check_message_id(msg_id: str) -> None:
    """InvalidMessageIdError unless ``msg_id`` is 32 or 56 hex digits (the form of every RocketMQ message id)."""
    try:
        bytes.fromhex(msg_id)
    except ValueError:
        raise InvalidMessageIdError(f"{msg_id!r} is not a message id: it is not hexadecimal") from None
    if len(msg_id) not in _LENGTHS:
        raise InvalidMessageIdError(
            f"{msg_id!r} is not a message id: it has {len(msg_id)} hex digits, a message id has 32 (or 56 for IPv6)"
        )


def decode_offset_msg_id(msg_id: str) -> tuple[str, int]:
    """The broker address (``host:port``) and commit-log offset in an offset message id.

    InvalidMessageIdError (a ValueError) says what is wrong: not a message id at all, or a client message id,
    which has to be searched for in its topic.
    """
    check_message_id(msg_id)
    try:
        (ip, port), offset = parse_offset_msg_id(msg_id)
    except ProtocolError as exc:  # checked above; kept so a future layout change cannot leak a ProtocolError
        raise InvalidMessageIdError(str(exc)) from None
    if not 0 < port < 65536 or offset < 0:
        raise InvalidMessageIdError(
            f"{msg_id} is not a broker (offset) message id; it looks like a client message id (UNIQ_KEY, set by "
            "the producer), which is found by searching its topic: give the topic (-t)"
        )
    host = f"[{ip}]" if ":" in ip else ip
    return f"{host}:{port}", offset
