"""Whether this client's ACL account is an admin of every master broker (the console's login check)."""

from __future__ import annotations

from rocketq.client.admin._base import AdminBase
from rocketq.codes import RequestCode
from rocketq.errors import ClientError
from rocketq.protocol.route import MASTER_ID


class AccessAdmin(AdminBase):
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
