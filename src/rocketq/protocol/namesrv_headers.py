"""Request/response headers of the name-server codes (Java ``common/protocol/header/namesrv/*``).

They live in ``protocol`` because both sides need them: the name server reads REGISTER_BROKER and the broker
writes it (and reads the answer), and the broker may not import ``namesrv`` (STYLE §2).
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.protocol.headers import Header, wire

_KW = {"frozen": True, "slots": True, "kw_only": True}


@dataclass(**_KW)
class KVConfigRequestHeader(Header):
    """PUT_KV_CONFIG (``value`` set), GET_KV_CONFIG and DELETE_KV_CONFIG."""

    namespace: str = wire("namespace")
    key: str = wire("key")
    value: str | None = wire("value", None)


@dataclass(**_KW)
class GetKVConfigResponseHeader(Header):
    value: str | None = wire("value", None)


@dataclass(**_KW)
class GetKVListByNamespaceRequestHeader(Header):
    namespace: str = wire("namespace")


@dataclass(**_KW)
class RegisterBrokerRequestHeader(Header):
    broker_name: str = wire("brokerName")
    broker_addr: str = wire("brokerAddr")
    cluster_name: str = wire("clusterName")
    ha_server_addr: str | None = wire("haServerAddr", None)
    broker_id: int = wire("brokerId")
    compressed: bool = wire("compressed", False)
    body_crc32: int = wire("bodyCrc32", 0, int32=True)


@dataclass(**_KW)
class RegisterBrokerResponseHeader(Header):
    ha_server_addr: str | None = wire("haServerAddr", None)
    master_addr: str | None = wire("masterAddr", None)


@dataclass(**_KW)
class UnregisterBrokerRequestHeader(Header):
    """UNREGISTER_BROKER and QUERY_DATA_VERSION."""

    broker_name: str = wire("brokerName")
    broker_addr: str = wire("brokerAddr")
    cluster_name: str = wire("clusterName")
    broker_id: int = wire("brokerId")


@dataclass(**_KW)
class QueryDataVersionResponseHeader(Header):
    changed: bool = wire("changed")


@dataclass(**_KW)
class GetRouteInfoRequestHeader(Header):
    topic: str = wire("topic")
    accept_standard_json_only: bool | None = wire("acceptStandardJsonOnly", None)


@dataclass(**_KW)
class DeleteTopicFromNamesrvRequestHeader(Header):
    topic: str = wire("topic")
    cluster_name: str | None = wire("clusterName", None)


@dataclass(**_KW)
class GetTopicsByClusterRequestHeader(Header):
    cluster: str = wire("cluster")


@dataclass(**_KW)
class BrokerNameRequestHeader(Header):
    """WIPE_WRITE_PERM_OF_BROKER and ADD_WRITE_PERM_OF_BROKER."""

    broker_name: str = wire("brokerName")


@dataclass(**_KW)
class WipeWritePermOfBrokerResponseHeader(Header):
    wipe_topic_count: int = wire("wipeTopicCount", int32=True)


@dataclass(**_KW)
class AddWritePermOfBrokerResponseHeader(Header):
    add_topic_count: int = wire("addTopicCount", int32=True)
