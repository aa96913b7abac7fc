"""RemotingCommand: one frame of the RocketMQ 4.x remoting protocol, and its two header codecs.

Frame layout (all integers big-endian)::

    0      4   total length L = 4 + H + B (does not count itself)
    4      4   serialize type (top byte: 0 JSON, 1 ROCKETMQ) | header length H (low 24 bits)
    8      H   header (JSON text, or the ROCKETMQ binary header below)
    8+H    B   body

ROCKETMQ binary header::

    code i16 | language u8 | version i16 | opaque i32 | flag i32 |
    remark len i32 + utf-8 | extFields len i32 + repeated (key len i16 + key, value len i32 + value)

A zero-length string in the binary header reads back as "absent" (Java's decoder does the same).
JSON headers carry ``code``/``opaque``/``flag``/``version`` as numbers and every ``extFields`` value as a
string (C++ clients ignore non-string values). On input we coerce numbers and booleans to strings the way
fastjson does, because C++ clients send numbers for some request fields.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from rocketq.codes import CURRENT_VERSION, LanguageCode
from rocketq.errors import ProtocolError

SERIALIZE_JSON: Final = 0
SERIALIZE_ROCKETMQ: Final = 1

FLAG_RESPONSE: Final = 0x1
FLAG_ONEWAY: Final = 0x2

DEFAULT_MAX_FRAME_SIZE: Final = 16 * 1024 * 1024
_MAX_HEADER_LENGTH: Final = 0xFFFFFF

_PREFIX = struct.Struct(">II")
_BIN_FIXED = struct.Struct(">hBhii")  # code, language, version, opaque, flag
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")

_LANGUAGE_BY_BYTE = {lc.value: lc.name for lc in LanguageCode}
_LANGUAGE_BYTE = {lc.name: lc.value for lc in LanguageCode}

Buffer = bytes | bytearray | memoryview


@dataclass(slots=True, eq=True)
class RemotingCommand:
    """A request or response. ``ext_fields`` maps str → str, as on the wire."""

    code: int
    opaque: int = 0
    flag: int = 0
    language: str = "JAVA"
    version: int = CURRENT_VERSION
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: Buffer = b""
    serialize_type: int = SERIALIZE_JSON

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: Buffer = b"",
        *,
        oneway: bool = False,
        language: str = "PYTHON",
    ) -> RemotingCommand:
        return cls(
            code=code,
            flag=FLAG_ONEWAY if oneway else 0,
            language=language,
            ext_fields=ext_fields if ext_fields is not None else {},
            body=body,
        )

    def response(
        self, code: int, remark: str | None = None, ext_fields: dict[str, str] | None = None, body: Buffer = b""
    ) -> RemotingCommand:
        """A response to this request: same opaque and serialize type, response flag set.

        Replies to C++ peers are always JSON, whatever they sent (their decoder does not mask the type byte).
        """
        serialize_type = SERIALIZE_JSON if self.language == "CPP" else self.serialize_type
        return RemotingCommand(
            code=code,
            opaque=self.opaque,
            flag=FLAG_RESPONSE,
            language="JAVA",
            remark=remark,
            ext_fields=ext_fields if ext_fields is not None else {},
            body=body,
            serialize_type=serialize_type,
        )


# ----------------------------------------------------------------------------------------------- encode


def encode_header(cmd: RemotingCommand) -> bytes:
    if cmd.serialize_type == SERIALIZE_JSON:
        return _encode_json_header(cmd)
    if cmd.serialize_type == SERIALIZE_ROCKETMQ:
        try:
            return _encode_binary_header(cmd)
        except struct.error as exc:  # a value outside its i16/i32 field (code, version, key length, ...)
            raise ProtocolError(f"cannot encode ROCKETMQ header: {exc}") from exc
    raise ProtocolError(f"unknown serialize type {cmd.serialize_type}")


def encode_prefix(cmd: RemotingCommand, header: bytes) -> bytes:
    """The 8-byte frame prefix followed by the header; the body is written after it unchanged."""
    header_len = len(header)
    if header_len > _MAX_HEADER_LENGTH:
        raise ProtocolError(f"header of {header_len} bytes exceeds the 24-bit length field")
    total = 4 + header_len + len(cmd.body)
    return _PREFIX.pack(total, (cmd.serialize_type << 24) | header_len) + header


def encode(cmd: RemotingCommand) -> bytes:
    """The whole frame as one bytes object (copies the body; see ``encode_parts`` for zero-copy)."""
    head = encode_prefix(cmd, encode_header(cmd))
    return head + bytes(cmd.body) if cmd.body else head


def encode_parts(cmd: RemotingCommand) -> tuple[bytes, Buffer]:
    """Prefix+header and the body, for ``transport.writelines`` without copying the body."""
    return encode_prefix(cmd, encode_header(cmd)), cmd.body


def _encode_json_header(cmd: RemotingCommand) -> bytes:
    obj: dict[str, Any] = {
        "code": cmd.code,
        "extFields": cmd.ext_fields,
        "flag": cmd.flag,
        "language": cmd.language,
        "opaque": cmd.opaque,
        "serializeTypeCurrentRPC": "JSON",
        "version": cmd.version,
    }
    if cmd.remark is not None:
        obj["remark"] = cmd.remark
    try:
        return orjson.dumps(obj)
    except TypeError as exc:  # a non-str value slipped into ext_fields
        raise ProtocolError(f"cannot encode header: {exc}") from exc


def _encode_binary_header(cmd: RemotingCommand) -> bytes:
    parts = [
        _BIN_FIXED.pack(cmd.code, _LANGUAGE_BYTE.get(cmd.language, LanguageCode.OTHER), cmd.version,
                        cmd.opaque, cmd.flag)
    ]
    remark = cmd.remark.encode() if cmd.remark else b""
    parts.append(_I32.pack(len(remark)))
    parts.append(remark)
    ext = bytearray()
    for key, value in cmd.ext_fields.items():
        if not key or value is None:
            continue
        kb = key.encode()
        vb = value.encode()
        ext += _I16.pack(len(kb)) + kb + _I32.pack(len(vb)) + vb
    parts.append(_I32.pack(len(ext)))
    parts.append(bytes(ext))
    return b"".join(parts)


# ----------------------------------------------------------------------------------------------- decode


def decode_frame(frame: Buffer) -> RemotingCommand:
    """Decode one frame *without* its leading 4-byte total length. Raises only ``ProtocolError``."""
    view = memoryview(frame)
    if len(view) < 4:
        raise ProtocolError(f"frame of {len(view)} bytes is shorter than its header-length word")
    (word,) = _I32.unpack_from(view, 0)
    word &= 0xFFFFFFFF
    serialize_type = word >> 24
    header_len = word & _MAX_HEADER_LENGTH
    if header_len > len(view) - 4:
        raise ProtocolError(f"header length {header_len} exceeds frame length {len(view)}")
    header = view[4 : 4 + header_len]
    body = bytes(view[4 + header_len :])
    if serialize_type == SERIALIZE_JSON:
        cmd = _decode_json_header(header)
    elif serialize_type == SERIALIZE_ROCKETMQ:
        cmd = _decode_binary_header(header)
    else:
        raise ProtocolError(f"unknown serialize type {serialize_type}")
    cmd.body = body
    cmd.serialize_type = serialize_type
    return cmd


def _coerce_ext_value(key: str, value: object) -> str | None:
    # fastjson turns numbers and booleans into their text; C++ clients rely on it.
    if isinstance(value, str):
        return value
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    raise ProtocolError(f"extFields[{key!r}] is a {type(value).__name__}, not a scalar")


def _int_member(obj: dict[str, Any], name: str, default: int | None) -> int:
    value = obj.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ProtocolError(f"header member {name!r} is not an integer: {value!r}")
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError as exc:
            raise ProtocolError(f"header member {name!r} is not an integer: {value!r}") from exc
    if not -(2**31) <= value < 2**31:
        raise ProtocolError(f"header member {name!r} out of int32 range: {value}")
    return value


def _decode_json_header(header: memoryview) -> RemotingCommand:
    try:
        obj = orjson.loads(header)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"header is not valid JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise ProtocolError("JSON header is not an object")
    raw_ext = obj.get("extFields")
    ext: dict[str, str]
    if raw_ext is None:
        ext = {}
    elif raw_ext.__class__ is dict:
        # The common case (every Java/Python peer): all values are strings, and orjson's dict is used as is.
        ext = raw_ext
        for value in raw_ext.values():
            if value.__class__ is not str:
                ext = _coerce_ext(raw_ext)
                break
    else:
        raise ProtocolError("extFields is not an object")
    remark = obj.get("remark")
    if remark is not None and remark.__class__ is not str:
        remark = str(remark)
    language = obj.get("language", "JAVA")
    if language.__class__ is not str:
        language = _LANGUAGE_BY_BYTE.get(language, "OTHER") if isinstance(language, int) else "OTHER"
    code = obj.get("code", 0)  # Java reads a missing code as 0 (then answers "request type 0 not supported")
    opaque = obj.get("opaque", 0)
    flag = obj.get("flag", 0)
    version = obj.get("version", 0)
    # Plain ints within int32 need no checking beyond this; anything else takes the strict path.
    if not (
        code.__class__ is int and opaque.__class__ is int and flag.__class__ is int and version.__class__ is int
        and _I32_MIN <= code <= _I32_MAX and _I32_MIN <= opaque <= _I32_MAX
        and _I32_MIN <= flag <= _I32_MAX and _I32_MIN <= version <= _I32_MAX
    ):  # fmt: skip
        code = _int_member(obj, "code", 0)
        opaque = _int_member(obj, "opaque", 0)
        flag = _int_member(obj, "flag", 0)
        version = _int_member(obj, "version", 0)
    return RemotingCommand(code, opaque, flag, language, version, remark, ext)


_I32_MIN: Final = -(2**31)
_I32_MAX: Final = 2**31 - 1


def _coerce_ext(raw_ext: dict[str, Any]) -> dict[str, str]:
    ext: dict[str, str] = {}
    for key, value in raw_ext.items():
        coerced = _coerce_ext_value(key, value)
        if coerced is not None:
            ext[key] = coerced
    return ext


def _decode_binary_header(header: memoryview) -> RemotingCommand:
    try:
        code, lang, version, opaque, flag = _BIN_FIXED.unpack_from(header, 0)
        pos = _BIN_FIXED.size
        (remark_len,) = _I32.unpack_from(header, pos)
        pos += 4
        remark = _read_str(header, pos, remark_len)
        pos += remark_len
        (ext_len,) = _I32.unpack_from(header, pos)
        pos += 4
        if ext_len < 0 or pos + ext_len > len(header):
            raise ProtocolError(f"extFields length {ext_len} out of bounds")
        end = pos + ext_len
        ext: dict[str, str] = {}
        while pos < end:
            (klen,) = _I16.unpack_from(header, pos)
            pos += 2
            key = _read_str(header, pos, klen, end)
            pos += klen
            (vlen,) = _I32.unpack_from(header, pos)
            pos += 4
            value = _read_str(header, pos, vlen, end)
            pos += vlen
            if key is not None and value is not None:
                ext[key] = value
        if pos != end:
            raise ProtocolError("extFields overrun")
    except struct.error as exc:
        raise ProtocolError(f"truncated ROCKETMQ header: {exc}") from exc
    return RemotingCommand(
        code=code,
        opaque=opaque,
        flag=flag,
        language=_LANGUAGE_BY_BYTE.get(lang, "OTHER"),
        version=version,
        remark=remark,
        ext_fields=ext,
    )


def _read_str(buf: memoryview, pos: int, length: int, end: int | None = None) -> str | None:
    limit = len(buf) if end is None else end
    if length < 0 or pos + length > limit:
        raise ProtocolError(f"string length {length} out of bounds")
    if length == 0:
        return None
    try:
        return str(buf[pos : pos + length], "utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"string is not UTF-8: {exc}") from exc
