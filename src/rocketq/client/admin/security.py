"""ACL accounts (codes 50–54) and replication (Java 5's haStatus, getSyncStateSet, electMaster)."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from rocketq.client.acl import AclAccount, AclConfig, AclVersionInfo
from rocketq.client.admin._base import AdminBase
from rocketq.client.ha import ElectResult, ReplicaGroup, controller_error, parse_sync_state_data
from rocketq.codes import ControllerRequestCode, ControllerResponseCode, RequestCode, ResponseCode
from rocketq.errors import ClientError, ProtocolError
from rocketq.protocol.route import MASTER_ID

log = logging.getLogger("rocketq.client.admin")


class SecurityAdmin(AdminBase):
    async def broker_ha_status(self, broker_addr: str) -> dict[str, Any]:
        """GET_BROKER_HA_STATUS (907): the broker's ``HARuntimeInfo`` (role, connections, offsets)."""
        obj = await self._api.broker_json(broker_addr, RequestCode.GET_BROKER_HA_STATUS, None, self.timeout)
        if not isinstance(obj, dict):
            raise ProtocolError(f"{broker_addr}: GET_BROKER_HA_STATUS answered no HARuntimeInfo")
        return obj

    async def _controller(self, controller: str, code: int, ext: dict[str, str], body: bytes = b"") -> Any:
        resp = await self._api.invoke(controller, self._api.request(code, ext, body), self.timeout)
        if resp.code != ResponseCode.SUCCESS:
            raise controller_error(resp.code, resp.remark, controller)
        return resp

    async def controller_sync_state(self, controller: str, broker_names: list[str]) -> dict[str, ReplicaGroup]:
        """CONTROLLER_GET_SYNC_STATE_DATA: each named group's master, epochs and in-sync set (unknown ones
        are left out)."""
        resp = await self._controller(controller, ControllerRequestCode.CONTROLLER_GET_SYNC_STATE_DATA, {},
                                      json.dumps(broker_names).encode())  # fmt: skip
        return parse_sync_state_data(bytes(resp.body))

    async def controller_elect_master(
        self, controller: str, broker_name: str, broker_id: int, cluster: str = ""
    ) -> ElectResult:
        """CONTROLLER_ELECT_MASTER with ``designateElect=true``: make ``broker_id`` the group's master. A master
        that stays (CONTROLLER_MASTER_STILL_EXIST: it is already ``broker_id``) is ``changed=False``."""
        ext = {"clusterName": cluster, "brokerName": broker_name, "brokerId": str(broker_id),
               "designateElect": "true", "invokeTime": str(int(time.time() * 1000))}  # fmt: skip
        resp = await self._api.invoke(
            controller, self._api.request(ControllerRequestCode.CONTROLLER_ELECT_MASTER, ext), self.timeout
        )
        kept = resp.code == ControllerResponseCode.CONTROLLER_MASTER_STILL_EXIST  # names the master that stays
        if resp.code != ResponseCode.SUCCESS and not kept:
            raise controller_error(resp.code, resp.remark, controller)
        h = resp.ext_fields
        try:
            master = h.get("masterBrokerId")
            return ElectResult(None if master in (None, "") else int(master), h.get("masterAddress") or None,
                               int(h.get("masterEpoch") or 0), int(h.get("syncStateSetEpoch") or 0),
                               changed=not kept)  # fmt: skip
        except ValueError as exc:
            raise ProtocolError(f"bad CONTROLLER_ELECT_MASTER answer from {controller}: {exc}") from None

    async def acl_config(self, broker_addr: str) -> AclConfig:
        """GET_BROKER_CLUSTER_ACL_CONFIG: the broker's global white list and accounts."""
        resp = await self._api.call(broker_addr, RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, None, self.timeout)
        return AclConfig.decode(bytes(resp.body))

    async def acl_version(self, broker_addr: str) -> AclVersionInfo:
        """GET_BROKER_CLUSTER_ACL_INFO: the broker's ACL data version (and each file's)."""
        resp = await self._api.call(broker_addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO, None, self.timeout)
        return AclVersionInfo.from_ext(resp.ext_fields)

    async def update_acl_account(self, broker_addr: str, account: AclAccount) -> None:
        """UPDATE_AND_CREATE_ACL_CONFIG: create the account, or update the fields given of an existing one."""
        await self._api.call(broker_addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, account.update_header(),
                             self.timeout)  # fmt: skip

    async def delete_acl_account(self, broker_addr: str, access_key: str) -> None:
        """DELETE_ACL_CONFIG."""
        await self._api.call(broker_addr, RequestCode.DELETE_ACL_CONFIG, {"accessKey": access_key}, self.timeout)

    async def update_global_white_addrs(self, broker_addr: str, addrs: list[str], acl_file: str | None = None) -> None:
        """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: replace the global white list (of ``acl_file``, default file)."""
        ext = {"globalWhiteAddrs": ",".join(addrs)}
        if acl_file:
            ext["aclFileFullPath"] = acl_file
        await self._api.call(broker_addr, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, ext, self.timeout)

    async def acl_targets(self, cluster: str | None = None, broker_addr: str | None = None) -> list[str]:
        """One broker, or every broker (slaves too: each keeps its own ACL file, as mqadmin's ``-c`` reaches
        them) of ``cluster`` or of the only cluster there is."""
        if broker_addr:
            return [broker_addr]
        if cluster is None:
            clusters = (await self.cluster_info()).get("clusterAddrTable") or {}
            if len(clusters) != 1:
                raise ClientError("specify a cluster (-c) or a broker address (-b)")
            cluster = str(next(iter(clusters)))
        addrs = [b.addr for b in await self.brokers(cluster)]
        if not addrs:
            raise ClientError(f"no broker in cluster {cluster!r}")
        return addrs

    async def check_admin(self) -> list[str]:
        """Prove the account may administer every master broker; returns their addresses, raises the first
        refusal (a BrokerError: unknown account, bad signature, not an admin).

        The proof is UPDATE_BROKER_CONFIG with no properties: admin-only in every ACL mode (Java's
        ``Permission.ADMIN_CODE``), and with an empty body a broker (Java's and rocketq's) changes nothing.
        """
        masters = [b.addr for b in await self.brokers() if b.broker_id == MASTER_ID]
        if not masters:
            raise ClientError("no master broker is registered with the name server")
        for addr in masters:
            await self._api.call(addr, RequestCode.UPDATE_BROKER_CONFIG, None, self.timeout)
        return masters
