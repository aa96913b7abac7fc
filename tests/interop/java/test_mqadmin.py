"""Apache RocketMQ's stock mqadmin (rocketmq-tools 4.9.7) against rocketq, and against the Java 4.9.7 broker.

One scenario (``scenario_mqadmin``) runs every everyday command through one ``MqadminBatch`` JVM while rocketq's
SDK makes the live state (messages, a push consumer, a producer). Against rocketq each printout is parsed and
checked against the real state; the same scenario against a Java broker of this module's own (the session's
``java_broker`` carries the other suites' topics, which ``topicList`` would print) gives the reference, and
the two printouts are compared after normalising what legitimately differs (addresses, times, ids, paths).
Every remaining difference is either a rocketq bug or a deliberate difference listed in docs/compatibility.md,
and checked here for exactly what it is.

The rocketq cluster is named like the Java one (JavaCluster / java-broker-a), so that stored records differ in
size by the one deliberate byte only.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from javaharness import run_java, running_java_cluster
from mqadmin import MqadminSession, Run, columns, key_values, labelled, route
from scenario_mqadmin import MQADMIN_QUEUE, PER_QUEUE, QUEUES, SMALL_MAX_SIZE, Names, Target, Transcript, run_scenario

import rocketq
from rocketq.codes import RequestCode, ResponseCode
from rocketq.common.hashing import java_string_hash
from rocketq.protocol import fastjson
from rocketq.protocol.bodies import ConsumerData, HeartbeatData, SubscriptionData
from rocketq.remoting.client import RemotingClient
from rocketq.testing import EmbeddedCluster
from rocketq.testing.cluster import TEST_BROKER_DEFAULTS
from rocketq.testing.java import MQADMIN_MAIN, JavaCluster
from rocketq.testing.wire import Wire

CLUSTER, BROKER_NAME = "JavaCluster", "java-broker-a"  # JavaCluster's defaults
#: one suffix for both runs (mqadmin prints some tables in hash order, which follows the names), new each time
#: the module runs (the Java broker lives for the whole session)
NAMES = Names()
TOTAL = sum(PER_QUEUE) + 1  # the SDK's messages and mqadmin's sendMessage


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def rocketq_run(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Transcript]:
    """The scenario against an embedded rocketq cluster; ``facts["state"]`` is what the broker holds after it."""
    base = tmp_path_factory.mktemp("mqadmin-rocketq")
    async with EmbeddedCluster(base / "cluster", brokerClusterName=CLUSTER, brokerName=BROKER_NAME) as cluster:
        target = Target(cluster.namesrv_addr, cluster.broker_addr, CLUSTER, BROKER_NAME, NAMES)
        broker, namesrv = cluster.broker, cluster.namesrv
        assert namesrv is not None
        nm = target.names

        def observe(label: str) -> object:
            if label == "cloneGroupOffset":
                return broker.offsets.offsets_of(nm.clone_group, nm.topic)
            if label == "updateKvConfig":
                return namesrv.kv_config.list_namespace(nm.kv_namespace)
            return None

        async with MqadminSession(base / "mqadmin") as mq:
            transcript = await run_scenario(mq, target, observe)
        transcript.facts["state"] = {
            "namesrv port": namesrv.port,
            "topic": broker.topics.get(nm.topic),
            "group": broker.groups.table.get(nm.group),
            "kv": namesrv.kv_config.list_namespace(nm.kv_namespace),
            "delay queues": broker.topics.get("SCHEDULE_TOPIC_XXXX"),
        }
        yield transcript


@pytest.fixture(scope="module")
def own_java_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaCluster]:
    yield from running_java_cluster(tmp_path_factory.mktemp("mqadmin-java-broker"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def java_run(own_java_broker: JavaCluster, tmp_path_factory: pytest.TempPathFactory) -> Transcript:
    b = own_java_broker
    target = Target(b.namesrv_addr, b.broker_addr, b.cluster_name, b.broker_name, NAMES)
    async with MqadminSession(tmp_path_factory.mktemp("mqadmin-java")) as mq:
        return await run_scenario(mq, target)


# ------------------------------------------------------------------------------------ the batch runner


async def test_the_batch_runner_prints_what_a_real_mqadmin_invocation_prints(tmp_path: Path) -> None:
    """MqadminBatch changes nothing: stdout, the exception lines on stderr and the exit status of a command that
    works, one that fails (mqadmin prints the trace and exits 0) and a bad command line (System.exit(1))."""
    async with EmbeddedCluster(tmp_path / "cluster") as cluster:
        n = cluster.namesrv_addr
        commands = [("topicList", "-n", n), ("topicRoute", "-n", n, "-t", "NoSuchTopic"), ("topicList", "-x")]
        async with MqadminSession(tmp_path / "batch") as mq:
            batch = [await mq.run(*args) for args in commands]
        real = await asyncio.gather(*(run_java(MQADMIN_MAIN, *args, home=tmp_path / "real") for args in commands))
    for args, ran, (code, out, err) in zip(commands, batch, real, strict=True):
        assert (ran.stdout, ran.exit) == (out, code), args
        assert _exception_lines(ran.stderr) == _exception_lines(err), args
    assert "SCHEDULE_TOPIC_XXXX" in batch[0].stdout and batch[2].exit == 1 and "usage: mqadmin topicList" in out
    assert "No topic route info in name server for the topic: NoSuchTopic" in batch[1].stderr


def _exception_lines(stderr: str) -> list[str]:
    """A trace without its frames (the batch runner's own frames differ from main()'s)."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith(("\tat ", "\t..."))]


# ------------------------------------------------------------------------- every command against rocketq


def test_cluster_broker_and_name_server_views(rocketq_run: Transcript) -> None:
    t = rocketq_run.target
    (row,) = columns(rocketq_run["clusterList"])
    assert row[:4] == [CLUSTER, BROKER_NAME, "0", t.broker_addr]
    text = rocketq_run["clusterList"].stdout
    assert f" rocketq {rocketq.__version__} (V4_9_8 protocol) " in text
    assert "null" not in text and re.search(r"\d\.\d\d\(0,0ms\)\s+\d+\.\d\d\(0,0ms\)", text)
    assert columns(rocketq_run["clusterList -m"]) == [[CLUSTER, BROKER_NAME, "0", "0", "0", "0"]]
    (after,) = columns(rocketq_run["clusterList -m after"])
    assert after[:4] == [CLUSTER, BROKER_NAME, "0", "0"]
    assert int(after[4]) == TOTAL and int(after[5]) >= TOTAL + 2  # the push consumer, consumeMessage, printMsg
    status = key_values(rocketq_run["brokerStatus"], ":")
    assert status["brokerName"] == BROKER_NAME and status["msgPutTotalTodayNow"] == "0"
    for key in ("putTps", "getTransferedTps", "earliestMessageTimeStamp", "commitLogDirCapacity",
                "sendThreadPoolQueueHeadWaitTimeMills", "msgPutTotalTodayMorning"):  # fmt: skip
        assert key in status, key
    ns = key_values(rocketq_run["getNamesrvConfig"], "=")
    assert ns["listenPort"] == str(rocketq_run.facts["state"]["namesrv port"]) and ns["orderMessageEnable"] == "false"


def test_topic_commands(rocketq_run: Transcript) -> None:
    nm = rocketq_run.target.names
    t = rocketq_run.target
    created = rocketq_run["updateTopic"].lines()
    assert created[0] == f"create topic to {t.broker_addr} success."
    assert f"readQueueNums={QUEUES}, writeQueueNums={QUEUES}, perm=RW-" in created[1]
    not_yet = {nm.perm_topic, f"%RETRY%{nm.group}", f"%DLQ%{nm.group}"}
    assert set(rocketq_run["topicList"].lines()) == known_topics(nm) - not_yet
    assert [CLUSTER, nm.topic] in [row[:2] for row in columns(rocketq_run["topicList -c"])]
    r = route(rocketq_run["topicRoute"])
    assert r["brokerDatas"] == [{"brokerAddrs": {"0": t.broker_addr}, "brokerName": BROKER_NAME, "cluster": CLUSTER}]
    assert r["queueDatas"] == [{"brokerName": BROKER_NAME, "perm": 6, "readQueueNums": QUEUES,
                                "topicSysFlag": 0, "writeQueueNums": QUEUES}]  # fmt: skip
    assert rocketq_run["topicClusterList"].lines() == [CLUSTER]
    # topicStatus: the max offsets of what the SDK sent, per queue; a time only where there is a message
    rows = columns(rocketq_run["topicStatus"])
    assert [(int(r[1]), int(r[2]), int(r[3])) for r in rows] == [(q, 0, n) for q, n in enumerate(PER_QUEUE)]
    assert [len(r) > 4 for r in rows] == [n > 0 for n in PER_QUEUE]


def test_message_commands_find_what_was_sent(rocketq_run: Transcript) -> None:
    nm = rocketq_run.target.names
    sent, probe = rocketq_run.sent, rocketq_run.sent[1]
    (row,) = columns(rocketq_run["sendMessage"])
    assert row[:3] == [BROKER_NAME, str(MQADMIN_QUEUE), "SEND_OK"]
    mqadmin_id = row[3]
    assert columns(rocketq_run["queryMsgByKey"]) == [[probe.msg_id, "0", "1"]]
    assert columns(rocketq_run["queryMsgByKey mqadmin"]) == [[mqadmin_id, str(MQADMIN_QUEUE), "0"]]
    for label in ("queryMsgByUniqueKey", "queryMsgById", "queryMsgByOffset"):
        shown = labelled(rocketq_run[label])
        assert (shown["Topic"], shown["Keys"], shown["Tags"]) == (nm.topic, "[key-0-1]", "[TagA]"), label
        assert (shown["Queue ID"], shown["Queue Offset"]) == ("0", "1"), label
        assert f"UNIQ_KEY={probe.msg_id}" in shown["Properties"] and "WAIT" not in shown["Properties"], label
    assert labelled(rocketq_run["queryMsgById"])["OffsetID"] == probe.offset_msg_id
    printed = re.findall(r"^MSGID: (\S+)", rocketq_run["printMsg"].stdout, re.M)
    assert sorted(printed) == sorted([s.msg_id for s in sent] + [mqadmin_id])
    consumed = re.findall(r"queueId=0, storeSize=\d+, queueOffset=(\d+)", rocketq_run["consumeMessage"].stdout)
    assert consumed == ["1", "2"]


def test_connection_and_progress_commands_show_the_live_clients(rocketq_run: Transcript) -> None:
    nm = rocketq_run.target.names
    facts = rocketq_run.facts
    (producer,) = rocketq_run["producerConnection"].rows()  # index, client id, address, language, version
    index, client_id, _, language, version = producer
    assert (index, client_id, language, version) == ("0001", facts["producer_client_id"], "PYTHON", "V4_9_8")
    assert rocketq_run["updateSubGroup"].lines()[0].startswith("create subscription group to")
    assert key_values(rocketq_run["getConsumerConfig"], "=")["groupName"] == nm.group
    # consumerProgress: every committed offset equals the queue's max offset, and the diff is 0
    maxima = [n + (1 if q == MQADMIN_QUEUE else 0) for q, n in enumerate(PER_QUEUE)]
    progress = [r for r in columns(rocketq_run["consumerProgress -g"]) if r[0] == nm.topic]
    assert [(int(r[2]), int(r[3]), int(r[4]), int(r[5])) for r in progress] == [(q, m, m, 0) for q, m in
                                                                                enumerate(maxima)]  # fmt: skip
    assert "Diff Total: 0" in rocketq_run["consumerProgress -g"].stdout
    assert [nm.group, "1", "V4_9_8", "PUSH", "CLUSTERING"] in [r[:5] for r in columns(rocketq_run["consumerProgress"])]
    conn = rocketq_run["consumerConnection"]
    client_id, _, language, _ = columns(conn)[0]
    assert (client_id, language) == (facts["consumer_client_id"], "PYTHON")
    assert re.search(rf"^{nm.topic}\s+\*$", conn.stdout, re.M)  # the subscription, expression *
    assert "MessageModel: CLUSTERING" in conn.stdout and "ConsumeFromWhere: CONSUME_FROM_FIRST_OFFSET" in conn.stdout
    status = rocketq_run["consumerStatus"]
    assert facts["consumer_client_id"] in status.stdout and "Rebalance OK" in status.stdout
    assert "#Consumer Subscription#" in rocketq_run["consumerStatus -i"].stdout  # the consumer's own report
    # its RT&TPS table (statusTable): the topic's pulls and consumes in the last minute, no failures
    rt_tps = re.search(rf"^{nm.topic}\s+([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +(\d+)$",
                       rocketq_run["consumerStatus -i"].stdout, re.M)  # fmt: skip
    assert rt_tps is not None
    assert float(rt_tps[2]) > 0 and float(rt_tps[4]) > 0 and (rt_tps[5], rt_tps[6]) == ("0.00", "0")
    # statsAll: what went in and out of the topic for the group, counted at once
    (stats,) = columns(rocketq_run["statsAll"])
    assert stats[:3] == [nm.topic, nm.group, "0"] and (int(stats[5]), int(stats[6])) == (TOTAL, TOTAL)
    assert float(stats[3]) > 0 and float(stats[4]) > 0
    mine = [r for r in columns(rocketq_run["brokerConsumeStats"]) if r[:2] == [nm.topic, nm.group]]
    assert [(int(r[4]), int(r[5])) for r in mine] == [(m, m) for m in maxima]
    assert rocketq_run["cloneGroupOffset"].stdout.startswith("clone group offset success.")
    assert rocketq_run.facts["observed"]["cloneGroupOffset"] == dict(enumerate(maxima))
    assert "consumeResult=CR_SUCCESS" in rocketq_run["queryMsgById -g -d"].stdout
    # the reset reached the live consumer: it consumed everything again
    reset = columns(rocketq_run["resetOffsetByTime online"])
    assert sorted((int(r[1]), int(r[2])) for r in reset) == [(q, 0) for q in range(QUEUES)]
    assert facts["received_after_reset"] >= TOTAL


def test_broker_config_changes_are_printed_and_applied(rocketq_run: Transcript) -> None:
    before = key_values(rocketq_run["getBrokerConfig"], "=")
    after = key_values(rocketq_run["getBrokerConfig after"], "=")
    assert (before["maxMessageSize"], after["maxMessageSize"]) == ("4194304", str(SMALL_MAX_SIZE))
    assert before["brokerName"] == BROKER_NAME and before["brokerClusterName"] == CLUSTER
    assert rocketq_run["updateBrokerConfig"].stdout.startswith("update broker config success")
    facts = rocketq_run.facts
    assert facts["sdk send over the small limit"] == "MessageIllegalError:13"
    assert facts["sdk send under the small limit"] == "SEND_OK"
    assert "CODE: 13" in rocketq_run["sendMessage too big"].stderr
    assert facts["sdk send after the restore"] == "SEND_OK"


def test_topic_permission_and_name_server_config(rocketq_run: Transcript) -> None:
    nm = rocketq_run.target.names
    t = rocketq_run.target
    assert rocketq_run["updateTopicPerm"].lines() == [f"update topic perm from 6 to 4 in {t.broker_addr} success."]
    assert [q["perm"] for q in route(rocketq_run["topicRoute read-only"])["queueDatas"]] == [4]  # type: ignore[index]
    assert rocketq_run.facts["sdk send to the read-only topic"] == "NoPermissionError:16"  # Java stores it
    assert "No route info of this topic" in rocketq_run["sendMessage read-only"].stderr  # no writable queue
    assert rocketq_run["updateTopicPerm back"].lines() == [f"update topic perm from 4 to 6 in {t.broker_addr} success."]
    assert rocketq_run.facts["sdk send to the topic made writable"] == "SEND_OK"
    conf = f"{BROKER_NAME}:{QUEUES}"
    got = rocketq_run["updateOrderConf get"].lines()
    assert got == [f"get orderConf success. topic=[{nm.topic}], orderConf=[{conf}]"]
    assert key_values(rocketq_run["getNamesrvConfig after"], "=")["orderMessageEnable"] == "true"
    assert route(rocketq_run["topicRoute ordered"])["orderTopicConf"] == conf
    assert rocketq_run["updateOrderConf get deleted"].failed
    # wipeWritePerm: the name server hands out the broker's queues read-only until addWritePerm
    wiped = rocketq_run["wipeWritePerm"].lines()[0]
    assert wiped.startswith(f"wipe write perm of broker[{BROKER_NAME}] in name server")
    assert [q["perm"] for q in route(rocketq_run["topicRoute wiped"])["queueDatas"]] == [4]  # type: ignore[index]
    assert [q["perm"] for q in route(rocketq_run["topicRoute added"])["queueDatas"]] == [6]  # type: ignore[index]
    assert rocketq_run["updateKvConfig"].lines() == ["create or update kv config to namespace success."]
    assert rocketq_run["deleteKvConfig"].lines() == ["delete kv config from namespace success."]
    assert rocketq_run.facts["observed"]["updateKvConfig"] == {"k1": "v1"} and rocketq_run.facts["state"]["kv"] == {}


def test_offline_reset_store_maintenance_and_deletes(rocketq_run: Transcript) -> None:
    nm = rocketq_run.target.names
    # -s now: every queue's offset moves to its max, which consumerProgress then shows with a zero diff
    maxima = {q: n + (1 if q == MQADMIN_QUEUE else 0) for q, n in enumerate(PER_QUEUE)}
    maxima[0] += 2  # the two SDK sends that got through while maxMessageSize was being changed
    reset = columns(rocketq_run["resetOffsetByTime offline"])
    assert {int(r[1]): int(r[2]) for r in reset} == maxima
    progress = [r for r in columns(rocketq_run["consumerProgress offline"]) if r[0] == nm.topic]
    assert {int(r[2]): (int(r[3]), int(r[4])) for r in progress} == {q: (m, m) for q, m in maxima.items()}
    cq = rocketq_run["queryCq"].stdout
    assert f"max: {maxima[0]}, min: 0" in cq
    units = re.findall(r"physicOffset=(\d+), physicSize=(\d+), tagsCode=(-?\d+)", cq)
    assert len(units) == 3 and {int(tags) for _, _, tags in units} == {java_string_hash("TagA")}
    assert rocketq_run.facts["exported topic"] == {"order": False, "perm": 6, "readQueueNums": QUEUES,
                                                   "topicFilterType": "SINGLE_TAG", "topicName": nm.topic,
                                                   "topicSysFlag": 0, "writeQueueNums": QUEUES}  # fmt: skip
    assert rocketq_run.facts["exported group"]["groupName"] == nm.group
    for label in ("deleteExpiredCommitLog", "cleanExpiredCQ", "cleanUnusedTopic"):
        assert rocketq_run[label].stdout == "success", label
    assert rocketq_run["deleteSubGroup"].lines()[0].startswith(f"delete subscription group [{nm.group}]")
    assert rocketq_run.facts["state"]["group"] is None and rocketq_run["getConsumerConfig deleted"].stdout == ""
    assert "conflict with system topic" in rocketq_run["deleteTopic system"].stderr
    assert rocketq_run.facts["state"]["delay queues"] is not None
    assert rocketq_run["deleteTopic"].lines()[0] == f"delete topic [{nm.topic}] from cluster [{CLUSTER}] success."
    assert nm.topic not in rocketq_run["topicList after"].lines() and rocketq_run.facts["state"]["topic"] is None


def test_no_command_failed_that_should_work(rocketq_run: Transcript) -> None:
    expected_failures = {"sendMessage too big", "sendMessage read-only", "updateOrderConf get deleted",
                         "deleteTopic system"}  # fmt: skip
    failed = {label for label, run in rocketq_run.runs.items() if run.failed}
    assert failed == expected_failures, {k: rocketq_run[k].stderr[-800:] for k in failed - expected_failures}


# ------------------------------------------------------------------------------ rocketq against Java 4.9.7


def normalise(text: str, target: Target) -> str:
    """What legitimately differs between two runs on two clusters: addresses, client and message ids, times,
    file paths, and commit-log offsets (the Java broker serves the whole test session, so its commit log holds
    other tests' messages too). Runs of blanks become one (mqadmin pads columns to the widest value)."""
    text = text.replace(target.namesrv, "<NAMESRV>").replace(target.broker_addr, "<BROKER>")
    text = text.replace(target.names.suffix, CANON.suffix)
    text = re.sub(r"\d+\.\d+\.\d+\.\d+@\d+#\d+", "<CLIENT>", text)
    text = re.sub(r"/?\d{1,3}(?:\.\d{1,3}){3}:\d+", "<ADDR>", text)
    text = re.sub(r"\b(?:[0-9A-F]{32}|[0-9A-F]{56})\b", "<MSGID>", text)
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:,\d{3})?", "<TIME>", text)
    text = re.sub(r"\b1\d{12}\b", "<EPOCH_MS>", text)
    text = re.sub(r"(?:/tmp|/work)/\S+", "<PATH>", text)
    text = re.sub(r"(commitLogOffset=|CommitLog Offset:\s+|physicOffset=)\d+", r"\1<OFFSET>", text)
    text = re.sub(r"(storeSize=|physicSize=)\d+", r"\1<SIZE>", text)  # compared on their own: test_stored_sizes...
    text = re.sub(r"[ \t]+", " ", text)
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


def failure(run: Run) -> str:
    """A failed command as the differential sees it: the exception chain's classes and response codes."""
    causes = re.findall(r"^(?:Caused by: )?([\w.$]+(?:Exception|Error))(?:: (?:CODE: (\d+))?)?", run.stderr, re.M)
    return " <- ".join(f"{cls}{':' + code if code else ''}" for cls, code in causes)


def _numbers_out(text: str) -> str:
    return re.sub(r"-?\d+(?:\.\d+)?", "<N>", text)


def _lines_sorted(text: str) -> str:
    return "\n".join(sorted(text.splitlines()))


def _only(text: str, *names: str) -> str:
    """The lines naming one of ``names`` (and headers): the Java broker also holds other tests' topics and groups."""
    return "\n".join(line for line in text.splitlines() if line.startswith("#") or any(n in line for n in names))


#: the scenario's names once normalised (the suffix of a run becomes this one)
CANON = Names("_RUN")


def known_topics(names: Names) -> frozenset[str]:
    """The topics a fresh broker of either kind lists, and the scenario's; the Java broker also lists other tests'
    topics, and RMQ_SYS_TRANS_HALF_TOPIC once its transaction check has run (60 s after start; rocketq creates it
    with the first transactional message: deliberate, documented)."""
    return frozenset(
        {"SCHEDULE_TOPIC_XXXX", "BenchmarkTest", "OFFSET_MOVED_EVENT", "TBW102", "SELF_TEST_TOPIC", CLUSTER,
         BROKER_NAME, f"{CLUSTER}_REPLY_TOPIC", names.topic, names.perm_topic, f"%RETRY%{names.group}",
         f"%DLQ%{names.group}"}
    )  # fmt: skip


def _known_topics(text: str) -> str:
    """topicList's lines of the known topics, sorted (it prints a hash set)."""
    known = known_topics(CANON)
    return "\n".join(sorted(ln for ln in text.splitlines() if ln.startswith("#") or set(ln.split()) & known))


#: How each step's output is compared, after ``normalise``, when it is not simply equal: a function of the
#: normalised text (applied to both sides), or ``None`` for a step compared by hand in its own test below.
def _retry_queue_rows_out(text: str) -> str:
    """Rows of the group's own empty retry queue appear once the consumer's first long-polled pull of it ends
    (the broker holds it up to 15 s) and its offset is next persisted: a matter of time on either broker."""
    return "\n".join(line for line in text.splitlines() if not line.startswith("%RETRY%"))


def _rates_out(text: str) -> str:
    """consumerStatus -i's RT&TPS rows without their RT and TPS figures (the failed-message count stays)."""
    return re.sub(r"^(\S+)(?: [\d.]+){5} (\d+)$", r"\1 <RT/TPS> \2", text, flags=re.M)


SHAPED = {
    "topicList": _known_topics,
    "topicList -c": _known_topics,
    "topicList after": _known_topics,
    # printed in hash order
    "printMsg": lambda t: "\n".join(sorted(t.split("--------------------------------------------------------"))),
    "resetOffsetByTime online": _lines_sorted,
    # the Java broker serves the whole session: its totals, topic counts and groups include other tests'
    "clusterList -m": _numbers_out,
    "clusterList -m after": _numbers_out,
    "wipeWritePerm": _numbers_out,
    "addWritePerm": _numbers_out,
    "consumerProgress": lambda t: re.sub(r"(CLUSTERING|BROADCASTING) \d+", r"\1 <TPS>", _only(t, CANON.group)),
    # one ConsumeStats per topic of the group, in the order of Java's hash set (the names' hashes) or sorted
    "brokerConsumeStats": lambda t: _lines_sorted(_only(t, CANON.group)),
    # the group's consume TPS: rocketq counts at once, Java from its 10-s samples (deliberate, documented)
    "consumerProgress -g": lambda t: _retry_queue_rows_out(re.sub(r"Consume TPS: [\d.]+", "Consume TPS: <TPS>", t)),
    "consumerProgress offline": lambda t: re.sub(r"Consume TPS: [\d.]+", "Consume TPS: <TPS>", t),
    "statsAll": _numbers_out,
    # the offsets of every queue, in the hash order of Java's map
    "skipAccumulatedMessage": _lines_sorted,
    # round-trip times (and the queue each send picked)
    "sendMsgStatus": _numbers_out,
    "checkMsgSendRT": _numbers_out,
    # a consumer's running info: its own start time and the queue times in it
    # ... and its pull / consume RTs and rates, which are times
    "consumerStatus -i": lambda t: _retry_queue_rows_out(_rates_out(re.sub(r"Timestamp=\d+", "Timestamp=<N>", t))),
    "queryMsgById -g -d": lambda t: re.sub(r"spentTimeMills=\d+", "spentTimeMills=<N>", t),
    "clusterList": None,
    "brokerStatus": None,
    "getBrokerConfig": None,
    "getBrokerConfig after": None,
    "getNamesrvConfig": None,
    "getNamesrvConfig after": None,
    "resetOffsetByTime offline": None,
    "producer": None,
}


def test_every_command_prints_what_it_prints_against_the_java_broker(
    rocketq_run: Transcript, java_run: Transcript
) -> None:
    assert list(rocketq_run.runs) == list(java_run.runs)
    mismatches = []
    for label, rq in rocketq_run.runs.items():
        java = java_run[label]
        if label in SHAPED and SHAPED[label] is None:
            continue
        if java.failed or rq.failed:
            if failure(rq) != failure(java):
                mismatches.append(f"{label}: rocketq {failure(rq)!r}, Java {failure(java)!r}")
            continue
        shape = SHAPED.get(label) or (lambda t: t)
        ours, theirs = shape(normalise(rq.stdout, rocketq_run.target)), shape(normalise(java.stdout, java_run.target))
        if ours != theirs:
            mismatches.append(f"{label}:\n--- Java\n{theirs}\n+++ rocketq\n{ours}")
    assert not mismatches, "\n\n".join(mismatches)


def test_what_the_sdk_saw_and_the_export_agree_but_for_the_read_only_send(
    rocketq_run: Transcript, java_run: Transcript
) -> None:
    ours = {k: v for k, v in rocketq_run.facts.items() if k.startswith(("sdk ", "exported "))}
    theirs = {k: v for k, v in java_run.facts.items() if k.startswith(("sdk ", "exported "))}
    # deliberate: Java 4.9 stores a send to a queue the route marks read-only; rocketq refuses it
    assert theirs.pop("sdk send to the read-only topic") == "SEND_OK"
    assert ours.pop("sdk send to the read-only topic") == "NoPermissionError:16"
    assert ours == theirs
    assert rocketq_run.facts["received_after_reset"] == java_run.facts["received_after_reset"]


def test_stored_sizes_differ_by_the_last_properties_separator(rocketq_run: Transcript, java_run: Transcript) -> None:
    """Deliberate: rocketq stores the properties text with its last 0x02 separator, Java 4.9 without it."""

    def sizes(run: Run) -> list[int]:
        return [int(n) for n in re.findall(r"(?:storeSize|physicSize)=(\d+)", run.stdout)]

    for label in ("printMsg", "consumeMessage", "queryCq"):
        ours, theirs = sizes(rocketq_run[label]), sizes(java_run[label])
        assert len(ours) == len(theirs) > 0, label
        assert {o - t for o, t in zip(ours, theirs, strict=True)} == {1}, label


def test_cluster_list_and_broker_status_against_the_java_broker(rocketq_run: Transcript, java_run: Transcript) -> None:
    # clusterList: one row of ten columns; the version column says rocketq, and Java's #Hour is computed from
    # an earliest message time of -1 on a young store (a 4.9 quirk), so only the shape of the numbers compares
    ours, theirs = columns(rocketq_run["clusterList"]), columns(java_run["clusterList"])
    assert len(ours) == len(theirs) == 1
    assert ours[0][:4] == [CLUSTER, BROKER_NAME, "0", rocketq_run.target.broker_addr] and theirs[0][4] == "V4_9_7"
    assert _numbers_out(" ".join(ours[0][-5:])) == _numbers_out(" ".join(theirs[0][-5:]))
    # brokerStatus: Java's keys, less those of thread pools and latency histograms rocketq does not have, and
    # plus a few of rocketq's own. Keys named after a path or a delay level (Java's scheduleMessageOffset_<level>,
    # once another test sent a delayed message to the session's broker) are left out.
    def keys(run: Run) -> set[str]:
        return {k for k in key_values(run, ":") if not k.startswith(("commitLogDiskRatio_", "scheduleMessageOffset_"))}

    ours_keys, theirs_keys = keys(rocketq_run["brokerStatus"]), keys(java_run["brokerStatus"])
    assert theirs_keys - ours_keys == JAVA_ONLY_RUNTIME_KEYS
    assert ours_keys - theirs_keys == ROCKETQ_ONLY_RUNTIME_KEYS


#: runtime keys of things rocketq does not have: thread pools besides the send queue, put latency histograms
JAVA_ONLY_RUNTIME_KEYS = frozenset(
    {
        "EndTransactionQueueSize", "EndTransactionThreadPoolQueueCapacity", "pullThreadPoolQueueCapacity",
        "queryThreadPoolQueueCapacity", "queryThreadPoolQueueHeadWaitTimeMills", "queryThreadPoolQueueSize",
        "putLatency99", "putLatency999", "putMessageDistributeTime", "putMessageEntireTimeMax",
        "getMessageEntireTimeMax",
    }
)  # fmt: skip
ROCKETQ_ONLY_RUNTIME_KEYS = frozenset(
    {"brokerName", "brokerRole", "flushDiskType", "heldPullRequests", "commitLogFlushedOffset", "storeRunningFlags",
     "aclEnable",  # whether the broker checks ACL (docs/security.md)
     # the disk-full keys (docs/reliability.md)
     "storeDiskFull", "storeDiskFreeBytes", "storeDiskMinFreeBytes", "storeForcedCleanFiles", "storeForcedCleanBytes",
     "storeForcedCleanLastRatio", "storeForcedCleanLastTimeStamp"}
)  # fmt: skip


#: keys either test harness sets (JavaCluster.write_broker_conf, EmbeddedCluster's TEST_BROKER_DEFAULTS), or that
#: name this host, its ports and its paths: their values differ by set-up, not by broker
HARNESS_KEYS = frozenset(TEST_BROKER_DEFAULTS) | {
    "brokerClusterName", "brokerName", "brokerId", "brokerIP1", "brokerIP2", "listenPort", "haListenPort",
    "namesrvAddr", "storePathRootDir", "storePathCommitLog", "mappedFileSizeCommitLog", "autoCreateTopicEnable",
    "autoCreateSubscriptionGroup", "kvConfigPath", "rocketmqHome",
}  # fmt: skip
#: rocketq's own settings, which Java does not have (docs/compatibility.md)
ROCKETQ_ONLY_CONFIG_KEYS = frozenset(
    {
        "busyPollMaxMicros", "clientChannelExpiredTimeMills", "clientScanIntervalMills",
        "consumerOffsetPersistIntervalMills", "diskCheckInterval", "diskMinFreeBytes", "fastListenPortEnable",
        "listenHost", "lockMaxLiveTimeMills",
        # the commit log's page-cache recycling behind the writer (docs/performance.md)
        "commitLogCachedBytes",
        "maxFrameSize", "maxTopicQueueNums", "scheduleIntervalMills", "sendQueueCapacity",
        # remoting limits, the broker's and the name server's (docs/reliability.md)
        "serverMaxConnections", "serverMaxPartialFrameBytes", "serverWriteBufferHighWaterMark",
        "serverWriteBufferLowWaterMark", "serverMaxWriteBufferBytes",
        # the name server's (Java 5's names), and its KV table bound (docs/reliability.md)
        "brokerChannelExpiredTime", "scanNotActiveBrokerInterval", "kvConfigMaxBytes",
        # ACL (docs/security.md): the file (Java: system property rocketmq.acl.plain.file), its poll, the
        # stricter admin-only code and resource sets
        "aclFilePath", "aclReloadIntervalMills", "aclStrictAdmin", "aclStrictResources",
        # security beyond Java 4.9 (docs/security.md): the bind check, the broker's own account for its
        # registrations, the name server's account file, TLS (Java reads these as system properties, not config)
        "allowInsecureBind", "accessKey", "secretKey", "aclFile",
        "tlsServerMode", "tlsServerCertPath", "tlsServerKeyPath", "tlsServerNeedClientAuth", "tlsServerTrustCertPath",
        "tlsEnable", "tlsClientTrustCertPath", "tlsClientAuthServer",
        "tls.server.mode", "tls.server.certPath", "tls.server.keyPath", "tls.server.need.client.auth",
        "tls.server.trustCertPath",
        # the Prometheus endpoint (docs/metrics.md): Java 5.1's keys, which 4.9 does not have
        "metricsExporterType", "metricsPromExporterPort", "metricsPromExporterHost",
        # replication (docs/replication.md): a slave's pause before reconnecting (Java hard-codes 5 s), and
        # SlaveSynchronize's period (Java: a fixed 10 s)
        "haReconnectInterval", "slaveSyncIntervalMills", "haAllowedAddresses",
        # RocketMQ 5's POP (Java 5's names; docs/pop.md) and the gRPC endpoint (the 5.x proxy's; docs/grpc.md)
        "reviveQueueNum", "reviveInterval", "popPollingMapSize", "grpcServerEnable", "grpcServerPort",
        "enableTopicMessageTypeCheck",
        # the broker's 5.x controller mode (Java 5's names; a 4.9 broker has none)
        "enableControllerMode", "controllerAddr", "brokerHeartbeatInterval", "syncBrokerMetadataPeriod",
        "checkSyncStateSetPeriod", "haMaxTimeSlaveNotCatchup", "controllerHeartBeatTimeoutMills",
        "brokerElectionPriority", "allAckInSyncStateSet",
        # the name server's embedded 5.x controller (Java 5's names; a 4.9 name server has none)
        "enableControllerInNamesrv", "enableElectUncleanMaster", "notifyBrokerRoleChanged", "controllerStorePath",
    }
)  # fmt: skip


@pytest.mark.parametrize("label", ["getBrokerConfig", "getBrokerConfig after", "getNamesrvConfig",
                                   "getNamesrvConfig after"])  # fmt: skip
def test_configs_agree_on_every_key_both_have(rocketq_run: Transcript, java_run: Transcript, label: str) -> None:
    """rocketq prints the keys it has (Java also prints those of its thread pools, Netty, DLedger...); on every
    key both print and neither test harness sets, the values agree: the same defaults, the same change."""
    ours, theirs = key_values(rocketq_run[label], "="), key_values(java_run[label], "=")
    unlisted = sorted(set(ours) - set(theirs) - ROCKETQ_ONLY_CONFIG_KEYS)
    assert not unlisted, f"rocketq-only keys missing from ROCKETQ_ONLY_CONFIG_KEYS: {unlisted}"
    common = (set(ours) & set(theirs)) - HARNESS_KEYS
    assert len(common) >= (30 if label.startswith("getBroker") else 2)
    assert {k: ours[k] for k in common} == {k: theirs[k] for k in common}


def test_an_offline_reset_ends_in_the_same_offsets(rocketq_run: Transcript, java_run: Transcript) -> None:
    """Deliberate: for a group with no consumer online, Java answers CONSUMER_NOT_ONLINE and mqadmin falls back to
    setting each queue's offset itself (its older table); rocketq resets the stored offsets (the newer table)."""
    ours, theirs = columns(rocketq_run["resetOffsetByTime offline"]), columns(java_run["resetOffsetByTime offline"])
    assert "#rollbackOffset" in java_run["resetOffsetByTime offline"].stdout
    assert {int(r[1]): int(r[2]) for r in ours} == {int(r[1]): int(r[5]) for r in theirs}


# ------------------------------------------------------- CLONE_GROUP_OFFSET (314), which mqadmin does not send


async def _clone_offsets_on(addr: str, suffix: str) -> dict[str, dict[int, int]]:
    """The same CLONE_GROUP_OFFSET requests against one broker; every destination group's offsets after them.

    (mqadmin's cloneGroupOffset reads the source's consume stats and commits each queue itself; 314 is what
    MQClientAPIImpl.cloneGroupOffset sends.)"""
    topic, other, src = f"CloneTopic{suffix}", f"CloneOther{suffix}", f"CloneSrc{suffix}"
    rc = RemotingClient()
    try:
        w = Wire(rc, addr)
        for t in (topic, other):
            create = {"topic": t, "defaultTopic": "TBW102", "readQueueNums": "2", "writeQueueNums": "2", "perm": "6",
                      "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}  # fmt: skip
            assert (await w.call(RequestCode.UPDATE_AND_CREATE_TOPIC, create)).code == ResponseCode.SUCCESS
        for qid in (0, 0, 1):
            assert (await w.send(topic, b"x", queue_id=qid)).code == ResponseCode.SUCCESS
        for qid, offset in ((0, 2), (1, 1)):
            upd = {"consumerGroup": src, "topic": topic, "queueId": qid, "commitOffset": offset}
            assert (await w.call(RequestCode.UPDATE_CONSUMER_OFFSET, upd)).code == ResponseCode.SUCCESS

        async def clone(dest: str, **ext: str) -> None:
            resp = await w.call(RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": src, "destGroup": dest, **ext})
            assert resp.code == ResponseCode.SUCCESS, resp.remark

        await clone(f"CloneTopicDest{suffix}", topic=topic, offline="false")
        await clone(f"CloneAllDest{suffix}")  # no topic: every topic the source has offsets on
        # the source online, subscribed to another topic only: skipped unless offline
        hb = HeartbeatData(f"clone-client{suffix}", [], [ConsumerData(src, subscriptions=[SubscriptionData.of(other)])])
        assert (await w.call(RequestCode.HEART_BEAT, body=hb.encode())).code == ResponseCode.SUCCESS
        await clone(f"CloneOnlineDest{suffix}", topic=topic, offline="false")
        await clone(f"CloneOfflineDest{suffix}", topic=topic, offline="true")
        table = fastjson.loads((await w.call(RequestCode.GET_ALL_CONSUMER_OFFSET)).body)["offsetTable"]
    finally:
        await rc.close()
    return {k.partition("@")[2]: {int(q): int(o) for q, o in v.items()}
            for k, v in table.items() if k.startswith(f"{topic}@") and "Dest" in k}  # fmt: skip


@pytest.mark.asyncio(loop_scope="module")  # the rocketq cluster of ``rocketq_run`` serves in the module's loop
async def test_clone_group_offset_agrees_with_the_java_broker_but_for_the_blank_topic(
    rocketq_run: Transcript, own_java_broker: JavaCluster
) -> None:
    """Deliberate: without a topic Java loops over the source's topics but clones the header's (blank) topic
    each time, so nothing is cloned; rocketq clones each topic of the loop."""
    suffix = NAMES.suffix
    ours = await _clone_offsets_on(rocketq_run.target.broker_addr, suffix)
    theirs = await _clone_offsets_on(own_java_broker.broker_addr, suffix)
    cloned = {0: 2, 1: 1}
    assert theirs == {f"CloneTopicDest{suffix}": cloned, f"CloneOfflineDest{suffix}": cloned}
    assert ours == {**theirs, f"CloneAllDest{suffix}": cloned}


def _producer_lines(run: Run) -> dict[str, dict[str, str]]:
    """mqadmin producer's ``producer group (G) instance : clientId=..,remoteIP=.., ...`` lines, by group."""
    out = {}
    for m in re.finditer(r"^producer group \((.+?)\) instance : (.*)$", run.stdout, re.M):
        out[m[1]] = dict(kv.strip().split("=", 1) for kv in m[2].split(","))
    return out


def test_producer_lists_the_live_producer_as_the_java_broker_does(
    rocketq_run: Transcript, java_run: Transcript
) -> None:
    ours, theirs = _producer_lines(rocketq_run["producer"]), _producer_lines(java_run["producer"])
    group = NAMES.producer_group
    assert ours[group]["clientId"] == rocketq_run.facts["producer_client_id"]
    for info in (ours[group], theirs[group]):
        assert re.fullmatch(r"/127\.0\.0\.1:\d+", info["remoteIP"]) and int(info["lastUpdateTimestamp"]) > 0
    same = ("language", "version")
    assert {k: ours[group][k] for k in same} == {k: theirs[group][k] for k in same}
    assert set(ours) == set(theirs)  # the same groups: the SDK's producer and mqadmin's own inner ones


def test_the_commands_of_the_issue_23_table_do_their_job_on_rocketq(rocketq_run: Transcript) -> None:
    nm = rocketq_run.target.names
    shares = json.loads(rocketq_run["allocateMQ"].stdout.strip().splitlines()[-1])["result"]
    assert [len(shares[ip]) for ip in ("10.0.0.1", "10.0.0.2", "10.0.0.3")] == [2, 1, 1]  # 4 queues, averagely
    skipped = {int(r[1]): int(r[2]) for r in columns(rocketq_run["skipAccumulatedMessage"])}
    assert skipped == {q: n + (q == MQADMIN_QUEUE) for q, n in enumerate(PER_QUEUE)}  # each queue's end
    configs = rocketq_run.facts["export configs"]
    assert configs["brokerConfigs"][BROKER_NAME]["brokerName"] == BROKER_NAME
    assert configs["clusterScale"] == {"namesrvSize": 1, "masterBrokerSize": 1, "slaveBrokerSize": 0}
    report = rocketq_run.facts["export metrics"]["evaluateReport"][BROKER_NAME]["runtimeQuota"]
    assert report["oneDayNum"]["normalOneDayInNum"] == 0 and report["topicSize"] >= 1 and report["groupSize"] >= 1
    assert len(re.findall(r"SEND_OK", rocketq_run["sendMsgStatus"].stdout)) == 2
    assert nm.topic in rocketq_run["printMsgByQueue"].stdout


def test_docs_cli_table_names_every_mqadmin_command(rocketq_run: Transcript) -> None:
    """docs/cli.md's "mqadmin 4.9.7 → rocketq" table has a row for every command the stock mqadmin lists, each
    with a rocketq command or "not applicable" and a reason (issue 23: no "missing")."""
    listed = re.findall(r"^ {3}(\w+) ", rocketq_run["help"].stdout, re.M)
    assert len(listed) > 50, rocketq_run["help"].stdout
    text = (Path(__file__).resolve().parents[3] / "docs" / "cli.md").read_text()
    table = text.split("## mqadmin 4.9.7 → rocketq", 1)[1]
    rows = {m[0]: (m[1], m[2].strip()) for m in re.findall(r"^\| `(\w+)` \| (.+?) \|(.*)\|$", table, re.M)}
    assert sorted(rows) == sorted(listed)
    for name, (rocketq_cmd, notes) in rows.items():
        assert "missing" not in rocketq_cmd.lower(), name
        assert rocketq_cmd.startswith("`") or (rocketq_cmd == "not applicable" and len(notes) > 40), name


def _shape(doc: object) -> object:
    """A JSON document's member names, all levels down, without the values."""
    if isinstance(doc, dict):
        return {k: _shape(v) for k, v in doc.items()}
    return None


def test_exported_configs_and_metrics_have_the_java_brokers_members(
    rocketq_run: Transcript, java_run: Transcript
) -> None:
    ours, theirs = rocketq_run.facts["export configs"], java_run.facts["export configs"]
    assert _shape(ours) == _shape(theirs)
    assert ours["clusterScale"] == theirs["clusterScale"]
    ours, theirs = rocketq_run.facts["export metrics"], java_run.facts["export metrics"]
    # deliberate: exportMetrics reads the CPU count from Java's clientCallbackExecutorThreads, a Netty pool
    # setting rocketq has no counterpart for (its runtimeEnv is empty; fastjson leaves out the null)
    theirs["evaluateReport"][BROKER_NAME]["runtimeEnv"].pop("cpuNum", None)
    assert _shape(ours) == _shape(theirs)
