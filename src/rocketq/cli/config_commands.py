"""``rocketq broker-config``, ``namesrv-config``, ``kv``, ``broker-perm`` and ``clean``: settings at run time, the
name server's KV store, a broker's write permission and the store clean-ups (mqadmin getBrokerConfig,
updateBrokerConfig, getNamesrvConfig, updateNamesrvConfig, updateKvConfig, deleteKvConfig, wipeWritePerm,
addWritePerm, cleanExpiredCQ, cleanUnusedTopic, deleteExpiredCommitLog)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from rocketq.cli import args as a
from rocketq.cli.command import run
from rocketq.cli.output import CommandFailed, emit
from rocketq.client import AdminClient

if TYPE_CHECKING:
    from rocketq.cli.command import Subparsers


def register(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    bc = sub.add_parser("broker-config", help="a broker's settings; change those that may change at run time")
    bsub = bc.add_subparsers(dest="broker_config_command", metavar="ACTION", required=True)
    p = bsub.add_parser("get", parents=[common], help="the settings of one broker (or every master)")
    a.target_args(p)
    p.add_argument("-k", "--key", action="append", help="only this key (repeatable)")
    p.set_defaults(func=run(_broker_get))
    p = bsub.add_parser("update", parents=[common], help="change settings at run time (KEY=VALUE ...)")
    a.target_args(p)
    p.add_argument("settings", nargs="+", type=a.key_value, metavar="KEY=VALUE")
    p.set_defaults(func=run(_broker_update))

    nc = sub.add_parser("namesrv-config", help="the name servers' settings")
    nsub = nc.add_subparsers(dest="namesrv_config_command", metavar="ACTION", required=True)
    p = nsub.add_parser("get", parents=[common], help="the settings of every name server of -n")
    p.add_argument("-k", "--key", action="append", help="only this key (repeatable)")
    p.set_defaults(func=run(_namesrv_get))
    p = nsub.add_parser("update", parents=[common], help="change settings of every name server of -n")
    p.add_argument("settings", nargs="+", type=a.key_value, metavar="KEY=VALUE")
    p.set_defaults(func=run(_namesrv_update))

    kv = sub.add_parser("kv", help="the name servers' KV config")
    ksub = kv.add_subparsers(dest="kv_command", metavar="ACTION", required=True)
    p = ksub.add_parser("list", parents=[common], help="every key of a namespace")
    p.add_argument("-s", "--namespace", required=True)
    p.set_defaults(func=run(_kv_list))
    p = ksub.add_parser("get", parents=[common], help="one key's value")
    p.add_argument("-s", "--namespace", required=True)
    p.add_argument("-k", "--key", required=True)
    p.set_defaults(func=run(_kv_get))
    p = ksub.add_parser("put", parents=[common], help="create or update a key on every name server")
    p.add_argument("-s", "--namespace", required=True)
    p.add_argument("-k", "--key", required=True)
    p.add_argument("-v", "--value", required=True)
    p.set_defaults(func=run(_kv_put))
    p = ksub.add_parser("delete", parents=[common], help="delete a key on every name server")
    p.add_argument("-s", "--namespace", required=True)
    p.add_argument("-k", "--key", required=True)
    p.set_defaults(func=run(_kv_delete))

    perm = sub.add_parser("broker-perm", help="take a broker's write permission away at the name servers, or back")
    psub = perm.add_subparsers(dest="broker_perm_command", metavar="ACTION", required=True)
    for action, text in (("wipe", "stop routing sends to the broker (its topics lose write permission)"),
                         ("add", "give the broker's topics write permission back")):  # fmt: skip
        p = psub.add_parser(action, parents=[common], help=text)
        p.add_argument("--broker-name", required=True)
        p.set_defaults(func=run(_perm), perm_action=action)

    clean = sub.add_parser("clean", help="store clean-ups on the brokers")
    csub = clean.add_subparsers(dest="clean_command", metavar="ACTION", required=True)
    for action, text in (("expired-cq", "drop the consume queues whose messages all left the commit log"),
                         ("unused-topics", "drop the consume queues of topics no longer configured"),
                         ("expired-commitlog", "delete expired commit-log files now, whatever the hour")):  # fmt: skip
        p = csub.add_parser(action, parents=[common], help=text)
        a.target_args(p)
        p.set_defaults(func=run(_clean), clean_action=action)


def _pick(props: dict[str, str], keys: list[str] | None) -> dict[str, str]:
    if not keys:
        return props
    missing = [k for k in keys if k not in props]
    if missing:
        raise CommandFailed(f"no such config key: {', '.join(missing)}")
    return {k: props[k] for k in keys}


async def _broker_get(args: argparse.Namespace, admin: AdminClient) -> int:
    addrs = [args.broker] if args.broker else [b.addr for b in await admin.brokers(args.cluster) if b.broker_id == 0]
    if not addrs:
        raise CommandFailed("no master broker" + (f" in cluster {args.cluster!r}" if args.cluster else ""))
    data: list[dict[str, Any]] = [
        {"brokerAddr": x, "config": _pick(await admin.broker_config(x), args.key)} for x in addrs
    ]
    emit(args, data, ["broker", "key", "value"],
         [[d["brokerAddr"], k, v] for d in data for k, v in sorted(d["config"].items())])  # fmt: skip
    return 0


async def _broker_update(args: argparse.Namespace, admin: AdminClient) -> int:
    props = dict(args.settings)
    addrs = await admin.update_broker_config(props, cluster=args.cluster, broker_addr=args.broker)
    data = [{"brokerAddr": x, "key": k, "value": v} for x in addrs for k, v in props.items()]
    emit(args, data, ["broker", "key", "value"], [[d["brokerAddr"], d["key"], d["value"]] for d in data])
    return 0


async def _namesrv_get(args: argparse.Namespace, admin: AdminClient) -> int:
    configs = await admin.namesrv_config()
    data: list[dict[str, Any]] = [{"namesrvAddr": x, "config": _pick(c, args.key)} for x, c in configs.items()]
    emit(args, data, ["name server", "key", "value"],
         [[d["namesrvAddr"], k, v] for d in data for k, v in sorted(d["config"].items())])  # fmt: skip
    return 0


async def _namesrv_update(args: argparse.Namespace, admin: AdminClient) -> int:
    props = dict(args.settings)
    addrs = await admin.update_namesrv_config(props)
    data = [{"namesrvAddr": x, "key": k, "value": v} for x in addrs for k, v in props.items()]
    emit(args, data, ["name server", "key", "value"], [[d["namesrvAddr"], d["key"], d["value"]] for d in data])
    return 0


async def _kv_list(args: argparse.Namespace, admin: AdminClient) -> int:
    table = await admin.kv_list(args.namespace)
    if not table:
        raise CommandFailed(f"namespace {args.namespace!r} has no key")
    emit(args, {"namespace": args.namespace, "table": table}, ["key", "value"], sorted(table.items()))
    return 0


async def _kv_get(args: argparse.Namespace, admin: AdminClient) -> int:
    value = await admin.get_kv_config(args.namespace, args.key)
    if value is None:
        raise CommandFailed(f"no key {args.key!r} in namespace {args.namespace!r}")
    emit(args, {"namespace": args.namespace, "key": args.key, "value": value}, ["key", "value"], [[args.key, value]])
    return 0


async def _kv_put(args: argparse.Namespace, admin: AdminClient) -> int:
    _kv_result(args, await admin.put_kv_config(args.namespace, args.key, args.value), "updated")
    return 0


async def _kv_delete(args: argparse.Namespace, admin: AdminClient) -> int:
    _kv_result(args, await admin.delete_kv_config(args.namespace, args.key), "deleted")
    return 0


def _kv_result(args: argparse.Namespace, addrs: list[str], result: str) -> None:
    data = [{"namesrvAddr": x, "namespace": args.namespace, "key": args.key, "result": result} for x in addrs]
    rows = [[x, args.namespace, args.key, result] for x in addrs]
    emit(args, data, ["name server", "namespace", "key", "result"], rows)


async def _perm(args: argparse.Namespace, admin: AdminClient) -> int:
    if args.perm_action == "wipe":
        counts = await admin.wipe_write_perm(args.broker_name)
    else:
        counts = await admin.add_write_perm(args.broker_name)
    data = [{"namesrvAddr": x, "brokerName": args.broker_name, "topicCount": n} for x, n in counts.items()]
    emit(args, data, ["name server", "broker", "topics changed"], [[x, args.broker_name, n] for x, n in counts.items()])
    return 0


async def _clean(args: argparse.Namespace, admin: AdminClient) -> int:
    fn = {"expired-cq": admin.clean_expired_consume_queues, "unused-topics": admin.clean_unused_topics,
          "expired-commitlog": admin.delete_expired_commit_log}[args.clean_action]  # fmt: skip
    done = await fn(cluster=args.cluster, broker_addr=args.broker)
    refused = [x for x, ok in done.items() if not ok]
    if refused:
        raise CommandFailed(f"{args.clean_action} refused by {', '.join(refused)}")
    emit(args, [{"brokerAddr": x, "success": True} for x in done], ["broker", "result"], [[x, "done"] for x in done])
    return 0
