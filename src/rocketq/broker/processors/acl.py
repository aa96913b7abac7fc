"""Plain ACL at the broker's gate, and the ACL admin requests 50-54 (Java ``AdminBrokerProcessor``).

``AclGate`` is a request hook of the one dispatcher both the main and the VIP port serve: every request is
checked before any processor sees it. A refusal is answered as Java answers it — code 1 (SYSTEM_ERROR) with
the ``AclException`` text and frame as remark — and a refused one-way request gets no answer at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import orjson

from rocketq.acl.errors import AclDenied
from rocketq.acl.store import AccountUpdate, AclAdminError, AclStore
from rocketq.acl.validator import peer_ip, remark
from rocketq.broker.context import BrokerContext
from rocketq.codes import RequestCode, ResponseCode
from rocketq.common.ratelog import RateLimitedLog
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.connection import Connection

log = logging.getLogger(__name__)


class AclGate:
    """The request hook: ``None`` lets the request through, a response refuses it."""

    def __init__(self, store: AclStore) -> None:
        self.store = store
        self.denied = 0
        self._lines = RateLimitedLog(log)

    def __call__(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        try:
            self.store.check(peer_ip(conn.remote_host[0]), cmd.code, cmd.ext_fields, cmd.body)
        except AclDenied as exc:
            self.denied += 1
            self._lines.warning(
                (conn.remote_host[0], cmd.code),
                "acl.denied remote=%s code=%s reason=%s", conn.remote, cmd.code, exc.message,
            )  # fmt: skip
            return cmd.response(ResponseCode.SYSTEM_ERROR, remark(exc))
        return None


def _data_version(version: tuple[int, int]) -> dict[str, int]:
    return {"counter": version[0], "timestamp": version[1]}


def _split(value: str | None) -> list[str] | None:
    # Java UtilAll.split: null stays null, otherwise String.split(",")
    return None if value is None else [p for p in value.split(",")] if value else []


_OFF_ANSWERS = {
    RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED,
    RequestCode.DELETE_ACL_CONFIG: ResponseCode.DELETE_ACL_CONFIG_FAILED,
    RequestCode.GET_BROKER_CLUSTER_ACL_INFO: ResponseCode.SYSTEM_ERROR,
    RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED,
    RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG: ResponseCode.SYSTEM_ERROR,
}
ACL_OFF = "ACL is not enabled on this broker (aclEnable=false)"


def _off(code: int) -> Callable[[Connection, RemotingCommand], RemotingCommand]:
    def answer(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.response(code, ACL_OFF)

    return answer


class AclProcessors:
    """UPDATE_AND_CREATE_ACL_CONFIG 50, DELETE_ACL_CONFIG 51, GET_BROKER_CLUSTER_ACL_INFO 52,
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG 53, GET_BROKER_CLUSTER_ACL_CONFIG 54."""

    def __init__(self, ctx: BrokerContext, store: AclStore | None) -> None:
        """``store`` None: ACL is off, and each code answers so (Java answers 50/51/53 with their failure
        code and 52/54 not at all)."""
        self._ctx = ctx
        self._store = store

    def register(self) -> None:
        d = self._ctx.gate
        if self._store is None:
            for code, failed in _OFF_ANSWERS.items():
                d.register(code, _off(failed))
            return
        d.register(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, self.update_account)
        d.register(RequestCode.DELETE_ACL_CONFIG, self.delete_account)
        d.register(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, self.versions)
        d.register(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, self.update_global_white)
        d.register(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, self.all_config)

    @property
    def store(self) -> AclStore:
        assert self._store is not None  # registered only with a store
        return self._store

    def update_account(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        ext = cmd.ext_fields
        key = ext.get("accessKey") or ""
        upd = AccountUpdate(
            access_key=key,
            secret_key=ext.get("secretKey"),
            white_remote_address=ext.get("whiteRemoteAddress"),
            admin=ext.get("admin", "").lower() == "true",  # Java Boolean.parseBoolean
            default_topic_perm=ext.get("defaultTopicPerm"),
            default_group_perm=ext.get("defaultGroupPerm"),
            topic_perms=_split(ext.get("topicPerms")),
            group_perms=_split(ext.get("groupPerms")),
        )
        try:
            self.store.update_account(upd)
        except AclAdminError as exc:
            log.warning("acl.update_refused remote=%s key=%s error=%s", conn.remote, key, exc)
            return cmd.response(ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED, str(exc))
        log.info("acl.account_updated remote=%s key=%s", conn.remote, key)
        return cmd.response(ResponseCode.SUCCESS)

    def delete_account(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        key = cmd.ext_fields.get("accessKey") or ""
        try:
            deleted = self.store.delete_account(key)
        except AclAdminError as exc:
            return cmd.response(ResponseCode.DELETE_ACL_CONFIG_FAILED, str(exc))
        if not deleted:
            return cmd.response(
                ResponseCode.DELETE_ACL_CONFIG_FAILED,
                f"The accesskey[{key}] corresponding to accessConfig has been deleted failed.",
            )
        log.info("acl.account_deleted remote=%s key=%s", conn.remote, key)
        return cmd.response(ResponseCode.SUCCESS)

    def update_global_white(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        ext = cmd.ext_fields
        addrs = ext.get("globalWhiteAddrs")
        if addrs is None:
            return cmd.response(
                ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, "the custom field <globalWhiteAddrs> is null"
            )
        try:
            self.store.update_global_white([a for a in addrs.split(",") if a], ext.get("aclFileFullPath") or None)
        except AclAdminError as exc:
            return cmd.response(ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, str(exc))
        log.info("acl.global_white_updated remote=%s addresses=%s", conn.remote, addrs)
        return cmd.response(ResponseCode.SUCCESS)

    def versions(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        cfg = self._ctx.config
        resp = cmd.response(ResponseCode.SUCCESS)
        all_versions = {path: _data_version(v) for path, v in self.store.versions().items()}
        resp.ext_fields = {
            "version": orjson.dumps(_data_version(self.store.default_version())).decode(),
            "allAclFileVersion": orjson.dumps(all_versions).decode(),
            "brokerName": cfg.brokerName,
            "brokerAddr": cfg.broker_addr,
            "clusterName": cfg.brokerClusterName,
        }
        return resp

    def all_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        white, accounts = self.store.all_config()
        body: dict[str, Any] = {
            "globalWhiteAddrs": white,
            # fastjson leaves out null fields
            "plainAccessConfigs": [{k: v for k, v in a.items() if v is not None} for a in accounts],
        }
        return cmd.response(ResponseCode.SUCCESS, body=orjson.dumps(body))
