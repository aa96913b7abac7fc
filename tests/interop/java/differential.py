"""The differential suite's machinery: one side per server pair, hand-built requests, an explicit normaliser.

A ``Side`` is a name server + broker pair (Java 4.9.7 or rocketq) reached through rocketq's own
``RemotingClient``; every request is a hand-built ``RemotingCommand`` (JSON header unless a scenario asks
otherwise), so both servers receive the same bytes. ``observe`` turns an answer into plain data:

* the answer's code and serialisation, the remark (its text where a scenario says it matters, else whether an
  error answer has one), every extFields key with its value, and the body decoded (JSON compared as data,
  message records field by field);
* values that legitimately differ between two servers are replaced by placeholders, and only those:
  the side's own addresses, cluster and broker names (``<BROKER_ADDR>``, ``<NAMESRV_ADDR>``, ``<CLUSTER>``,
  ``<BROKER>``), offset message ids, commit-log positions and wall-clock times (``variable_checks`` names them;
  each is checked for its form before it is replaced), the answer's version and opaque (never observed).

Anything else — a new field on either side, a missing one, a changed value — shows up as a difference.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rocketq.codes import VERSION_V4_9_8
from rocketq.errors import RemotingTimeoutError
from rocketq.protocol import fastjson
from rocketq.protocol.command import FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand, decode_frame
from rocketq.protocol.message import MessageRecord, body_crc, iter_records, parse_offset_msg_id
from rocketq.remoting.client import RemotingClient

# A placeholder for "no answer within the scenario's wait" (oneway requests, a name server ignoring a code).
NO_ANSWER = "<no answer>"

# Names differ between runs (the Java broker is shared by the whole pytest session, other suites included).
RUN_ID = f"{time.time_ns() // 1_000_000 % 100_000_000:08d}"

# A debugging aid when a comparison fails: set it to keep every remark's text in the observations.
KEEP_ALL_REMARKS = False

_HEX32 = re.compile(r"[0-9A-F]{32}")
_ID_LISTS = frozenset({"msgId", "offsetMsgId"})


def _is_ms_timestamp(v: Any) -> bool:
    try:
        n = int(v)
    except (TypeError, ValueError):
        return False
    return 1_600_000_000_000 < n < 4_000_000_000_000


def _is_int(v: Any) -> bool:
    try:
        int(v)
    except (TypeError, ValueError):
        return False
    return not isinstance(v, bool)


@dataclass(frozen=True)
class Side:
    """One server pair as the suite talks to it."""

    label: str
    rc: RemotingClient
    namesrv: str
    broker: str
    cluster: str
    broker_name: str
    _names: Any = field(default_factory=itertools.count, compare=False, repr=False)

    def unique(self, prefix: str) -> str:
        """A topic/group name no earlier scenario or run used; the same on both sides when both run the same
        scenario (one counter per side, one run id per process)."""
        return f"{prefix}_{RUN_ID}_{next(self._names)}"

    def tokens(self) -> list[tuple[str, str]]:
        """(text, placeholder) pairs, longest text first so an address wins over a part of it."""
        pairs = [
            (self.broker, "<BROKER_ADDR>"),
            (self.namesrv, "<NAMESRV_ADDR>"),
            (self.cluster, "<CLUSTER>"),
            (self.broker_name, "<BROKER>"),
        ]
        return sorted(pairs, key=lambda p: -len(p[0]))

    async def call(
        self,
        addr: str,
        code: int,
        ext: Mapping[str, Any] | None = None,
        body: bytes = b"",
        *,
        timeout: float = 10.0,
        oneway: bool = False,
        language: str = "JAVA",
        version: int = VERSION_V4_9_8,
        serialize_type: int = 0,
    ) -> RemotingCommand | str:
        """One request; ``NO_ANSWER`` if nothing came back within ``timeout`` (or a oneway request)."""
        cmd = RemotingCommand(
            code=code,
            flag=FLAG_ONEWAY if oneway else 0,
            language=language,
            version=version,
            ext_fields={k: str(v) for k, v in (ext or {}).items()},
            body=body,
            serialize_type=serialize_type,
        )
        if oneway:
            await self.rc.invoke_oneway(addr, cmd)
            return NO_ANSWER
        try:
            return await self.rc.invoke(addr, cmd, timeout=timeout)
        except RemotingTimeoutError:
            return NO_ANSWER

    async def b(self, code: int, ext: Mapping[str, Any] | None = None, body: bytes = b"", **kw: Any) -> Any:
        return await self.call(self.broker, code, ext, body, **kw)

    async def ns(self, code: int, ext: Mapping[str, Any] | None = None, body: bytes = b"", **kw: Any) -> Any:
        return await self.call(self.namesrv, code, ext, body, **kw)

    def scrub(self, value: Any) -> Any:
        """Replace the side's own names and addresses in strings, keys included, recursively."""
        if isinstance(value, str):
            for text, placeholder in self.tokens():
                if value == text:
                    return placeholder
            for text, placeholder in self.tokens():
                if text in value:
                    value = value.replace(text, placeholder)
            return value
        if isinstance(value, dict):
            return {self.scrub(k): self.scrub(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.scrub(v) for v in value]
        return value


# ------------------------------------------------------------------------------------------------ observe


def _check_msg_id(side: Side, v: str) -> bool:
    ids = v.split(",")
    for one in ids:
        if not _HEX32.fullmatch(one):
            return False
        (ip, port), _ = parse_offset_msg_id(one)
        if f"{ip}:{port}" != side.broker:
            return False
    return True


def variable_checks(side: Side) -> dict[str, Callable[[Any], bool]]:
    """extFields and body members whose values differ legitimately between two servers, with the form each must
    have; the value is then replaced by ``<name>``. Everything not listed is compared as it is."""
    return {
        # offset message ids: store host + commit-log offset; the commit-log offset depends on what else the
        # (shared) broker stored before
        "msgId": lambda v: _check_msg_id(side, v),
        "offsetMsgId": lambda v: _check_msg_id(side, v),
        # wall-clock times
        "timestamp": _is_ms_timestamp,
        "storeTimestamp": _is_ms_timestamp,
        "bornTimestamp": _is_ms_timestamp,
        "lastTimestamp": _is_ms_timestamp,
        "lastUpdateTimestamp": _is_ms_timestamp,
        "indexLastUpdateTimestamp": _is_ms_timestamp,
        "bootTimestamp": _is_ms_timestamp,
        # commit-log positions (shared broker: depend on earlier scenarios)
        "commitLogOffset": _is_int,
        "indexLastUpdatePhyoffset": _is_int,
    }


def _scrub_variable(side: Side, obj: Any, checks: Mapping[str, Callable[[Any], bool]], path: str) -> Any:
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            check = checks.get(k) if isinstance(k, str) else None
            if check is not None and not isinstance(v, dict | list):
                if _is_int(v) and -1 <= int(v) <= 0 and check is _is_ms_timestamp:
                    out[k] = v  # "none" answers (0, -1) are compared as they are
                    continue
                if not check(v):
                    raise AssertionError(f"{side.label}: {path}.{k} = {v!r} has not the expected form")
                # a batch's ids: how many there are is compared
                out[k] = f"<{k} x{len(v.split(','))}>" if k in _ID_LISTS else f"<{k}>"
            else:
                out[k] = _scrub_variable(side, v, checks, f"{path}.{k}")
        return out
    if isinstance(obj, list):
        items = [_scrub_variable(side, v, checks, f"{path}[{i}]") for i, v in enumerate(obj)]
        if path.rsplit(".", 1)[-1] in UNORDERED:
            items.sort(key=lambda v: json.dumps(v, sort_keys=True))
        return items
    return obj


# Members that are Java Sets (or lists built from one): their order means nothing, they are compared sorted.
UNORDERED = frozenset({"lockOKMQSet", "mqSet", "consumerIdList", "topicList", "connectionSet", "tagsSet",
                       "codeSet", "groupList", "subscriptionDataSet", "filterServerList", "brokerDatas",
                       "queueDatas"})  # fmt: skip


def decode_json_body(body: bytes) -> Any:
    """A JSON body as data; fastjson's bare and object keys are read (object keys become sorted JSON text)."""
    return fastjson.loads(body)


def record_data(side: Side, rec: MessageRecord, raw_props: bytes) -> dict[str, Any]:
    """Every field of a 4.x message record; host and time fields checked for form, then placeholders.

    The properties are compared as a map (Java writes them in its HashMap's order); the record's size is
    compared without them (it contains the side's cluster name), and checked against the layout here.
    """
    assert rec.body_crc == body_crc(rec.body), f"{side.label}: BODYCRC mismatch"
    store_addr = f"{rec.store_host[0]}:{rec.store_host[1]}"
    assert store_addr == side.broker, f"{side.label}: storeHost {store_addr} is not the broker's address"
    assert rec.born_host[0] == "127.0.0.1", f"{side.label}: bornHost {rec.born_host}"
    assert _is_ms_timestamp(rec.store_timestamp) and _is_ms_timestamp(rec.born_timestamp)
    props = side.scrub(dict(rec.properties))
    if "ORIGIN_MESSAGE_ID" in props and _check_msg_id(side, props["ORIGIN_MESSAGE_ID"]):
        props["ORIGIN_MESSAGE_ID"] = "<offsetMsgId>"  # a retried message's first offset id (broker-made)
    fixed = rec.store_size - len(raw_props)
    assert fixed == 91 + len(rec.body) + len(rec.topic.encode()), f"{side.label}: record size {rec.store_size}"
    return {
        "topic": side.scrub(rec.topic),
        "queueId": rec.queue_id,
        "flag": rec.flag,
        "queueOffset": rec.queue_offset,
        "sysFlag": rec.sys_flag,
        "bornTimestamp": "<bornTimestamp>",
        "bornHost": "<client ip>:<port>",
        "storeTimestamp": "<storeTimestamp>",
        "storeHost": "<BROKER_ADDR>",
        "reconsumeTimes": rec.reconsume_times,
        # a committed transactional message names its half message's commit-log offset (0 for any other)
        "preparedTransactionOffset": "<commit-log offset>"
        if rec.sys_flag & 0xC == 0x8
        else rec.prepared_transaction_offset,
        "body": rec.uncompressed_body().decode("utf-8", "replace"),
        "sizeWithoutProperties": fixed,
        "properties": props,
        # Java drops the last separator (a deliberate difference, see test_differential.DELIBERATE)
        "propertiesEndWithSeparator": raw_props.endswith(b"\x02"),
    }


def records_of(side: Side, raw: bytes) -> list[dict[str, Any]]:
    """The records of a pull body, each with its raw properties bytes (the record's tail)."""
    data = []
    pos = 0
    for rec in iter_records(raw):
        assert not rec.sys_flag & 0x30, f"{side.label}: IPv6 host in a record"
        # IPv4 layout: 84 fixed bytes, body length + body, topic length + topic, properties length + text
        props_start = pos + 84 + 4 + len(rec.body) + 1 + len(rec.topic.encode()) + 2
        end = pos + rec.store_size
        data.append(record_data(side, rec, raw[props_start:end]))
        pos = end
    return data


def observe(
    side: Side,
    resp: RemotingCommand | str,
    *,
    body: str = "auto",
    remark: bool = False,
    variable: Iterable[str] = (),
) -> dict[str, Any]:
    """An answer as comparable data.

    ``body``: ``json``, ``records``, ``raw`` (bytes as text), ``size`` (only whether it is empty), ``none``
    or ``auto`` (JSON if it parses, else records if any, else raw). ``remark``: keep the remark text (its
    presence is always kept). ``variable``: extra member names whose values legitimately differ here.
    """
    if isinstance(resp, str):
        return {"answer": resp}
    assert resp.flag & FLAG_RESPONSE, f"{side.label}: answer without the response flag"
    checks = variable_checks(side)
    for name in variable:
        checks.setdefault(name, lambda v: True)
    out: dict[str, Any] = {"code": resp.code, "serializeType": resp.serialize_type}
    if remark or KEEP_ALL_REMARKS:
        out["remark"] = side.scrub(resp.remark)
    elif resp.code != 0:
        # error answers: whether there is a text; a success's remark is noise (Java leaves its default
        # "not set any response code" on some successes)
        out["remark"] = bool(resp.remark)
    out["ext"] = _scrub_variable(side, side.scrub(dict(resp.ext_fields)), checks, "ext")
    raw = bytes(resp.body)
    kind = body
    if kind == "auto":
        kind = "raw"
        if raw:
            try:
                decode_json_body(raw)
                kind = "json"
            except Exception:
                try:
                    list(iter_records(raw))
                    kind = "records"
                except Exception:
                    kind = "raw"
    if kind == "json":
        out["body"] = _scrub_variable(side, side.scrub(decode_json_body(raw)), checks, "body") if raw else None
    elif kind == "records":
        out["body"] = records_of(side, raw)
    elif kind == "raw":
        out["body"] = side.scrub(raw.decode("utf-8", "replace"))
    elif kind == "size":
        out["body"] = "<non-empty>" if raw else "<empty>"
    return out


# ------------------------------------------------------------------------------------------------- compare


def differences(java: Any, rq: Any, path: str = "") -> list[str]:
    """Every place where the two observations differ, as ``path: java=... rocketq=...`` lines."""
    if isinstance(java, dict) and isinstance(rq, dict):
        out: list[str] = []
        for key in sorted(set(java) | set(rq), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in java:
                out.append(f"{sub}: only rocketq has it ({rq[key]!r})")
            elif key not in rq:
                out.append(f"{sub}: only Java has it ({java[key]!r})")
            else:
                out.extend(differences(java[key], rq[key], sub))
        return out
    if isinstance(java, list) and isinstance(rq, list):
        if len(java) != len(rq):
            return [f"{path}: {len(java)} items in Java, {len(rq)} in rocketq: java={java!r} rocketq={rq!r}"]
        out = []
        for i, (a, b) in enumerate(zip(java, rq, strict=True)):
            out.extend(differences(a, b, f"{path}[{i}]"))
        return out
    if java != rq:
        return [f"{path}: java={java!r} rocketq={rq!r}"]
    return []


def assert_same(java: Any, rq: Any) -> None:
    diffs = differences(java, rq)
    assert not diffs, "Java 4.9.7 and rocketq differ:\n  " + "\n  ".join(diffs)


# ------------------------------------------------------------------------------------------------ helpers


def props(p: Mapping[str, str]) -> str:
    return "".join(f"{k}\x01{v}\x02" for k, v in p.items())


async def raw_exchange(addr: str, frame: bytes, *, wait: float = 3.0) -> dict[str, Any]:
    """Write raw bytes on a fresh connection: what comes back and whether the server closed the connection."""
    host, _, port = addr.rpartition(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    result: dict[str, Any] = {"answer": NO_ANSWER, "closed": False}
    try:
        writer.write(frame)
        await writer.drain()
        try:
            async with asyncio.timeout(wait):
                while True:  # requests the server pushes first (NOTIFY_CONSUMER_IDS_CHANGED) are noted
                    head = await reader.readexactly(4)
                    length = int.from_bytes(head, "big")
                    cmd = decode_frame(await reader.readexactly(length))
                    if cmd.flag & FLAG_RESPONSE:
                        break
                    result.setdefault("pushed", []).append(cmd.code)
                result["answer"] = cmd
                # the connection stays usable after an answered frame: check it is still open
                rest = await asyncio.wait_for(reader.read(1), 0.3)
                result["closed"] = rest == b""
        except TimeoutError:
            pass
        except asyncio.IncompleteReadError:
            result["closed"] = True
        except ConnectionResetError:
            result["closed"] = True
    finally:
        writer.close()
    return result


def json_frame(header: bytes, body: bytes = b"") -> bytes:
    """A frame with a literal JSON header (serialize type 0)."""
    return (4 + len(header) + len(body)).to_bytes(4, "big") + len(header).to_bytes(4, "big") + header + body
