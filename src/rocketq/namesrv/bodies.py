"""Name-server bodies: route data, cluster info, topic lists and the broker registration body.

Writers produce what Apache RocketMQ 4.9 clients parse (protocol reference §3.6, §3.7, §3.9):

* members in alphabetical order (fastjson's bean order), counts and ``perm`` as JSON numbers;
* ``brokerAddrs`` keys are always **quoted** (``{"0":"ip:port"}``), sorted by broker id. A Java name server
  writes them unquoted to clients older than 4.9.4; every client accepts the quoted form;
* ``filterServerTable`` is always present (``{}`` when empty) and ``orderTopicConf`` only when set;
* non-ASCII text is escaped (``\\uXXXX``), as fastjson's ``BrowserCompatible`` route encoding does.

Readers are lenient: unknown members are ignored and fastjson's unquoted integer keys are accepted.

RegisterBrokerBody, compressed form (``compressed=true``): one zlib stream of::

    i32 len + DataVersion JSON
    i32 topic count, then per topic: i32 len + "name readQueueNums writeQueueNums perm filterType"
    i32 len + filter server list JSON array

(``RegisterBrokerBody.encode(true)``; ``topicSysFlag`` and ``order`` are not carried and read back as 0/false.)
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from rocketq.errors import ProtocolError
from rocketq.protocol.bodies import DataVersion, TopicConfig, encode_topic_config_wrapper
from rocketq.protocol.fastjson import loads_lenient

__all__ = [
    "BrokerData",
    "QueueData",
    "RegisterBrokerBody",
    "TopicConfigSerializeWrapper",
    "TopicRouteData",
    "decode_data_version",
    "encode_cluster_info",
    "encode_data_version",
    "encode_kv_table",
    "encode_topic_list",
]

_I32 = struct.Struct(">i")
FILTER_TYPES = ("SINGLE_TAG", "MULTI_TAG")


def _dumps(obj: Any) -> bytes:
    # Plain json (not orjson): ASCII-only output with the key order we built.
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode()


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


# --------------------------------------------------------------------------------------- data version


def decode_data_version(obj: Any) -> DataVersion:
    o = _obj(obj, "DataVersion")
    return DataVersion(timestamp=_int(o.get("timestamp", 0), "timestamp"), counter=_int(o.get("counter", 0), "counter"))


def encode_data_version(version: DataVersion) -> bytes:
    return _dumps(version.to_json())


# ----------------------------------------------------------------------------------------- route data


@dataclass(slots=True)
class QueueData:
    """One broker's queues of a topic (``QueueData``)."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

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
        o = _obj(obj, "QueueData")
        return cls(
            broker_name=_str(o.get("brokerName"), "brokerName"),
            read_queue_nums=_int(o.get("readQueueNums", 0), "readQueueNums"),
            write_queue_nums=_int(o.get("writeQueueNums", 0), "writeQueueNums"),
            perm=_int(o.get("perm", 0), "perm"),
            # Spelled topicSynFlag before 4.9.0.
            topic_sys_flag=_int(o.get("topicSysFlag", o.get("topicSynFlag", 0)), "topicSysFlag"),
        )


@dataclass(slots=True)
class BrokerData:
    """A broker group: its cluster, name and addresses by broker id (0 = master)."""

    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)

    def copy(self) -> BrokerData:
        return BrokerData(self.cluster, self.broker_name, dict(self.broker_addrs))

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerAddrs": {str(bid): addr for bid, addr in sorted(self.broker_addrs.items())},
            "brokerName": self.broker_name,
            "cluster": self.cluster,
        }

    @classmethod
    def from_json(cls, obj: Any) -> BrokerData:
        o = _obj(obj, "BrokerData")
        addrs = _obj(o.get("brokerAddrs") or {}, "brokerAddrs")
        return cls(
            cluster=_str(o.get("cluster"), "cluster"),
            broker_name=_str(o.get("brokerName"), "brokerName"),
            broker_addrs={_int(k, "broker id"): _str(v, "broker address") for k, v in addrs.items()},
        )


@dataclass(slots=True)
class TopicRouteData:
    """GET_ROUTEINFO_BY_TOPIC body."""

    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)
    order_topic_conf: str | None = None

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
        return _dumps(self.to_json())

    @classmethod
    def decode(cls, body: bytes | bytearray | memoryview) -> TopicRouteData:
        o = _obj(loads_lenient(body), "TopicRouteData")
        fst = _obj(o.get("filterServerTable") or {}, "filterServerTable")
        conf = o.get("orderTopicConf")
        return cls(
            queue_datas=[QueueData.from_json(q) for q in o.get("queueDatas") or []],
            broker_datas=[BrokerData.from_json(b) for b in o.get("brokerDatas") or []],
            filter_server_table={k: [_str(a, "filter server") for a in v or []] for k, v in fst.items()},
            order_topic_conf=conf if isinstance(conf, str) else None,
        )


def encode_cluster_info(broker_addr_table: dict[str, BrokerData], cluster_addr_table: dict[str, set[str]]) -> bytes:
    """GET_BROKER_CLUSTER_INFO body (``ClusterInfo``)."""
    return _dumps(
        {
            "brokerAddrTable": {name: bd.to_json() for name, bd in sorted(broker_addr_table.items())},
            "clusterAddrTable": {c: sorted(names) for c, names in sorted(cluster_addr_table.items())},
        }
    )


def encode_topic_list(topics: list[str], broker_addr: str | None = None) -> bytes:
    """``TopicList``: ``{"brokerAddr":..?, "topicList":[...]}`` (brokerAddr omitted when None)."""
    out: dict[str, Any] = {}
    if broker_addr is not None:
        out["brokerAddr"] = broker_addr
    out["topicList"] = topics
    return _dumps(out)


def encode_kv_table(table: dict[str, str]) -> bytes:
    return _dumps({"table": dict(sorted(table.items()))})


# ------------------------------------------------------------------------------ broker registration


@dataclass(slots=True)
class TopicConfigSerializeWrapper:
    data_version: DataVersion = field(default_factory=DataVersion)
    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return encode_topic_config_wrapper(self.data_version, self.topic_config_table)

    @classmethod
    def from_json(cls, obj: Any) -> TopicConfigSerializeWrapper:
        o = _obj(obj, "TopicConfigSerializeWrapper")
        table = _obj(o.get("topicConfigTable") or {}, "topicConfigTable")
        topics: dict[str, TopicConfig] = {}
        for name, raw in table.items():
            tc = _topic_config_from_json(raw)
            topics[name] = tc
        version = decode_data_version(o["dataVersion"]) if o.get("dataVersion") is not None else DataVersion()
        return cls(data_version=version, topic_config_table=topics)


def _topic_config_from_json(raw: Any) -> TopicConfig:
    try:
        return TopicConfig.from_json(raw)
    except ProtocolError:
        raise
    except Exception as exc:  # bodies.TopicConfig.from_json lets OverflowError etc. through
        raise ProtocolError(f"bad TopicConfig {raw!r}: {exc}") from exc


@dataclass(slots=True)
class RegisterBrokerBody:
    """REGISTER_BROKER body: the broker's topic configs and its filter servers."""

    topic_config_wrapper: TopicConfigSerializeWrapper = field(default_factory=TopicConfigSerializeWrapper)
    filter_server_list: list[str] = field(default_factory=list)

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
        fs = _dumps(self.filter_server_list)
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
        return cls(wrapper, [_str(s, "filter server") for s in servers])

    @classmethod
    def decode_legacy(cls, body: bytes | bytearray | memoryview) -> RegisterBrokerBody:
        """Brokers older than V3_0_11 send a bare TopicConfigSerializeWrapper."""
        return cls(TopicConfigSerializeWrapper.from_json(loads_lenient(body)), [])


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
        TopicConfigSerializeWrapper(version, topics), [_str(s, "filter server") for s in servers_json]
    )
