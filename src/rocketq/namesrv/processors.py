"""Request processors of the name server: one method per request code (Java ``DefaultRequestProcessor``).

Every processor is a plain function (no await: the route tables are in memory), answered inline by the
dispatcher. Responses carry every ``extFields`` value as a string, as C++ clients require.

Decisions that differ from Java 4.9.8:

* An unknown request code is answered with REQUEST_CODE_NOT_SUPPORTED and a remark (the dispatcher's
  default). Java's name server returns null for it, so the client only sees a timeout.
* Route bodies always quote ``brokerAddrs`` keys. Java sends fastjson's unquoted keys to clients older than
  V4_9_4 unless they set ``acceptStandardJsonOnly``; every client parses the quoted form (reference §3.9).
* A malformed header or body is answered with SYSTEM_ERROR naming the problem (Java: an exception text).
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Sequence
from dataclasses import replace

from rocketq.codes import VERSION_V3_0_11, RequestCode, ResponseCode
from rocketq.errors import ConfigError, ProtocolError
from rocketq.namesrv.bodies import encode_cluster_info, encode_kv_table, encode_topic_list
from rocketq.namesrv.config import CONFIG_BLACK_LIST, NamesrvConfig, parse_properties
from rocketq.namesrv.kv_config import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfigFull, KVConfigManager
from rocketq.namesrv.route_info import RouteInfoManager
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.fastjson import loads_lenient
from rocketq.protocol.namesrv_headers import (
    AddWritePermOfBrokerResponseHeader,
    BrokerNameRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    KVConfigRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnregisterBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from rocketq.protocol.route import (
    RegisterBrokerBody,
    TopicConfigSerializeWrapper,
    decode_data_version,
    encode_data_version,
)
from rocketq.remoting.connection import Connection
from rocketq.remoting.server import RemotingDispatcher

log = logging.getLogger("rocketq.namesrv.processors")

FAQ_URL = "http://rocketmq.apache.org/docs/faq/"


def suggest_todo(url: str) -> str:
    """Java ``FAQUrl.suggestTodo``."""
    return f"\nSee {url} for further details."


Handler = Callable[[Connection, RemotingCommand], RemotingCommand]


class NamesrvProcessor:
    """Serves the name-server request codes from a ``RouteInfoManager`` and a ``KVConfigManager``."""

    def __init__(
        self,
        route_info: RouteInfoManager,
        kv_config: KVConfigManager,
        config: NamesrvConfig,
        *,
        on_config_updated: Callable[[], None] | None = None,
    ) -> None:
        self.route_info = route_info
        self.kv_config = kv_config
        self.config = config
        self.on_config_updated = on_config_updated

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.QUERY_DATA_VERSION: self.query_data_version,
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm_of_broker,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic_in_namesrv,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.get_system_topic_list,
            RequestCode.GET_UNIT_TOPIC_LIST: self.get_unit_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self.get_has_unit_sub_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self.get_has_unit_sub_ununit_topic_list,
            RequestCode.UPDATE_NAMESRV_CONFIG: self.update_config,
            RequestCode.GET_NAMESRV_CONFIG: self.get_config,
        }

    def register(self, dispatcher: RemotingDispatcher) -> None:
        for code, handler in self.handlers().items():
            dispatcher.register(code, handler)  # a malformed request: the gate's one line
        # Our decision (see the module docstring): unknown codes get REQUEST_CODE_NOT_SUPPORTED.
        dispatcher.unknown_code_reply = True

    # ----------------------------------------------------------------------------------------- KV config

    def put_kv_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        ns = req.ext_fields.get("namespace")
        key = req.ext_fields.get("key")
        if ns is None or key is None:
            return req.response(ResponseCode.SYSTEM_ERROR, "namespace or key is null")
        value = req.ext_fields.get("value")
        if value is None:
            # Java stores a null value, which GET_KV_CONFIG then reports as missing: same as no entry.
            self.kv_config.delete(ns, key)
        else:
            try:
                self.kv_config.put(ns, key, value)
            except KVConfigFull as exc:
                return req.response(ResponseCode.SYSTEM_ERROR, str(exc))
        return req.response(ResponseCode.SUCCESS)

    def get_kv_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = KVConfigRequestHeader.from_ext(req.ext_fields)
        value = self.kv_config.get(h.namespace, h.key)
        if value is not None:
            return req.response(ResponseCode.SUCCESS, ext_fields=GetKVConfigResponseHeader(value=value).to_ext())
        return req.response(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {h.namespace} Key: {h.key}")

    def delete_kv_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = KVConfigRequestHeader.from_ext(req.ext_fields)
        self.kv_config.delete(h.namespace, h.key)
        return req.response(ResponseCode.SUCCESS)

    def get_kv_list_by_namespace(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = GetKVListByNamespaceRequestHeader.from_ext(req.ext_fields)
        table = self.kv_config.list_namespace(h.namespace)
        if table is not None:
            return req.response(ResponseCode.SUCCESS, body=encode_kv_table(table))
        return req.response(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {h.namespace}")

    # ------------------------------------------------------------------------------------------ brokers

    def register_broker(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = RegisterBrokerRequestHeader.from_ext(req.ext_fields)
        body = bytes(req.body)
        if h.body_crc32 != 0 and (zlib.crc32(body) & 0x7FFFFFFF) != h.body_crc32:
            log.warning("register.crc_mismatch remote=%s broker=%s", conn.remote, h.broker_addr)
            return req.response(ResponseCode.SYSTEM_ERROR, "crc32 not match")
        filter_servers: Sequence[str] | None
        if not body:
            # Java: no body → empty topic table with DataVersion {counter 0, timestamp 0}.
            wrapper = TopicConfigSerializeWrapper()
            filter_servers = () if req.version >= VERSION_V3_0_11 else None
        else:
            try:
                if req.version >= VERSION_V3_0_11:
                    reg = RegisterBrokerBody.decode(body, h.compressed)
                    filter_servers = reg.filter_server_list
                else:
                    reg = RegisterBrokerBody.decode_legacy(body)
                    filter_servers = None
            except ProtocolError as exc:
                return req.response(ResponseCode.SYSTEM_ERROR, f"Failed to decode RegisterBrokerBody: {exc}")
            wrapper = reg.topic_config_wrapper
        result = self.route_info.register_broker(
            h.cluster_name, h.broker_addr, h.broker_name, h.broker_id, h.ha_server_addr, wrapper, filter_servers, conn
        )
        order_conf = self.kv_config.list_namespace(NAMESPACE_ORDER_TOPIC_CONFIG)
        return req.response(
            ResponseCode.SUCCESS,
            ext_fields=RegisterBrokerResponseHeader(
                ha_server_addr=result.ha_server_addr, master_addr=result.master_addr
            ).to_ext(),
            body=encode_kv_table(order_conf) if order_conf is not None else b"",
        )

    def unregister_broker(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = UnregisterBrokerRequestHeader.from_ext(req.ext_fields)
        self.route_info.unregister_broker(h.cluster_name, h.broker_addr, h.broker_name, h.broker_id)
        return req.response(ResponseCode.SUCCESS)

    def query_data_version(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = UnregisterBrokerRequestHeader.from_ext(req.ext_fields)
        version = decode_data_version(loads_lenient(req.body))
        changed = self.route_info.is_broker_topic_config_changed(h.broker_addr, version)
        if not changed:
            self.route_info.update_broker_info_update_timestamp(h.broker_addr)
        ours = self.route_info.query_broker_topic_config(h.broker_addr)
        return req.response(
            ResponseCode.SUCCESS,
            ext_fields=QueryDataVersionResponseHeader(changed=changed).to_ext(),
            body=encode_data_version(ours) if ours is not None else b"",
        )

    def wipe_write_perm_of_broker(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = BrokerNameRequestHeader.from_ext(req.ext_fields)
        count = self.route_info.wipe_write_perm_of_broker(h.broker_name)
        log.info("broker.write_perm_wiped broker=%s topics=%d remote=%s", h.broker_name, count, conn.remote)
        return req.response(
            ResponseCode.SUCCESS, ext_fields=WipeWritePermOfBrokerResponseHeader(wipe_topic_count=count).to_ext()
        )

    def add_write_perm_of_broker(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = BrokerNameRequestHeader.from_ext(req.ext_fields)
        count = self.route_info.add_write_perm_of_broker(h.broker_name)
        log.info("broker.write_perm_added broker=%s topics=%d remote=%s", h.broker_name, count, conn.remote)
        return req.response(
            ResponseCode.SUCCESS, ext_fields=AddWritePermOfBrokerResponseHeader(add_topic_count=count).to_ext()
        )

    # ------------------------------------------------------------------------------------------- routes

    def get_route_info_by_topic(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = GetRouteInfoRequestHeader.from_ext(req.ext_fields)
        route = self.route_info.pickup_topic_route_data(h.topic)
        if route is None:
            return req.response(
                ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {h.topic}{suggest_todo(FAQ_URL)}",
            )
        if self.config.order_message_enable:
            route = replace(route, order_topic_conf=self.kv_config.get(NAMESPACE_ORDER_TOPIC_CONFIG, h.topic))
        # One encoding for every client version (quoted brokerAddrs keys); see the module docstring.
        return req.response(ResponseCode.SUCCESS, body=route.encode())

    def get_broker_cluster_info(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        body = encode_cluster_info(self.route_info.broker_addr_table, self.route_info.cluster_addr_table)
        return req.response(ResponseCode.SUCCESS, body=body)

    def get_all_topic_list(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return req.response(ResponseCode.SUCCESS, body=encode_topic_list(self.route_info.get_all_topic_list()))

    def delete_topic_in_namesrv(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = DeleteTopicFromNamesrvRequestHeader.from_ext(req.ext_fields)
        self.route_info.delete_topic(h.topic, h.cluster_name)
        log.info("topic.deleted topic=%s cluster=%s remote=%s", h.topic, h.cluster_name, conn.remote)
        return req.response(ResponseCode.SUCCESS)

    def get_topics_by_cluster(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = GetTopicsByClusterRequestHeader.from_ext(req.ext_fields)
        return req.response(
            ResponseCode.SUCCESS, body=encode_topic_list(self.route_info.get_topics_by_cluster(h.cluster))
        )

    def get_system_topic_list(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        topics, broker_addr = self.route_info.get_system_topic_list()
        return req.response(ResponseCode.SUCCESS, body=encode_topic_list(topics, broker_addr))

    def get_unit_topic_list(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return req.response(ResponseCode.SUCCESS, body=encode_topic_list(self.route_info.get_unit_topics()))

    def get_has_unit_sub_topic_list(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        topics = self.route_info.get_has_unit_sub_topic_list()
        return req.response(ResponseCode.SUCCESS, body=encode_topic_list(topics))

    def get_has_unit_sub_ununit_topic_list(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        topics = self.route_info.get_has_unit_sub_ununit_topic_list()
        return req.response(ResponseCode.SUCCESS, body=encode_topic_list(topics))

    # ------------------------------------------------------------------------------------------- config

    def update_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        log.info("config.update_requested remote=%s", conn.remote)
        if req.body:
            try:
                text = bytes(req.body).decode()
            except UnicodeDecodeError as exc:
                return req.response(ResponseCode.SYSTEM_ERROR, f"UnsupportedEncodingException {exc}")
            props = parse_properties(text)
            if any(key in CONFIG_BLACK_LIST for key in props):
                return req.response(ResponseCode.NO_PERMISSION, "Can not update config in black list.")
            try:
                applied = self.config.update_from_properties(props)
            except ConfigError as exc:
                return req.response(ResponseCode.SYSTEM_ERROR, str(exc))
            log.info("config.updated keys=%s", ",".join(applied))
            if self.on_config_updated is not None:
                self.on_config_updated()
        return req.response(ResponseCode.SUCCESS)

    def get_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return req.response(ResponseCode.SUCCESS, body=self.config.to_properties().encode())
