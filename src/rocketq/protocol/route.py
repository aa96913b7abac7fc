"""Topic routes and the broker registration body: what the name server writes and what brokers and clients read.

Java counterparts (4.9): ``common/protocol/route/{QueueData,BrokerData,TopicRouteData}``,
``common/protocol/body/{RegisterBrokerBody,TopicConfigSerializeWrapper}``, ``common/namesrv/RegisterBrokerResult``
and ``TopicConfig.encode``/``decode`` (the topic-config line). They live in ``protocol`` so that the name server,
the broker (which writes REGISTER_BROKER and reads its answer) and the clients share one definition.

Route values are frozen: the name server builds a new ``QueueData``/``BrokerData`` when its tables change, so a
route handed out can be shared without copying. ``broker_addrs`` is typed as a read-only ``Mapping``.

Route writers (``TopicRouteData.encode``) produce what Apache RocketMQ 4.9 clients parse (protocol reference
§3.6, §3.9):

* members in alphabetical order (fastjson's bean order), counts and ``perm`` as JSON numbers;
* ``brokerAddrs`` keys are always **quoted** (``{"0":"ip:port"}``), sorted by broker id. A Java name server
  writes them unquoted to clients older than 4.9.4; every client accepts the quoted form;
* ``filterServerTable`` is always present (``{}`` when empty) and ``orderTopicConf`` only when set;
* non-ASCII text is escaped (``\\uXXXX``), as fastjson's ``BrowserCompatible`` route encoding does.

The route reader (``TopicRouteData.decode``) is the client's: lenient, in fastjson's dialect (unquoted integer
keys, ``topicSynFlag`` before 4.9.0), unknown members ignored, values coerced to their type; anything it
cannot read raises ``ProtocolError``. The registration reader (``RegisterBrokerBody.decode``) is the name
server's: strict about types, since it checks what a broker sends.

RegisterBrokerBody, compressed form (``compressed=true``): one zlib stream of::

    i32 len + DataVersion JSON
    i32 topic count, then per topic: i32 len + "name readQueueNums writeQueueNums perm filterType"
    i32 len + filter server list JSON array

(``RegisterBrokerBody.encode(true)``; ``topicSysFlag`` and ``order`` are not carried and read back as 0/false.)
"""

from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any

import orjson

from rocketq.errors import ProtocolError
from rocketq.protocol.bodies import (
    PERM_READ,
    PERM_WRITE,
    DataVersion,
    MessageQueue,
    TopicConfig,
    dumps_ascii,
    encode_topic_config_wrapper,
)
from rocketq.protocol.fastjson import loads, loads_lenient

__all__ = [
    "FILTER_TYPES",
    "MASTER_ID",
    "BrokerData",
    "QueueData",
    "RegisterBrokerBody",
    "RegisterBrokerResult",
    "TopicConfigSerializeWrapper",
    "TopicRouteData",
    "decode_data_version",
    "decode_topic_config_line",
    "encode_data_version",
    "encode_topic_config_line",
    "to_subscribe_info",
    "with_default_queue_nums",
]

#: The broker id of a master (Java ``MixAll.MASTER_ID``); slaves have ids above it.
MASTER_ID = 0
FILTER_TYPES = ("SINGLE_TAG", "MULTI_TAG")

_I32 = struct.Struct(">i")
#: What the lenient readers turn into ProtocolError: a missing member, or a value of the wrong shape.
_UNREADABLE = (KeyError, TypeError, ValueError, AttributeError)


# ------------------------------------------------------------------------------- strict field readers


def _obj(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProtocolError(f"{what} is not a JSON object")
    return value


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ProtocolError(f"{what} is not an integer: {value!r}")
    try:
        return int(value)
    except ValueError:
        raise ProtocolError(f"{what} is not an integer: {value!r}") from None


def _str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ProtocolError(f"{what} is not a string: {value!r}")
    return value


# ----------------------------------------------------------------------------------------- route data


@dataclass(frozen=True, slots=True)
class QueueData:
    """One broker's queues of a topic (``QueueData``)."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    @property
    def writable(self) -> bool:
        return bool(self.perm & PERM_WRITE)

    @property
    def readable(self) -> bool:
        return bool(self.perm & PERM_READ)

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_json(cls, obj: Any) -> QueueData:
        """Lenient (see the module docstring)."""
        try:
            return cls(
                broker_name=str(obj["brokerName"]),
                read_queue_nums=int(obj.get("readQueueNums", 0)),
                write_queue_nums=int(obj.get("writeQueueNums", 0)),
                perm=int(obj.get("perm", 0)),
                # Spelled topicSynFlag before 4.9.0.
                topic_sys_flag=int(obj.get("topicSysFlag", obj.get("topicSynFlag", 0)) or 0),
            )
        except _UNREADABLE as exc:
            raise ProtocolError(f"bad QueueData {obj!r}: {exc}") from exc


@dataclass(frozen=True, slots=True)
class BrokerData:
    """A broker group: its cluster, name and addresses by broker id (``MASTER_ID`` = the master)."""

    cluster: str
    broker_name: str
    broker_addrs: Mapping[int, str] = field(default_factory=dict)

    @property
    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)

    def select_broker_addr(self) -> str | None:
        """The master's address, else any (Java ``BrokerData.selectBrokerAddr``)."""
        addr = self.broker_addrs.get(MASTER_ID)
        if addr is None and self.broker_addrs:
            return random.choice(list(self.broker_addrs.values()))
        return addr

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerAddrs": {str(bid): addr for bid, addr in sorted(self.broker_addrs.items())},
            "brokerName": self.broker_name,
            "cluster": self.cluster,
        }

    @classmethod
    def from_json(cls, obj: Any) -> BrokerData:
        """Lenient (see the module docstring)."""
        try:
            return cls(
                cluster=str(obj.get("cluster", "")),
                broker_name=str(obj["brokerName"]),
                broker_addrs={int(k): str(v) for k, v in (obj.get("brokerAddrs") or {}).items()},
            )
        except _UNREADABLE as exc:
            raise ProtocolError(f"bad BrokerData {obj!r}: {exc}") from exc


@dataclass(frozen=True, slots=True)
class TopicRouteData:
    """GET_ROUTEINFO_BY_TOPIC body: the topic's queues per broker, and those brokers' addresses."""

    queue_datas: tuple[QueueData, ...] = ()
    broker_datas: tuple[BrokerData, ...] = ()
    _: KW_ONLY
    order_topic_conf: str | None = None
    filter_server_table: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def broker(self, name: str) -> BrokerData | None:
        for bd in self.broker_datas:
            if bd.broker_name == name:
                return bd
        return None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "brokerDatas": [b.to_json() for b in self.broker_datas],
            "filterServerTable": {k: list(v) for k, v in sorted(self.filter_server_table.items())},
        }
        if self.order_topic_conf is not None:
            out["orderTopicConf"] = self.order_topic_conf
        out["queueDatas"] = [q.to_json() for q in self.queue_datas]
        return out

    def encode(self) -> bytes:
        """The name server's bytes (see the module docstring)."""
        return dumps_ascii(self.to_json())

    @classmethod
    def decode(cls, body: bytes | bytearray | memoryview) -> TopicRouteData:
        return cls.from_json(loads(body))

    @classmethod
    def from_json(cls, obj: Any) -> TopicRouteData:
        if not isinstance(obj, dict):
            raise ProtocolError("TopicRouteData is not a JSON object")
        try:
            qds = tuple(QueueData.from_json(q) for q in obj.get("queueDatas") or [])
            bds = tuple(BrokerData.from_json(b) for b in obj.get("brokerDatas") or [])
            fst = {str(k): tuple(str(a) for a in v or ()) for k, v in (obj.get("filterServerTable") or {}).items()}
        except _UNREADABLE as exc:
            raise ProtocolError(f"bad TopicRouteData: {exc}") from exc
        conf = obj.get("orderTopicConf")
        return cls(qds, bds, order_topic_conf=str(conf) if conf else None, filter_server_table=fst)


def with_default_queue_nums(route: TopicRouteData, default_topic_queue_nums: int) -> TopicRouteData:
    """The TBW102 fallback: every QueueData gets ``min(default_topic_queue_nums, readQueueNums)`` queues."""
    qds = []
    for q in route.queue_datas:
        n = min(default_topic_queue_nums, q.read_queue_nums)
        qds.append(replace(q, read_queue_nums=n, write_queue_nums=n))
    return replace(route, queue_datas=tuple(qds))


def to_subscribe_info(topic: str, route: TopicRouteData) -> set[MessageQueue]:
    """The queues a consumer may read (``topicRouteData2TopicSubscribeInfo``): ``0 … readQueueNums-1`` of every
    readable QueueData, masters not required."""
    return {
        MessageQueue(topic, q.broker_name, i) for q in route.queue_datas if q.readable for i in range(q.read_queue_nums)
    }


# ------------------------------------------------------------------------------ broker registration


@dataclass(frozen=True, slots=True)
class RegisterBrokerResult:
    """The REGISTER_BROKER answer: for a slave whose master is alive, the master's address and HA address."""

    master_addr: str | None = None
    ha_server_addr: str | None = None


def decode_data_version(obj: Any) -> DataVersion:
    o = _obj(obj, "DataVersion")
    return DataVersion(
        timestamp=_int(o.get("timestamp", 0), "timestamp"),
        counter=_int(o.get("counter", 0), "counter"),
        state_version=_int(o.get("stateVersion", 0), "stateVersion"),
    )


def encode_data_version(version: DataVersion) -> bytes:
    return dumps_ascii(version.to_json())


@dataclass(frozen=True, slots=True)
class TopicConfigSerializeWrapper:
    """A broker's topic configs and their data version."""

    data_version: DataVersion = field(default_factory=DataVersion)
    topic_config_table: Mapping[str, TopicConfig] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return encode_topic_config_wrapper(self.data_version, self.topic_config_table)

    @classmethod
    def from_json(cls, obj: Any) -> TopicConfigSerializeWrapper:
        o = _obj(obj, "TopicConfigSerializeWrapper")
        table = _obj(o.get("topicConfigTable") or {}, "topicConfigTable")
        topics = {name: _topic_config_from_json(raw) for name, raw in table.items()}
        version = decode_data_version(o["dataVersion"]) if o.get("dataVersion") is not None else DataVersion()
        return cls(data_version=version, topic_config_table=topics)


def _topic_config_from_json(raw: Any) -> TopicConfig:
    try:
        return TopicConfig.from_json(raw)
    except ProtocolError:
        raise
    except Exception as exc:  # bodies.TopicConfig.from_json lets OverflowError etc. through
        raise ProtocolError(f"bad TopicConfig {raw!r}: {exc}") from exc


@dataclass(frozen=True, slots=True)
class RegisterBrokerBody:
    """REGISTER_BROKER body: the broker's topic configs and its filter servers."""

    topic_config_wrapper: TopicConfigSerializeWrapper = field(default_factory=TopicConfigSerializeWrapper)
    filter_server_list: tuple[str, ...] = ()

    def encode(self, compress: bool = False) -> bytes:
        if not compress:
            return orjson.dumps(
                {
                    "filterServerList": self.filter_server_list,
                    "topicConfigSerializeWrapper": self.topic_config_wrapper.to_json(),
                }
            )
        parts: list[bytes] = []
        dv = encode_data_version(self.topic_config_wrapper.data_version)
        parts += (_I32.pack(len(dv)), dv)
        topics = self.topic_config_wrapper.topic_config_table
        parts.append(_I32.pack(len(topics)))
        for tc in topics.values():
            line = encode_topic_config_line(tc)
            parts += (_I32.pack(len(line)), line)
        fs = dumps_ascii(list(self.filter_server_list))
        parts += (_I32.pack(len(fs)), fs)
        return zlib.compress(b"".join(parts), 9)

    @classmethod
    def decode(cls, body: bytes | bytearray | memoryview, compressed: bool = False) -> RegisterBrokerBody:
        """Raises ``ProtocolError`` for anything that is not a registration body."""
        if not compressed:
            return cls.from_json(loads_lenient(body))
        return _decode_compressed(bytes(body))

    @classmethod
    def from_json(cls, obj: Any) -> RegisterBrokerBody:
        o = _obj(obj, "RegisterBrokerBody")
        wrapper_obj = o.get("topicConfigSerializeWrapper")
        wrapper = (
            TopicConfigSerializeWrapper.from_json(wrapper_obj)
            if wrapper_obj is not None
            else TopicConfigSerializeWrapper()
        )
        servers = o.get("filterServerList")
        if servers is None:
            servers = []
        if not isinstance(servers, list):
            raise ProtocolError("filterServerList is not an array")
        return cls(wrapper, tuple(_str(s, "filter server") for s in servers))

    @classmethod
    def decode_legacy(cls, body: bytes | bytearray | memoryview) -> RegisterBrokerBody:
        """Brokers older than V3_0_11 send a bare TopicConfigSerializeWrapper."""
        return cls(TopicConfigSerializeWrapper.from_json(loads_lenient(body)))


def encode_topic_config_line(tc: TopicConfig) -> bytes:
    """``TopicConfig.encode()``: space-separated name, read, write, perm, filter type."""
    return (
        f"{tc.topic_name} {tc.read_queue_nums} {tc.write_queue_nums} {tc.perm} {tc.topic_filter_type}".encode()
    )


def decode_topic_config_line(line: bytes) -> TopicConfig:
    try:
        parts = line.decode().split(" ")
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"topic config line is not UTF-8: {exc}") from exc
    if len(parts) != 5 or parts[4] not in FILTER_TYPES:
        raise ProtocolError(f"bad topic config line {line!r}")
    name, read, write, perm, filter_type = parts
    return TopicConfig(
        topic_name=name,
        read_queue_nums=_int(read, "readQueueNums"),
        write_queue_nums=_int(write, "writeQueueNums"),
        perm=_int(perm, "perm"),
        topic_filter_type=filter_type,
    )


# Bound what a compressed body may inflate to: a registration is small, a zlib bomb is not.
_MAX_INFLATED = 64 * 1024 * 1024


def _decode_compressed(data: bytes) -> RegisterBrokerBody:
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(data, _MAX_INFLATED)
    except zlib.error as exc:
        raise ProtocolError(f"compressed RegisterBrokerBody does not inflate: {exc}") from exc
    if inflater.unconsumed_tail:
        raise ProtocolError("compressed RegisterBrokerBody inflates beyond the size limit")
    pos = 0

    def take(n: int, what: str) -> bytes:
        nonlocal pos
        if n < 0 or pos + n > len(raw):
            raise ProtocolError(f"compressed RegisterBrokerBody: {what} of {n} bytes runs past the end")
        out = raw[pos : pos + n]
        pos += n
        return out

    def take_int(what: str) -> int:
        value: int = _I32.unpack(take(4, what))[0]
        return value

    version = decode_data_version(loads_lenient(take(take_int("data version length"), "data version")))
    count = take_int("topic count")
    if count < 0:
        raise ProtocolError(f"compressed RegisterBrokerBody: negative topic count {count}")
    topics: dict[str, TopicConfig] = {}
    for _ in range(count):
        tc = decode_topic_config_line(take(take_int("topic config length"), "topic config"))
        topics[tc.topic_name] = tc
    servers_json = loads_lenient(take(take_int("filter server list length"), "filter server list"))
    if not isinstance(servers_json, list):
        raise ProtocolError("compressed RegisterBrokerBody: filter server list is not an array")
    return RegisterBrokerBody(
        TopicConfigSerializeWrapper(version, topics), tuple(_str(s, "filter server") for s in servers_json)
    )
