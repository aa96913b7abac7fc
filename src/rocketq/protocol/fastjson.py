"""Read JSON as fastjson (the Java serializer) writes it: the one home of the lenient JSON readers.

Java brokers and name servers answer some requests with non-standard JSON (protocol reference §3.9):

* map keys that are numbers, unquoted: ``{"brokerAddrs":{0:"10.0.0.9:10911"}}`` (ClusterInfo, old routes);
* map keys that are objects: ``{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{...}}}``
  (TopicStatsTable, ConsumeStats, ResetOffsetBody, ConsumerRunningInfo).

Two entry points; both raise ``ProtocolError`` for text they cannot read:

* ``loads`` tries strict JSON first and falls back to a small parser that accepts any value as a key. Number
  keys become their text (as if quoted); object/array keys become their canonical JSON text (sorted keys, no
  spaces), which ``key_object`` turns back into a dict. Clients read broker and name-server answers with it.
* ``loads_lenient`` accepts only the first dialect (bare integer keys), by quoting them and parsing strictly.
  The name server reads what brokers register with it; it is kept narrower than ``loads`` because widening
  what a name server accepts is a behaviour change, not a move.

(Java keeps no counterpart: fastjson itself is the reader there.)
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

import orjson

from rocketq.errors import ProtocolError
from rocketq.protocol.bodies import MessageQueue

__all__ = ["key_object", "loads", "loads_lenient", "mq_from_key"]

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?")
_WS = " \t\n\r"


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON in the full fastjson dialect (any value as a map key, single-quoted strings)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    text = data if isinstance(data, str) else bytes(data).decode("utf-8", "replace")
    parser = _Parser(text)
    try:
        value = parser.value()
        parser.ws()
    except (IndexError, ValueError) as exc:
        raise ProtocolError(f"body is not JSON (even fastjson-style): {exc}") from exc
    if parser.pos != len(text):
        raise ProtocolError(f"trailing data at {parser.pos} in JSON body")
    return value


# fastjson writes non-string map keys bare: {0:"ip:port"}. Quote them so a standard parser accepts the text.
_BARE_INT_KEY = re.compile(rb'([{,])\s*(-?\d+)\s*:')


def loads_lenient(body: bytes | bytearray | memoryview) -> Any:
    """Parse a JSON body, also accepting fastjson's unquoted integer map keys (and nothing else non-standard)."""
    data = bytes(body)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as first:
        try:
            return orjson.loads(_BARE_INT_KEY.sub(rb'\1"\2":', data))
        except orjson.JSONDecodeError:
            raise ProtocolError(f"body is not valid JSON: {first}") from first


def key_object(key: str) -> Any:
    """Decode an object-valued map key produced by ``loads``."""
    return orjson.loads(key)


def mq_from_key(key: str) -> MessageQueue:
    """A ``MessageQueue`` written as a fastjson map key."""
    return MessageQueue.from_json(key_object(key))


def _canonical(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


class _Parser:
    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def ws(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in _WS:
            pos += 1
        self.pos = pos

    def value(self) -> Any:
        self.ws()
        ch = self.text[self.pos]
        if ch == "{":
            return self.obj()
        if ch == "[":
            return self.arr()
        if ch == '"':
            s, self.pos = scanstring(self.text, self.pos + 1, True)
            return s
        if ch == "'":  # fastjson accepts single quotes; be equally lenient
            end = self.text.index("'", self.pos + 1)
            s = self.text[self.pos + 1 : end]
            self.pos = end + 1
            return s
        for word, val in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return val
        m = _NUMBER.match(self.text, self.pos)
        if not m:
            raise ValueError(f"unexpected character {ch!r} at {self.pos}")
        self.pos = m.end()
        return json.loads(m.group(0))

    def obj(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        self.pos += 1
        self.ws()
        if self.text[self.pos] == "}":
            self.pos += 1
            return out
        while True:
            key = self.value()
            if not isinstance(key, str):
                key = _canonical(key) if isinstance(key, dict | list) else ("null" if key is None else str(key))
                if key in ("True", "False"):
                    key = key.lower()
            self.ws()
            if self.text[self.pos] != ":":
                raise ValueError(f"expected ':' at {self.pos}")
            self.pos += 1
            out[key] = self.value()
            self.ws()
            ch = self.text[self.pos]
            self.pos += 1
            if ch == "}":
                return out
            if ch != ",":
                raise ValueError(f"expected ',' or '}}' at {self.pos - 1}")

    def arr(self) -> list[Any]:
        out: list[Any] = []
        self.pos += 1
        self.ws()
        if self.text[self.pos] == "]":
            self.pos += 1
            return out
        while True:
            out.append(self.value())
            self.ws()
            ch = self.text[self.pos]
            self.pos += 1
            if ch == "]":
                return out
            if ch != ",":
                raise ValueError(f"expected ',' or ']' at {self.pos - 1}")
