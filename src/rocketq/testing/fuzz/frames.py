"""Frames for the wire fuzzer: mostly plausible requests with hostile values, plus byte-level garbage.

A ``FrameFactory`` composes each frame from the hypothesis-drawn ``Pools`` with a seeded ``random.Random``:

* a *request* (most frames): a request code (every code of ``protocol.requests.REQUESTS``, the name server's
  codes, the rest of ``RequestCode`` and unknown codes), its header filled with plausible values for each
  field of its header class, then a few fields given hostile values (integers past int32/int64, ``"1e300"``,
  ``""``, non-ASCII, huge strings, JSON of the wrong type) or dropped; a body that is valid for the code,
  a mutated valid body (JSON of the wrong shape, a truncated batch) or random bytes; JSON or ROCKETMQ binary
  serialisation; sometimes the oneway or response flag, or a header member of the wrong type;
* a *mutated* request: the bytes of one with bits flipped, bytes inserted/deleted or a length word replaced;
* *garbage*: random bytes, a bad total or header length, a header longer than its frame, a truncated frame.

What the server must do with a frame is worked out by decoding it with the server's own ``FrameDecoder``: an
error means the server must close the connection; a complete request that is neither oneway nor a response
must be answered (unless its code may legitimately hold the answer, like a long-polling pull).

Families: each hostile choice is labelled ``CODE_NAME:field`` (``CODE_NAME:body`` for a body; a V2 send's
single-letter keys by their V1 names); a factory given ``excluded`` family patterns (``fnmatch``, e.g.
``SEND_*:bornTimestamp``) never makes them (the bounded in-suite run uses this for defects another change is
fixing, see tests/integration/test_wire_fuzz.py).
"""

from __future__ import annotations

import fnmatch
import random
import struct
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from rocketq.broker.managers.subscription_manager import SubscriptionGroupConfig
from rocketq.broker.messaging.runtime_config import LIVE_KEYS
from rocketq.codes import RequestCode
from rocketq.errors import ProtocolError
from rocketq.protocol.bodies import (
    ConsumerData,
    DataVersion,
    HeartbeatData,
    LockBatchBody,
    MessageQueue,
    SubscriptionData,
    TopicConfig,
)
from rocketq.protocol.command import FLAG_ONEWAY, FLAG_RESPONSE
from rocketq.protocol.frame import FrameDecoder
from rocketq.protocol.headers import _V1_TO_V2, _V2_KEYS, Header
from rocketq.protocol.message import BatchItem, encode_batch, encode_properties
from rocketq.protocol.namesrv_headers import (
    BrokerNameRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    KVConfigRequestHeader,
    RegisterBrokerRequestHeader,
    UnregisterBrokerRequestHeader,
)
from rocketq.protocol.requests import REQUESTS
from rocketq.protocol.route import RegisterBrokerBody, TopicConfigSerializeWrapper
from rocketq.testing.fuzz.pools import BOUNDARY_INTS, Pools, dumps_any

BROKER, NAMESRV = "broker", "namesrv"

NAMESRV_HEADERS: dict[int, type[Header] | None] = {
    RequestCode.PUT_KV_CONFIG: KVConfigRequestHeader,
    RequestCode.GET_KV_CONFIG: KVConfigRequestHeader,
    RequestCode.DELETE_KV_CONFIG: KVConfigRequestHeader,
    RequestCode.GET_KVLIST_BY_NAMESPACE: GetKVListByNamespaceRequestHeader,
    RequestCode.QUERY_DATA_VERSION: UnregisterBrokerRequestHeader,
    RequestCode.REGISTER_BROKER: RegisterBrokerRequestHeader,
    RequestCode.UNREGISTER_BROKER: UnregisterBrokerRequestHeader,
    RequestCode.GET_ROUTEINFO_BY_TOPIC: GetRouteInfoRequestHeader,
    RequestCode.GET_BROKER_CLUSTER_INFO: None,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER: BrokerNameRequestHeader,
    RequestCode.ADD_WRITE_PERM_OF_BROKER: BrokerNameRequestHeader,
    RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: None,
    RequestCode.DELETE_TOPIC_IN_NAMESRV: DeleteTopicFromNamesrvRequestHeader,
    RequestCode.GET_TOPICS_BY_CLUSTER: GetTopicsByClusterRequestHeader,
    RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: None,
    RequestCode.GET_UNIT_TOPIC_LIST: None,
    RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: None,
    RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: None,
    RequestCode.UPDATE_NAMESRV_CONFIG: None,
    RequestCode.GET_NAMESRV_CONFIG: None,
}

#: codes whose answer may legitimately be held (a long-polling pull) or never come (Java's END_TRANSACTION
#: answers nothing; a call forwarded to a client waits for that client)
MAY_HOLD = frozenset({
    RequestCode.PULL_MESSAGE, RequestCode.END_TRANSACTION, RequestCode.CONSUME_MESSAGE_DIRECTLY,
    RequestCode.GET_CONSUMER_RUNNING_INFO,
})  # fmt: skip

#: keys a request without a header class may still read (admin requests read some by hand)
_LOOSE_KEYS = ("topic", "consumerGroup", "producerGroup", "group", "groupName", "clientId", "brokerName",
               "queueId", "offset", "timestamp", "key", "cluster")  # fmt: skip
_V1_SENDS = (RequestCode.SEND_MESSAGE, RequestCode.SEND_REPLY_MESSAGE)
_V2_SENDS = (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2)
_NAMESRV_CONFIG_KEYS = ("orderMessageEnable", "serverChannelMaxIdleTimeSeconds", "scanNotActiveBrokerInterval",
                        "brokerChannelExpiredTime", "listenPort", "kvConfigPath", "nonsense")  # fmt: skip
_CORE_NAMES = tuple(f"FzTopic{i}" for i in range(8)) + tuple(f"FzGroup{i}" for i in range(4))
_LANGUAGES = ("JAVA", "CPP", "PYTHON", "GO", "OTHER")


@dataclass(slots=True)
class Frame:
    """One frame's bytes and what the server must do with them."""

    data: bytes
    target: str
    kind: str  # "request", "mutated" or "garbage"
    code: int | None  # None: not a decodable request
    opaque: int | None
    families: tuple[str, ...]  # the hostile choices it carries (none: only plausible values)
    answers: int  # the answers the server owes (a mutated frame may hold more than one request)
    closes: bool  # the server must close the connection once it has read this frame
    partial: bool  # ends in an incomplete frame: the server waits for the rest

    @property
    def ends_session(self) -> bool:
        """Nothing can follow this frame on its connection."""
        return self.closes or self.partial


def classify(data: bytes) -> tuple[int | None, int | None, int, bool, bool]:
    """(code, opaque, answers due, server closes, incomplete) as the server's own decoder sees ``data``."""
    decoder = FrameDecoder()
    try:
        cmds = decoder.feed(data)
    except ProtocolError:
        return None, None, 0, True, False
    closes = decoder.error is not None
    answers = sum(1 for c in cmds if not c.flag & (FLAG_ONEWAY | FLAG_RESPONSE) and c.code not in MAY_HOLD)
    code, opaque = (cmds[0].code, cmds[0].opaque) if cmds else (None, None)
    return code, opaque, answers, closes, not closes and decoder.buffered > 0


class FrameFactory:
    """Builds frames from ``pools`` with ``rng``; ``excluded``: families never to make."""

    def __init__(self, rng: random.Random, pools: Pools, excluded: Collection[str] = ()) -> None:
        self.rng = rng
        self.pools = pools
        self.excluded = frozenset(excluded)
        self._opaque = 0
        self._broker_codes = sorted(REQUESTS)
        self._namesrv_codes = sorted(NAMESRV_HEADERS)
        self._all_codes = sorted(int(c) for c in RequestCode)
        self._body_makers: dict[int, Callable[[], Any]] = {
            RequestCode.HEART_BEAT: self._heartbeat,
            RequestCode.LOCK_BATCH_MQ: self._lock_batch,
            RequestCode.UNLOCK_BATCH_MQ: self._lock_batch,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self._group_config,
            RequestCode.REGISTER_BROKER: self._register_body,
            RequestCode.QUERY_DATA_VERSION: lambda: DataVersion(int(time.time() * 1000), 1).to_json(),
        }

    # ------------------------------------------------------------------------------------------ frames

    def frame(self, target: str) -> Frame:
        r = self.rng.random()
        if r < 0.8:
            return self.request(target)
        if r < 0.92:
            return self._finish(self.mutate(self.request(target).data), target, "mutated", ())
        return self._finish(self.garbage(), target, "garbage", ())

    def request(self, target: str) -> Frame:
        rng = self.rng
        code = self._code(target)
        name = _code_name(code)
        families: list[str] = []
        ext, kinds = self._plausible_ext(code, target)
        # hostile values for a few fields (or none: a plausible request goes deepest)
        if ext and rng.random() < 0.75:
            for _ in range(rng.choice((1, 1, 1, 2, 3))):
                if not ext:
                    break
                key = rng.choice(list(ext))
                fam = f"{name}:{_V2_KEYS.get(key, key) if code in _V2_SENDS else key}"
                if self.is_excluded(fam):
                    continue
                families.append(fam)
                if rng.random() < 0.1:
                    del ext[key]
                else:
                    ext[key] = self._hostile_value(kinds.get(key, str))
        if rng.random() < 0.05:
            ext[rng.choice(self.pools.names + list(_LOOSE_KEYS))] = self._hostile_value()
        body, body_family = self._body(code, target)
        if body_family is not None:
            families.append(body_family)
        flag = rng.choice((0,) * 12 + (FLAG_ONEWAY, FLAG_ONEWAY, FLAG_RESPONSE, FLAG_ONEWAY | FLAG_RESPONSE))
        self._opaque = self._opaque + 1 if self._opaque < 2**31 - 1 else 1
        if rng.random() < 0.5:
            header = self._json_header(code, self._opaque, flag, ext)
            data = _frame(0, header, body)
        else:
            data = _frame(1, self._binary_header(code, self._opaque, flag, ext), body)
        return self._finish(data, target, "request", tuple(families))

    def is_excluded(self, family: str) -> bool:
        """``family`` (``CODE_NAME:field``) matches an excluded pattern (``fnmatch``: ``SEND_*:*``)."""
        return any(fnmatch.fnmatchcase(family, pattern) for pattern in self.excluded)

    def _finish(self, data: bytes, target: str, kind: str, families: tuple[str, ...]) -> Frame:
        code, opaque, answers, closes, partial = classify(data)
        return Frame(data, target, kind, code, opaque, families, answers, closes, partial)

    def _code(self, target: str) -> int:
        rng = self.rng
        r = rng.random()
        if r < 0.85:
            codes = self._broker_codes if target == BROKER else self._namesrv_codes
            code = rng.choice(codes)
        elif r < 0.95:
            code = rng.choice(self._all_codes)
        else:
            code = rng.choice((0, -1, 9999, 32767, -32768, rng.randrange(-32768, 32768)))
        if self.is_excluded(f"{_code_name(code)}:*"):
            return int(RequestCode.GET_BROKER_RUNTIME_INFO if target == BROKER else RequestCode.GET_NAMESRV_CONFIG)
        return code

    # ------------------------------------------------------------------------------------------ headers

    def _plausible_ext(self, code: int, target: str) -> tuple[dict[str, Any], dict[str, type]]:
        """A header with a plausible value for each field of the code's header class, and each key's type."""
        header = (REQUESTS[code].header if code in REQUESTS else None) if target == BROKER else None
        if target == NAMESRV or header is None:
            header = NAMESRV_HEADERS.get(code) or header
        if header is None:
            keys = self.rng.sample(_LOOSE_KEYS, self.rng.randint(0, 3))
            return {k: self._plausible(k, str) for k in keys}, {}
        ext: dict[str, Any] = {}
        kinds: dict[str, type] = {}
        for spec in header._field_specs():
            if not spec.required and self.rng.random() < 0.3:
                continue
            ext[spec.key] = self._plausible(spec.key, spec.kind)
            kinds[spec.key] = spec.kind
        if code in _V2_SENDS:  # SEND_MESSAGE_V2's single letters
            ext = {_V1_TO_V2.get(k, k): v for k, v in ext.items()}
            kinds = {_V1_TO_V2.get(k, k): v for k, v in kinds.items()}
        return ext, kinds

    def _name(self) -> str:
        """Mostly one of a few names, so requests meet the topics and groups earlier frames created."""
        return self.rng.choice(_CORE_NAMES if self.rng.random() < 0.7 else self.pools.names)

    def _plausible(self, key: str, kind: type) -> str:
        rng = self.rng
        k = key.lower()
        if kind is bool:
            return rng.choice(("true", "false"))
        if k == "properties":
            return encode_properties({"UNIQ_KEY": f"{rng.getrandbits(64):032X}", "TAGS": self._name()})
        if k == "subscription":
            return rng.choice(("*", "TagA || TagB", "a > 1"))
        if k == "expressiontype":
            return rng.choice(("TAG", "SQL92"))
        if k == "statsname":
            return rng.choice(("TOPIC_PUT_NUMS", "GROUP_GET_NUMS", "BROKER_PUT_NUMS", "SNDBCK_PUT_NUMS"))
        if k == "topicfiltertype":
            return rng.choice(("SINGLE_TAG", "MULTI_TAG"))
        if k in ("defaulttopic",):
            return "TBW102"
        if ("topic" in k and kind is str) or "group" in k or k in ("key", "namespace", "value", "cluster"):
            return self._name()
        if k in ("msgid", "offsetmsgid", "originmsgid", "transactionid"):
            return f"{rng.getrandbits(128):032X}"
        if k in ("clientid", "brokeraddr", "haserveraddr", "bornhost"):
            return f"127.0.0.{rng.randint(1, 3)}:{rng.randint(1, 65535)}"
        if k in ("brokername", "clustername", "bname"):
            return f"fz-{k}-{rng.randint(0, 2)}"
        if kind is not int:
            return self._name()
        if k == "bodycrc32":
            return "0"  # 0: not checked (Java's name server); anything else must match the body
        if "timestamp" in k:
            return str(int(time.time() * 1000) - rng.randint(-10_000, 3_600_000))
        if "queueid" in k or "queuenums" in k:
            return str(rng.randint(0, 8))
        if "offset" in k:
            return str(rng.randint(0, 1000))
        if k == "suspendtimeoutmillis":
            return str(rng.randint(0, 500))
        if k == "perm":
            return rng.choice(("6", "4", "2"))
        return str(rng.randint(0, 16))

    def _hostile_value(self, kind: type = str) -> Any:
        """A value for a field of type ``kind``: mostly integers for an integer field, text for the others."""
        rng, pools = self.rng, self.pools
        r = rng.random()
        if kind is int:
            r = r * 0.8 - 0.2 if r < 0.75 else r  # 3/4 of the time an integer (a boundary one half of those)
        if r < 0.2:
            return str(rng.choice(BOUNDARY_INTS))
        if r < 0.4:
            return str(rng.choice(pools.ints))
        if r < 0.85:
            return rng.choice(pools.texts)
        if r < 0.9:
            return rng.choice("xé😀") * rng.choice((1000, 70_000, 300_000))
        return rng.choice(pools.json_values)  # not text: the JSON header carries it as is

    def _json_header(self, code: int, opaque: int, flag: int, ext: dict[str, Any]) -> bytes:
        rng = self.rng
        obj: dict[str, Any] = {
            "code": code, "extFields": ext, "flag": flag, "language": rng.choice(_LANGUAGES), "opaque": opaque,
            "serializeTypeCurrentRPC": "JSON", "version": 395,
        }  # fmt: skip
        if rng.random() < 0.05:  # a member of the wrong type, or out of int32
            obj[rng.choice(("code", "flag", "opaque", "version", "language", "remark", "extFields"))] = (
                rng.choice(self.pools.json_values)
            )
        elif rng.random() < 0.05:
            obj["remark"] = rng.choice(self.pools.texts)
        return dumps_any(obj)

    def _binary_header(self, code: int, opaque: int, flag: int, ext: dict[str, Any]) -> bytes:
        rng = self.rng
        out = bytearray(struct.pack(">hBhii", _i16(code), rng.randrange(13), 395, opaque, flag))
        remark = rng.choice(self.pools.texts).encode("utf-8", "surrogatepass") if rng.random() < 0.05 else b""
        out += struct.pack(">i", len(remark)) + remark
        fields = bytearray()
        for key, value in ext.items():
            kb = key.encode("utf-8", "surrogatepass")[:32767]
            vb = (value if isinstance(value, str) else dumps_any(value).decode()).encode("utf-8", "surrogatepass")
            fields += struct.pack(">h", len(kb)) + kb + struct.pack(">i", len(vb)) + vb
        out += struct.pack(">i", len(fields)) + fields
        return bytes(out)

    # ------------------------------------------------------------------------------------------ bodies

    def _body(self, code: int, target: str) -> tuple[bytes, str | None]:
        rng = self.rng
        fam = f"{_code_name(code)}:body"
        hostile = not self.is_excluded(fam)
        r = rng.random()
        if hostile and r < 0.1:
            return rng.randbytes(rng.choice((1, 8, 64, 1024))), fam
        if code in (RequestCode.UPDATE_BROKER_CONFIG, RequestCode.UPDATE_NAMESRV_CONFIG):
            if not hostile:
                return b"", None
            keys = sorted(LIVE_KEYS) if code == RequestCode.UPDATE_BROKER_CONFIG else list(_NAMESRV_CONFIG_KEYS)
            lines = [f"{rng.choice(keys)}={self._hostile_value()}" for _ in range(rng.randint(1, 3))]
            return "\n".join(lines).encode("utf-8", "surrogatepass"), fam
        if code == RequestCode.SEND_BATCH_MESSAGE:
            items = [BatchItem(0, rng.randbytes(rng.randint(0, 64)), {"UNIQ_KEY": f"{rng.getrandbits(64):X}"})
                     for _ in range(rng.randint(1, 4))]  # fmt: skip
            batch = encode_batch(items)
            if hostile and r < 0.5:
                return self.mutate_bytes(batch), fam
            return batch, None
        if code in (*_V1_SENDS, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_REPLY_MESSAGE_V2):
            return rng.randbytes(rng.randint(0, 256)), None
        maker = self._body_makers.get(code)
        if maker is None:
            return b"", None
        doc = maker()
        if isinstance(doc, bytes):
            return doc, None
        if not hostile or r < 0.3:
            return dumps_any(doc), None
        if r < 0.8:
            return dumps_any(self._mutate_json(doc)), fam
        text = dumps_any(doc)
        return text[: rng.randrange(len(text))] if r < 0.9 else self.mutate_bytes(text), fam

    def _mutate_json(self, doc: Any) -> Any:
        """``doc`` with one value somewhere inside replaced by a pool value (often of the wrong type)."""
        rng = self.rng
        if isinstance(doc, dict) and doc and rng.random() < 0.8:
            key = rng.choice(list(doc))
            return {**doc, key: self._mutate_json(doc[key])}
        if isinstance(doc, list) and doc and rng.random() < 0.8:
            i = rng.randrange(len(doc))
            return [*doc[:i], self._mutate_json(doc[i]), *doc[i + 1 :]]
        return rng.choice(self.pools.json_values)

    def _heartbeat(self) -> dict[str, Any]:
        rng = self.rng
        consumer = ConsumerData(self._name(), subscriptions=[SubscriptionData.of(self._name())])
        hb = HeartbeatData(f"127.0.0.1@fz{rng.randint(0, 9)}", [self._name()], [consumer])
        return {"clientID": hb.client_id, "consumerDataSet": [c.to_json() for c in hb.consumers],
                "producerDataSet": [{"groupName": g} for g in hb.producer_groups]}  # fmt: skip

    def _lock_batch(self) -> dict[str, Any]:
        rng = self.rng
        mqs = [MessageQueue(self._name(), "fz-broker", rng.randint(0, 8)) for _ in range(rng.randint(1, 3))]
        body = LockBatchBody(self._name(), f"127.0.0.1@fz{rng.randint(0, 9)}", mqs)
        return {"clientId": body.client_id, "consumerGroup": body.consumer_group,
                "mqSet": [m.to_json() for m in body.mq_set], "onlyThisBroker": False}  # fmt: skip

    def _group_config(self) -> dict[str, Any]:
        return SubscriptionGroupConfig(self._name()).to_json()

    def _register_body(self) -> bytes:
        rng = self.rng
        topics = {t: TopicConfig(t, rng.randint(1, 8), rng.randint(1, 8)) for t in {self._name(), self._name()}}
        wrapper = TopicConfigSerializeWrapper(DataVersion(int(time.time() * 1000), rng.randint(0, 9)), topics)
        return RegisterBrokerBody(wrapper).encode(False)

    # ------------------------------------------------------------------------------------------ bytes

    def mutate(self, data: bytes) -> bytes:
        return self.mutate_bytes(data, lengths=True)

    def mutate_bytes(self, data: bytes, *, lengths: bool = False) -> bytes:
        rng = self.rng
        buf = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            if not buf:
                break
            pos = rng.randrange(len(buf))
            op = rng.randrange(6 if lengths else 5)
            if op == 0:
                buf[pos] ^= 1 << rng.randrange(8)
            elif op == 1:
                buf[pos] = rng.randrange(256)
            elif op == 2:
                buf[pos:pos] = rng.randbytes(rng.randint(1, 8))
            elif op == 3:
                del buf[pos : pos + rng.randint(1, 8)]
            elif op == 4:
                del buf[pos:]
            else:  # a length word: the total, or the header length with its serialisation byte
                at = rng.choice((0, 4))
                buf[at : at + 4] = rng.randbytes(4)
        return bytes(buf)

    def garbage(self) -> bytes:
        rng = self.rng
        kind = rng.randrange(7)
        if kind == 0:
            return rng.randbytes(rng.randint(1, 64))
        if kind == 1:  # a negative, tiny or too large total length
            return struct.pack(">i", rng.choice((-1, -(2**31), 0, 1, 3, 2**31 - 1, 16 * 2**20 + 1))) + b"\0" * 8
        if kind == 2:  # a header longer than its frame
            return struct.pack(">iI", 12, rng.randint(9, 0xFFFFFF)) + b"{}" + rng.randbytes(6)
        if kind == 3:  # an unknown serialisation type
            header = b'{"code":105,"flag":0,"opaque":1}'
            return _frame(rng.randint(2, 255), header, b"")
        if kind == 4:  # a frame cut short (the server waits for the rest until the connection goes)
            whole = self.request(rng.choice((BROKER, NAMESRV))).data
            return whole[: rng.randrange(1, len(whole))]
        if kind == 5:  # a header that is not JSON / a binary header with lengths past its end
            return _frame(rng.choice((0, 1)), rng.randbytes(rng.randint(0, 40)), b"")
        header = b'{"code":105,"extFields":' + rng.choice((b"[]", b"1", b'"x"', b"{\"topic\":{}}")) + b"}"
        return _frame(0, header, b"")


def _frame(serialize_type: int, header: bytes, body: bytes) -> bytes:
    return struct.pack(">iI", 4 + len(header) + len(body), (serialize_type << 24) | len(header)) + header + body


def _i16(code: int) -> int:
    code &= 0xFFFF
    return code - 0x10000 if code >= 0x8000 else code


def _code_name(code: int) -> str:
    try:
        return RequestCode(code).name
    except ValueError:
        return f"CODE_{code}"
