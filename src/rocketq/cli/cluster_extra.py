"""``rocketq cluster export-metadata|export-configs|export-metrics|rt`` (mqadmin exportMetadata, exportConfigs,
exportMetrics, clusterRT, checkMsgSendRT, sendMsgStatus).

The exports write the documents Java's commands write (same members), to ``--file`` or stdout; ``rt`` sends
test messages with a producer and prints the send round trip per broker."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocketq.cli import args as a
from rocketq.cli.command import client_config, run
from rocketq.cli.output import CommandFailed, emit
from rocketq.client import AdminClient, Message, Producer
from rocketq.client.admin.stats import TOPIC_PUT_NUMS, sum_24h
from rocketq.errors import BrokerError, RocketQError
from rocketq.protocol.route import MASTER_ID
from rocketq.protocol.topics import DLQ_PREFIX, RETRY_PREFIX, SCHEDULE_TOPIC, TRANS_HALF_TOPIC, is_system_group

if TYPE_CHECKING:
    from rocketq.cli.command import Subparsers

#: the broker settings exportConfigs keeps (Java's needBrokerProprties)
EXPORTED_BROKER_KEYS = (
    "brokerClusterName", "brokerId", "brokerName", "brokerRole", "fileReservedTime", "filterServerNums",
    "flushDiskType", "maxMessageSize", "messageDelayLevel", "msgTraceTopicName", "slaveReadEnable", "traceOn",
    "traceTopicEnable", "useTLS", "autoCreateTopicEnable", "autoCreateSubscriptionGroup",
)  # fmt: skip


def register_actions(csub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = csub.add_parser("export-metadata", parents=[common], help="topics and subscription groups as one JSON file")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("-c", "--cluster", help="merge the masters of this cluster (queue counts added up)")
    target.add_argument("-b", "--broker", help="one broker address host:port")
    only = p.add_mutually_exclusive_group()
    only.add_argument("--topics-only", action="store_true", help="only topicConfigTable")
    only.add_argument("--groups-only", action="store_true", help="only subscriptionGroupTable")
    p.add_argument("--special-topics", action="store_true", help="include retry and DLQ topics")
    p.add_argument("-f", "--file", type=Path, help="write here instead of stdout")
    p.set_defaults(func=run(_export_metadata))
    p = csub.add_parser("export-configs", parents=[common], help="the masters' main settings and the cluster's size")
    p.add_argument("-c", "--cluster", required=True)
    p.add_argument("-f", "--file", type=Path, help="write here instead of stdout")
    p.set_defaults(func=run(_export_configs))
    p = csub.add_parser("export-metrics", parents=[common], help="per broker TPS, day counts, disk ratio, sizes")
    p.add_argument("-c", "--cluster", required=True)
    p.add_argument("-f", "--file", type=Path, help="write here instead of stdout")
    p.set_defaults(func=run(_export_metrics))
    p = csub.add_parser("rt", parents=[common],
                        help="send test messages to every master and print the round trip (clusterRT)")  # fmt: skip
    p.add_argument("-c", "--cluster", help="only this cluster")
    p.add_argument("-t", "--topic", help="send to this topic (default: each broker's own, named after it)")
    p.add_argument("--amount", type=a.positive_int, default=10, help="messages per broker (default 10)")
    p.add_argument("--size", type=a.positive_int, default=128, help="body bytes (default 128)")
    p.set_defaults(func=run(_rt))


def _write(args: argparse.Namespace, doc: dict[str, Any]) -> None:
    text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False)
    if args.file is None:
        print(text)
        return
    try:
        args.file.parent.mkdir(parents=True, exist_ok=True)
        args.file.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise CommandFailed(f"cannot write {args.file}: {exc.strerror or exc}") from None
    emit(args, {"file": str(args.file)}, ["exported to"], [[str(args.file)]])


async def _masters(admin: AdminClient, cluster: str) -> list[Any]:
    masters = [b for b in await admin.brokers(cluster) if b.broker_id == MASTER_ID]
    if not masters:
        raise CommandFailed(f"no master broker in cluster {cluster!r}")
    return masters


async def _user_topics(admin: AdminClient, addr: str, special: bool) -> dict[str, dict[str, Any]]:
    """Java's getUserTopicConfig: the broker's topics without its own system topics (and, unless ``special``,
    without retry and DLQ topics)."""
    system = set(await admin.broker_system_topics(addr))
    return {t: c for t, c in (await admin.topic_configs(addr)).items()
            if t not in system and (special or not t.startswith((RETRY_PREFIX, DLQ_PREFIX)))}  # fmt: skip


async def _user_groups(admin: AdminClient, addr: str) -> dict[str, dict[str, Any]]:
    return {g.group_name: g.config for g in await admin.subscription_groups(broker_addr=addr)
            if not is_system_group(g.group_name)}  # fmt: skip


async def _export_metadata(args: argparse.Namespace, admin: AdminClient) -> int:
    addrs = [args.broker] if args.broker else [b.addr for b in await _masters(admin, args.cluster)]
    topics: dict[str, dict[str, Any]] = {}
    groups: dict[str, dict[str, Any]] = {}
    for addr in addrs:  # several masters: one entry per name, queue counts added up (as Java merges them)
        for name, tc in (await _user_topics(admin, addr, args.special_topics)).items():
            if name in topics:
                for k in ("readQueueNums", "writeQueueNums"):
                    tc[k] = int(tc.get(k, 0)) + int(topics[name].get(k, 0))
            topics[name] = tc
        for name, gc in (await _user_groups(admin, addr)).items():
            if name in groups:
                gc["retryQueueNums"] = int(gc.get("retryQueueNums", 0)) + int(groups[name].get("retryQueueNums", 0))
            groups[name] = gc
    doc: dict[str, Any] = {"exportTime": int(time.time() * 1000)}
    if not args.groups_only:
        doc["topicConfigTable"] = topics
    if not args.topics_only:
        doc["subscriptionGroupTable"] = groups
    _write(args, doc)
    return 0


async def _export_configs(args: argparse.Namespace, admin: AdminClient) -> int:
    brokers = await admin.brokers(args.cluster)
    masters = [b for b in brokers if b.broker_id == MASTER_ID]
    if not masters:
        raise CommandFailed(f"no master broker in cluster {args.cluster!r}")
    configs = {}
    for b in masters:
        props = await admin.broker_config(b.addr)
        configs[props.get("brokerName", b.broker_name)] = {k: props[k] for k in EXPORTED_BROKER_KEYS if k in props}
    scale = {"namesrvSize": len(admin.config.namesrv_list()), "masterBrokerSize": len(masters),
             "slaveBrokerSize": len(brokers) - len(masters)}  # fmt: skip
    _write(args, {"brokerConfigs": configs, "clusterScale": scale})
    return 0


def _delta(kv: dict[str, str], today: str, yesterday: str) -> int:
    try:
        return int(kv.get(today, 0)) - int(kv.get(yesterday, 0))
    except ValueError:
        return 0


def _first_number(text: str | None) -> float:
    try:
        return float((text or "0").split()[0])
    except (ValueError, IndexError):
        return 0.0


async def _put_stats(admin: AdminClient, addr: str, topic: str) -> tuple[float, int]:
    try:
        s = await admin.view_broker_stats(addr, TOPIC_PUT_NUMS, topic)
    except BrokerError:
        return 0.0, 0
    return float((s.get("statsMinute") or {}).get("tps", 0) or 0), sum_24h(s)


async def _export_metrics(args: argparse.Namespace, admin: AdminClient) -> int:
    totals_tps = dict.fromkeys(("totalNormalInTps", "totalNormalOutTps", "totalTransInTps", "totalScheduleInTps"), 0.0)
    day_keys = ("normalOneDayInNum", "normalOneDayOutNum", "transOneDayInNum", "scheduleOneDayInNum")
    totals_day = dict.fromkeys(day_keys, 0)
    report: dict[str, Any] = {}
    for b in await _masters(admin, args.cluster):
        kv = await admin.broker_runtime_info(b.addr)
        props = await admin.broker_config(b.addr)
        groups = await _user_groups(admin, b.addr)
        trans_tps, trans_day = await _put_stats(admin, b.addr, TRANS_HALF_TOPIC)
        sched_tps, sched_day = await _put_stats(admin, b.addr, SCHEDULE_TOPIC)
        tps = {"normalInTps": _first_number(kv.get("putTps")),
               "normalOutTps": _first_number(kv.get("getTransferedTps")),
               "transInTps": trans_tps, "scheduleInTps": sched_tps}  # fmt: skip
        day = {"normalOneDayInNum": _delta(kv, "msgPutTotalTodayMorning", "msgPutTotalYesterdayMorning"),
               "normalOneDayOutNum": _delta(kv, "msgGetTotalTodayMorning", "msgGetTotalYesterdayMorning"),
               "transOneDayInNum": trans_day, "scheduleOneDayInNum": sched_day}  # fmt: skip
        for k, v in zip(totals_tps, tps.values(), strict=True):
            totals_tps[k] += v
        for k, v in day.items():
            totals_day[k] += v
        clients: set[str] = set()
        for g in groups:
            try:
                cc = await admin.consumer_connections(g)
            except RocketQError:
                continue  # offline: Java skips it too
            clients.update(f"{c.language}%{c.version}" for c in cc.connections)
        report[b.broker_name] = {
            "runtimeEnv": {"cpuNum": props.get("clientCallbackExecutorThreads"),
                           "totalMemKBytes": kv.get("totalMemKBytes")},
            "runtimeQuota": {
                "diskRatio": {"commitLogDiskRatio": kv.get("commitLogDiskRatio"),
                              "consumeQueueDiskRatio": kv.get("consumeQueueDiskRatio")},
                "tps": tps, "oneDayNum": day, "messageAverageSize": kv.get("putMessageAverageSize"),
                "topicSize": len(await _user_topics(admin, b.addr, False)), "groupSize": len(groups),
            },
            "runtimeVersion": {"rocketmqVersion": kv.get("brokerVersionDesc"), "clientInfo": sorted(clients)},
        }  # fmt: skip
    _write(args, {"evaluateReport": report, "totalData": {"totalTps": totals_tps, "totalOneDayNum": totals_day}})
    return 0


async def _rt(args: argparse.Namespace, admin: AdminClient) -> int:
    masters = [b for b in await admin.brokers(args.cluster) if b.broker_id == MASTER_ID]
    if not masters:
        raise CommandFailed("no master broker" + (f" in cluster {args.cluster!r}" if args.cluster else ""))
    body = b"x" * args.size
    data: list[dict[str, Any]] = []
    async with Producer("rocketq-cli-rt", config=client_config(args), send_msg_timeout=args.timeout) as producer:
        for b in masters:
            topic = args.topic or b.broker_name
            times: list[float] = []
            failed = 0
            for _ in range(args.amount):
                start = time.perf_counter()
                try:
                    queues = [q for q in await producer.fetch_publish_message_queues(topic)
                              if q.broker_name == b.broker_name]  # fmt: skip
                    if not queues:
                        raise CommandFailed(f"topic {topic!r} has no queue on broker {b.broker_name}")
                    await producer.send(Message(topic, body), queue=queues[0])
                    times.append((time.perf_counter() - start) * 1000)
                except RocketQError:
                    failed += 1
            avg = sum(times) / len(times) if times else None
            data.append({"clusterName": b.cluster, "brokerName": b.broker_name, "brokerAddr": b.addr,
                         "topic": topic, "sent": len(times), "failed": failed, "avgRtMs": avg,
                         "maxRtMs": max(times, default=None)})  # fmt: skip
    rows = [[d["clusterName"], d["brokerName"], d["topic"], d["sent"], d["failed"],
             "-" if d["avgRtMs"] is None else f"{d['avgRtMs']:.2f}",
             "-" if d["maxRtMs"] is None else f"{d['maxRtMs']:.2f}"] for d in data]  # fmt: skip
    if not any(d["sent"] for d in data):
        raise CommandFailed(f"no send succeeded ({sum(d['failed'] for d in data)} failed)")
    emit(args, data, ["cluster", "broker", "topic", "sent", "failed", "avg rt ms", "max rt ms"], rows)
    return 0
