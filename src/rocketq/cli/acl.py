"""``rocketq acl list|version|update|delete|white-list``: the ACL accounts of brokers with aclEnable=true, over
the broker requests 50–54 (mqadmin's getAclConfig/clusterAclConfigVersion, updateAclConfig, deleteAccessConfig,
updateGlobalWhiteAddr). Without ``-b``, a command reaches every broker of the cluster (slaves too: each broker
keeps its own file). The caller signs with ``--access-key``/``--secret-key`` like every command."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rocketq.cli import args as a
from rocketq.cli.command import run
from rocketq.cli.output import UsageError, emit, fmt_ts
from rocketq.client import AdminClient
from rocketq.client.acl import PERMS, AclAccount

if TYPE_CHECKING:
    from rocketq.cli.command import Subparsers


def _perm(text: str) -> str:
    if text.upper() not in PERMS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a permission: use one of {', '.join(PERMS)}")
    return text.upper()


def _resource_perm(text: str) -> str:
    name, sep, perm = text.partition("=")
    if not sep or not name or "," in name:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=PERM")
    return f"{name}={_perm(perm)}"


def register(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    acl = sub.add_parser("acl", help="ACL accounts and white list of brokers with aclEnable=true")
    asub = acl.add_subparsers(dest="acl_command", metavar="ACTION", required=True)
    p = asub.add_parser("list", parents=[common], help="accounts and global white list of each broker")
    a.target_args(p)
    p.add_argument("--show-secrets", action="store_true", help="print secret keys (hidden by default)")
    p.set_defaults(func=run(_list))
    p = asub.add_parser("version", parents=[common], help="each broker's ACL data version (cluster ACL info)")
    a.target_args(p)
    p.set_defaults(func=run(_version))
    p = asub.add_parser("update", parents=[common], help="create an account, or change the settings given")
    a.target_args(p)
    p.add_argument("-a", "--account", required=True, metavar="ACCESS_KEY", help="the account's access key")
    p.add_argument("-s", "--account-secret", metavar="SECRET_KEY", help="its secret key (needed for a new one)")
    p.add_argument("-w", "--white-remote-address", metavar="PATTERN",
                   help="addresses that need no signature for this account ('' for none)")  # fmt: skip
    p.add_argument("--admin", action=argparse.BooleanOptionalAction,
                   help="may send the admin requests (default: unchanged, no for a new account)")  # fmt: skip
    p.add_argument("--default-topic-perm", type=_perm, metavar="PERM", help=f"one of {', '.join(PERMS)}")
    p.add_argument("--default-group-perm", type=_perm, metavar="PERM", help=f"one of {', '.join(PERMS)}")
    p.add_argument("--topic-perm", type=_resource_perm, action="append", metavar="TOPIC=PERM",
                   help="repeat for each topic; replaces the account's topic list")  # fmt: skip
    p.add_argument("--group-perm", type=_resource_perm, action="append", metavar="GROUP=PERM",
                   help="repeat for each group; replaces the account's group list")  # fmt: skip
    p.set_defaults(func=run(_update))
    p = asub.add_parser("delete", parents=[common], help="delete an account")
    a.target_args(p)
    p.add_argument("-a", "--account", required=True, metavar="ACCESS_KEY")
    p.set_defaults(func=run(_delete))
    p = asub.add_parser("white-list", parents=[common], help="replace the global white list")
    a.target_args(p)
    p.add_argument("-g", "--addresses", required=True, metavar="PATTERNS",
                   help="comma-separated address patterns ('' empties the list)")  # fmt: skip
    p.add_argument("--file", metavar="PATH", help="the broker's ACL file to write (default: its plain_acl.yml)")
    p.set_defaults(func=run(_white_list))


async def _list(args: argparse.Namespace, admin: AdminClient) -> int:
    configs = {addr: await admin.acl_config(addr) for addr in await admin.acl_targets(args.cluster, args.broker)}
    data = [{"brokerAddr": addr, "globalWhiteAddrs": c.global_white_addrs,
             "plainAccessConfigs": [acc.to_json(show_secret=args.show_secrets) for acc in c.accounts]}
            for addr, c in configs.items()]  # fmt: skip
    rows = []
    for addr, c in configs.items():
        for acc in c.accounts:
            j = acc.to_json(show_secret=args.show_secrets)
            rows.append([addr, j["accessKey"], j["secretKey"] or "-", j["admin"], j["whiteRemoteAddress"] or "-",
                         j["defaultTopicPerm"] or "-", j["defaultGroupPerm"] or "-",
                         ",".join(j["topicPerms"]) or "-", ",".join(j["groupPerms"]) or "-"])  # fmt: skip
    emit(args, data, ["broker", "access key", "secret key", "admin", "white address", "default topic",
                      "default group", "topics", "groups"], rows)  # fmt: skip
    if not args.json:
        print()
        for addr, c in configs.items():
            print(f"global white list of {addr}: {', '.join(c.global_white_addrs) or '-'}")
    return 0


async def _version(args: argparse.Namespace, admin: AdminClient) -> int:
    infos = [await admin.acl_version(addr) for addr in await admin.acl_targets(args.cluster, args.broker)]
    data = [{"clusterName": i.cluster_name, "brokerName": i.broker_name, "brokerAddr": i.broker_addr,
             "aclConfigDataVersion": {"counter": i.version.counter, "timestamp": i.version.timestamp},
             "allAclConfigDataVersion": {f: {"counter": v.counter, "timestamp": v.timestamp}
                                         for f, v in i.file_versions.items()}} for i in infos]  # fmt: skip
    rows = [[i.cluster_name, i.broker_name, i.broker_addr, f, v.counter, fmt_ts(v.timestamp)]
            for i in infos for f, v in (sorted(i.file_versions.items()) or [("-", i.version)])]  # fmt: skip
    emit(args, data, ["cluster", "broker", "address", "file", "version", "updated"], rows)
    return 0


async def _update(args: argparse.Namespace, admin: AdminClient) -> int:
    done = []
    for addr in await admin.acl_targets(args.cluster, args.broker):
        admin_flag, secret = args.admin, args.account_secret
        if admin_flag is None or secret is None:
            # The request always carries 'admin' (a Java boolean), and Java's broker wants the secret on every
            # update: what is not given is taken from the broker's current account.
            current = {acc.access_key: acc for acc in (await admin.acl_config(addr)).accounts}.get(args.account)
            if admin_flag is None:
                admin_flag = bool(current and current.admin)
            if secret is None:
                secret = current.secret_key if current else None
                if not secret:
                    raise UsageError(f"account {args.account!r} is not on {addr} (or its secret is not shown): "
                                     "give its secret key with -s")  # fmt: skip
        account = AclAccount(args.account, secret, args.white_remote_address, admin_flag,
                             args.default_topic_perm, args.default_group_perm, args.topic_perm,
                             args.group_perm)  # fmt: skip
        await admin.update_acl_account(addr, account)
        done.append(addr)
    _report(args, done, {"accessKey": args.account})
    return 0


async def _delete(args: argparse.Namespace, admin: AdminClient) -> int:
    done = []
    for addr in await admin.acl_targets(args.cluster, args.broker):
        await admin.delete_acl_account(addr, args.account)
        done.append(addr)
    _report(args, done, {"accessKey": args.account})
    return 0


async def _white_list(args: argparse.Namespace, admin: AdminClient) -> int:
    patterns = [p.strip() for p in args.addresses.split(",") if p.strip()]
    done = []
    for addr in await admin.acl_targets(args.cluster, args.broker):
        await admin.update_global_white_addrs(addr, patterns, args.file)
        done.append(addr)
    _report(args, done, {"globalWhiteAddrs": patterns})
    return 0


def _report(args: argparse.Namespace, addrs: list[str], what: dict[str, object]) -> None:
    emit(args, [{"brokerAddr": addr, **what, "result": "OK"} for addr in addrs], ["broker", "result"],
         [[addr, "OK"] for addr in addrs])  # fmt: skip
