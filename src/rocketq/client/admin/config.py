"""Broker and name-server configuration, the name server's KV store, write permission and clean-ups
(mqadmin get/updateBrokerConfig, get/updateNamesrvConfig, update/deleteKvConfig, updateOrderConf,
wipe/addWritePerm, cleanExpiredCQ, cleanUnusedTopic)."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from rocketq.client.admin._base import AdminBase
from rocketq.codes import RequestCode, ResponseCode
from rocketq.common.properties import parse_properties
from rocketq.errors import BrokerError, ClientError, error_for_code
from rocketq.protocol.fastjson import loads
from rocketq.protocol.route import MASTER_ID

log = logging.getLogger("rocketq.client.admin")

#: the KV namespace of ordered topics' broker lists (Java NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG)
ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


def properties_text(props: Mapping[str, str]) -> bytes:
    """The body of UPDATE_BROKER_CONFIG / UPDATE_NAMESRV_CONFIG: one ``key=value`` line per entry."""
    for k, v in props.items():
        if not k or any(c in k for c in "=:\n\r") or any(c in str(v) for c in "\n\r"):
            raise ValueError(f"not a config entry: {k!r}={v!r}")
    return "".join(f"{k}={v}\n" for k, v in props.items()).encode()


class ConfigAdmin(AdminBase):
    async def broker_config(self, broker_addr: str) -> dict[str, str]:
        """GET_BROKER_CONFIG: the broker's settings, as its properties text says them."""
        resp = await self._api.call(broker_addr, RequestCode.GET_BROKER_CONFIG, None, self.timeout)
        return parse_properties(bytes(resp.body).decode()) if resp.body else {}

    async def update_broker_config(
        self, props: Mapping[str, str], *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[str]:
        """UPDATE_BROKER_CONFIG on one broker or every master of ``cluster`` (the broker decides which keys may
        change at run time and refuses the others). Returns the addresses changed."""
        if not props:
            raise ValueError("no config entry to update")
        body = properties_text(props)
        addrs = await self._targets(cluster, broker_addr)
        for addr in addrs:
            await self._api.call(addr, RequestCode.UPDATE_BROKER_CONFIG, None, self.timeout, body)
        return addrs

    def _namesrvs(self, namesrv: list[str] | None) -> list[str]:
        addrs = namesrv or self.config.namesrv_list()
        if not addrs:
            raise ClientError("no name server address")
        return list(addrs)

    async def _namesrv_call(self, addr: str, code: int, ext: dict[str, str] | None, body: bytes = b"") -> bytes:
        resp = await self._api.invoke(addr, self._api.request(code, ext, body), self.timeout)
        if resp.code != ResponseCode.SUCCESS:
            raise error_for_code(resp.code, f"{addr}: {resp.remark or ''}".strip())
        return bytes(resp.body or b"")

    async def namesrv_config(self, namesrv: list[str] | None = None) -> dict[str, dict[str, str]]:
        """GET_NAMESRV_CONFIG of each name server (default: the client's): address → its settings."""
        out: dict[str, dict[str, str]] = {}
        for addr in self._namesrvs(namesrv):
            body = await self._namesrv_call(addr, RequestCode.GET_NAMESRV_CONFIG, None)
            out[addr] = parse_properties(body.decode())
        return out

    async def update_namesrv_config(self, props: Mapping[str, str], namesrv: list[str] | None = None) -> list[str]:
        """UPDATE_NAMESRV_CONFIG on each name server (default: the client's)."""
        if not props:
            raise ValueError("no config entry to update")
        body = properties_text(props)
        addrs = self._namesrvs(namesrv)
        for addr in addrs:
            await self._namesrv_call(addr, RequestCode.UPDATE_NAMESRV_CONFIG, None, body)
        return addrs

    async def put_kv_config(self, namespace: str, key: str, value: str) -> list[str]:
        """PUT_KV_CONFIG on every name server (Java's createAndUpdateKvConfig)."""
        addrs = self._namesrvs(None)
        for addr in addrs:
            await self._namesrv_call(addr, RequestCode.PUT_KV_CONFIG,
                                     {"namespace": namespace, "key": key, "value": value})  # fmt: skip
        return addrs

    async def delete_kv_config(self, namespace: str, key: str) -> list[str]:
        """DELETE_KV_CONFIG on every name server."""
        addrs = self._namesrvs(None)
        for addr in addrs:
            await self._namesrv_call(addr, RequestCode.DELETE_KV_CONFIG, {"namespace": namespace, "key": key})
        return addrs

    async def get_kv_config(self, namespace: str, key: str) -> str | None:
        """GET_KV_CONFIG from the first name server that has the entry; None: none has it."""
        for addr in self._namesrvs(None):
            cmd = self._api.request(RequestCode.GET_KV_CONFIG, {"namespace": namespace, "key": key})
            resp = await self._api.invoke(addr, cmd, self.timeout)
            if resp.code == ResponseCode.SUCCESS:
                value = resp.ext_fields.get("value")
                return None if value is None else str(value)
            if resp.code != ResponseCode.QUERY_NOT_FOUND:
                raise error_for_code(resp.code, f"{addr}: {resp.remark or ''}".strip())
        return None

    async def kv_list(self, namespace: str) -> dict[str, str]:
        """GET_KVLIST_BY_NAMESPACE from the first name server that has the namespace; {} when none has it."""
        for addr in self._namesrvs(None):
            cmd = self._api.request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": namespace})
            resp = await self._api.invoke(addr, cmd, self.timeout)
            if resp.code == ResponseCode.SUCCESS:
                table = (loads(resp.body) if resp.body else {}).get("table") or {}
                return {str(k): str(v) for k, v in sorted(table.items())}
            if resp.code != ResponseCode.QUERY_NOT_FOUND:
                raise error_for_code(resp.code, f"{addr}: {resp.remark or ''}".strip())
        return {}

    async def update_order_conf(self, topic: str, order_conf: str | None) -> list[str]:
        """mqadmin updateOrderConf: ``brokerName:queueNums;...`` of an ordered topic in the KV namespace
        ORDER_TOPIC_CONFIG (None deletes it)."""
        if order_conf is None:
            return await self.delete_kv_config(ORDER_TOPIC_CONFIG, topic)
        return await self.put_kv_config(ORDER_TOPIC_CONFIG, topic, order_conf)

    async def _write_perm(
        self, code: int, count_key: str, broker_name: str, namesrv: list[str] | None
    ) -> dict[str, int]:
        out: dict[str, int] = {}
        for addr in self._namesrvs(namesrv):
            resp = await self._api.invoke(addr, self._api.request(code, {"brokerName": broker_name}), self.timeout)
            if resp.code != ResponseCode.SUCCESS:
                raise error_for_code(resp.code, f"{addr}: {resp.remark or ''}".strip())
            out[addr] = int(resp.ext_fields.get(count_key) or 0)
        return out

    async def wipe_write_perm(self, broker_name: str, namesrv: list[str] | None = None) -> dict[str, int]:
        """WIPE_WRITE_PERM_OF_BROKER on each name server: name server → how many topics lost write permission."""
        return await self._write_perm(RequestCode.WIPE_WRITE_PERM_OF_BROKER, "wipeTopicCount", broker_name, namesrv)

    async def add_write_perm(self, broker_name: str, namesrv: list[str] | None = None) -> dict[str, int]:
        """ADD_WRITE_PERM_OF_BROKER on each name server: name server → how many topics got write permission."""
        return await self._write_perm(RequestCode.ADD_WRITE_PERM_OF_BROKER, "addTopicCount", broker_name, namesrv)

    async def _clean(self, code: int, cluster: str | None, broker_addr: str | None) -> dict[str, bool]:
        if broker_addr:
            addrs = [broker_addr]
        elif cluster:
            addrs = await self.master_addrs(cluster)
        else:  # Java: every master of every cluster
            addrs = [b.addr for b in await self.brokers() if b.broker_id == MASTER_ID]
        out: dict[str, bool] = {}
        for addr in addrs:
            try:
                await self._api.call(addr, code, None, self.timeout)
                out[addr] = True
            except BrokerError as exc:
                log.info("admin.clean code=%s broker=%s refused: %s", code, addr, exc)
                out[addr] = False
        return out

    async def clean_expired_consume_queues(
        self, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> dict[str, bool]:
        """CLEAN_EXPIRED_CONSUMEQUEUE on one broker, the masters of ``cluster``, or every master: address → done."""
        return await self._clean(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, cluster, broker_addr)

    async def clean_unused_topics(
        self, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> dict[str, bool]:
        """CLEAN_UNUSED_TOPIC on one broker, the masters of ``cluster``, or every master: address → done."""
        return await self._clean(RequestCode.CLEAN_UNUSED_TOPIC, cluster, broker_addr)

    async def delete_expired_commit_log(
        self, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> dict[str, bool]:
        """DELETE_EXPIRED_COMMITLOG on one broker, the masters of ``cluster``, or every master: address → done."""
        return await self._clean(RequestCode.DELETE_EXPIRED_COMMITLOG, cluster, broker_addr)
