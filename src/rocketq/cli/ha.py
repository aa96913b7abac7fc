"""``rocketq ha status`` and ``rocketq ha switch``: replication seen and steered by an operator.

``status`` asks every broker the name server knows (or one, ``-b``) for its HA runtime info (GET_BROKER_HA_STATUS,
Java 5's ``mqadmin haStatus``) and its role, and shows per broker group each broker's role, max offset, the
slave's lag in bytes behind its group's master and the HA connection; with ``--controller`` (5.x controller
mode) also the master epoch, the in-sync set and its epoch (CONTROLLER_GET_SYNC_STATE_DATA). ``switch`` makes
one broker its group's master through the controller (CONTROLLER_ELECT_MASTER with designateElect, Java 5's
``mqadmin electMaster``); static 4.9 replication has no switch-over.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from rocketq.cli.cluster import registered_brokers
from rocketq.cli.command import run
from rocketq.cli.output import CommandFailed, UsageError, emit
from rocketq.client import AdminClient
from rocketq.client.admin import BrokerInfo
from rocketq.client.replication import connection_text, replication_rows

if TYPE_CHECKING:
    from rocketq.cli.command import Subparsers

NO_SWITCH_WITHOUT_CONTROLLER = (
    "a switch-over needs the 5.x controller (--controller ADDR): in static 4.9 replication a broker's role is "
    "fixed by its brokerRole/brokerId settings; restart the brokers with new roles instead"
)

HEADERS = ["broker", "id", "address", "role", "max offset", "lag", "ha connection"]
CONTROLLER_HEADERS = ["master epoch", "in-sync set", "set epoch", "in sync"]


def register(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    ha = sub.add_parser("ha", help="replication: status and switch-over")
    hsub = ha.add_subparsers(dest="ha_command", metavar="ACTION", required=True)
    p = hsub.add_parser("status", parents=[common], help="roles, offsets, lag and HA connections of every broker")
    g = p.add_mutually_exclusive_group()
    g.add_argument("-c", "--cluster", help="only this cluster")
    g.add_argument("-b", "--broker", help="one broker address host:port")
    p.add_argument("--controller", help="the 5.x controller's address: add master epochs and in-sync sets")
    p.set_defaults(func=run(_status))
    p = hsub.add_parser("switch", parents=[common], help="make one broker its group's master (controller mode)")
    p.add_argument("--broker-name", required=True, help="the broker group (brokerName)")
    p.add_argument("--broker-id", required=True, type=int, help="the controller's id of the broker to elect")
    p.add_argument("--controller", help="the 5.x controller's address (required: 4.9 mode has no switch-over)")
    p.add_argument("-c", "--cluster", default="", help="the group's cluster name (sent along, as mqadmin does)")
    p.set_defaults(func=run(_switch, needs_namesrv=False))


# ---------------------------------------------------------------------------------------------------- status


def _text_row(row: dict[str, Any], controller: bool) -> list[Any]:
    if "error" in row:
        cells: list[Any] = [row["brokerName"], row["brokerId"], row["brokerAddr"], "-", "-", "-",
                            f"error: {row['error']}"]  # fmt: skip
    else:
        lag = row.get("lag", "-") if not row["haRuntimeInfo"].get("master") else "-"
        cells = [row["brokerName"], row["brokerId"], row["brokerAddr"], row["brokerRole"], row["maxOffset"], lag,
                 connection_text(row["haRuntimeInfo"])]  # fmt: skip
    if controller:
        in_sync = row.get("inSync")
        cells += [row.get("masterEpoch", "-"),
                  ",".join(str(i) for i in row["syncStateSet"]) if "syncStateSet" in row else "-",
                  row.get("syncStateSetEpoch", "-"),
                  "-" if in_sync is None else ("yes" if in_sync else "no")]  # fmt: skip
    return cells


async def _status(args: argparse.Namespace, admin: AdminClient) -> int:
    if args.broker:
        known = [b for b in await admin.brokers() if b.addr == args.broker]
        brokers = known or [BrokerInfo("-", "-", -1, args.broker)]
    else:
        brokers = await registered_brokers(admin, args.cluster)
    rows = await replication_rows(admin, brokers, args.controller)
    if len(rows) == 1 and "error" in rows[0]:
        raise CommandFailed(f"{rows[0]['brokerAddr']}: {rows[0]['error']}")
    headers = HEADERS + (CONTROLLER_HEADERS if args.controller else [])
    emit(args, rows, headers, [_text_row(r, bool(args.controller)) for r in rows])
    return 0


# ---------------------------------------------------------------------------------------------------- switch


async def _switch(args: argparse.Namespace, admin: AdminClient) -> int:
    if not args.controller:
        raise UsageError(NO_SWITCH_WITHOUT_CONTROLLER)
    if args.broker_id <= 0:
        raise UsageError(f"--broker-id must be a controller broker id (1 or more), not {args.broker_id}")
    result = await admin.controller_elect_master(args.controller, args.broker_name, args.broker_id, args.cluster)
    if result.master_id != args.broker_id:  # the controller kept another master
        raise CommandFailed(f"the controller kept broker {result.master_id} as master of {args.broker_name}, "
                            f"not {args.broker_id}")  # fmt: skip
    if not result.changed:
        print(f"broker {args.broker_id} is already the master of {args.broker_name}: nothing changed",
              file=sys.stderr)  # fmt: skip
    data = {"brokerName": args.broker_name, "masterBrokerId": result.master_id,
            "masterAddress": result.master_address, "masterEpoch": result.master_epoch,
            "syncStateSetEpoch": result.sync_state_set_epoch, "changed": result.changed}  # fmt: skip
    emit(args, data, ["broker", "master id", "master address", "master epoch", "set epoch"],
         [[args.broker_name, result.master_id, result.master_address or "-", result.master_epoch,
           result.sync_state_set_epoch]])  # fmt: skip
    return 0
