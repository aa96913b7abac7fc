"""Recognise a client of another protocol on a remoting port, to say so in one clear line.

A RocketMQ 5 gRPC client opens with the HTTP/2 preface ``PRI * HTTP/2.0``; read as a remoting frame, its first
four bytes are a length of 1347569952, refused as too large — true, but it tells the operator nothing. The
check runs only on a read the frame decoder refused, so it costs nothing on the way of good frames.
"""

from __future__ import annotations

import logging

from rocketq.common.ratelog import RateLimitedLog

log = logging.getLogger("rocketq.remoting")
#: a client that reconnects in a loop (gRPC does) gets one line a minute per peer host, not one per attempt
_lines = RateLimitedLog(log)

HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_HTTP1_METHODS = (b"GET ", b"POST ", b"PUT ", b"HEAD ", b"DELETE ", b"OPTIONS ", b"PATCH ", b"CONNECT ")

_ADVICE = {
    "HTTP/2": "a RocketMQ 5 gRPC client (HTTP/2) connected to the remoting port, which speaks RocketMQ 4.x "
    "remoting only; rocketq has no gRPC endpoint yet — use a 4.x remoting client (Java/C++/Go 4.x SDK, "
    "rocketq.client) with this address",
    "HTTP/1": "an HTTP client connected to the remoting port, which speaks RocketMQ 4.x remoting only "
    "(rocketq has no HTTP endpoint; the admin tools are `rocketq` and mqadmin)",
    "TLS": "a TLS client connected to the remoting port, which does not speak TLS; connect without TLS",
}


def foreign_protocol(first: bytes | bytearray | memoryview) -> str | None:
    """The protocol whose opening bytes ``first`` are (``"HTTP/2"``, ``"HTTP/1"``, ``"TLS"``), or None."""
    head = bytes(first[: len(HTTP2_PREFACE)])
    if len(head) >= 4 and (head.startswith(HTTP2_PREFACE[:14]) or HTTP2_PREFACE.startswith(head)):
        return "HTTP/2"
    if head.startswith(_HTTP1_METHODS):
        return "HTTP/1"
    if len(head) >= 3 and head[0] == 0x16 and head[1] == 0x03 and head[2] <= 0x04:  # a TLS handshake record
        return "TLS"
    return None


def report_foreign(remote: str, data: bytes | bytearray | memoryview) -> bool:
    """Log one line naming the protocol if ``data`` opens another protocol; True if it did (closing is the
    caller's)."""
    protocol = foreign_protocol(data)
    if protocol is None:
        return False
    host = remote.rpartition(":")[0] or remote
    _lines.warning(("foreign", protocol, host), "remoting.foreign_protocol remote=%s protocol=%s: %s",
                   remote, protocol, _ADVICE[protocol])  # fmt: skip
    return True
