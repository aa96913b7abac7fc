"""Reads from a slave and the rocketq client across a master's death, in one event loop.

A name server, broker group ``broker-a`` (master + slave) and a master-only group ``broker-b``. The slave copies
its master's topics, groups and offsets (SlaveSynchronize). The master of ``broker-a`` stops: the producer's
sends keep succeeding (the group without a master leaves its publish list when the connection failure makes it
fetch the route again — the periodic poll is set to a minute, so it plays no part), a push consumer consumes
``broker-a``'s backlog from the slave and commits its offsets there. The master comes back: the slave's next
sync copies the master's (older) offsets over the ones committed to it, as Java's slave does.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from rocketq.broker.managers.subscription_manager import SubscriptionGroupConfig
from rocketq.broker.role import BrokerRole
from rocketq.client import AdminClient, ClientConfig, ConsumeFromWhere, Message, Producer, PushConsumer, SendStatus
from rocketq.protocol import fastjson
from rocketq.protocol.bodies import TopicConfig
from rocketq.testing import EmbeddedCluster
from rocketq.testing.process import start_broker_process
from rocketq.testing.waiting import until

TOPIC = "TSlaveRead"
GROUP = "cg-slave-read"
BROKER = {"slaveSyncIntervalMills": 300, "haSendHeartbeatInterval": 200, "haReconnectInterval": 100}



def client_config(namesrv: str) -> ClientConfig:
    # no periodic route poll during the test: only the failure-triggered refresh can move the clients
    return ClientConfig(namesrv_addr=namesrv, poll_name_server_interval=60.0, heartbeat_broker_interval=0.5,
                        persist_consumer_offset_interval=0.3)  # fmt: skip


async def test_clients_move_to_the_slave_and_the_other_group_when_a_master_stops(tmp_path: Path) -> None:
    async with EmbeddedCluster(tmp_path, brokers=2, **BROKER) as cluster:
        master_a, master_b = cluster.brokers[0], cluster.brokers[1]
        slave = await cluster.start_slave(0)
        async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
            for broker in (master_a, master_b):
                await admin.create_topic(TOPIC, broker_addr=broker.config.broker_addr, read_queue_nums=2,
                                         write_queue_nums=2)  # fmt: skip
        producer = Producer("pg-slave-read", config=client_config(cluster.namesrv_addr))
        await producer.start()
        try:
            sent: dict[str, str] = {}  # msg id → broker name
            for i in range(40):
                r = await producer.send(Message(TOPIC, f"before-{i}".encode()))
                assert r.status is SendStatus.SEND_OK
                sent[r.msg_id] = r.message_queue.broker_name
            on_a = sum(1 for name in sent.values() if name == "broker-a")
            assert 0 < on_a < 40
            # the slave holds every byte and, once synchronized, the topic (else its pulls: TOPIC_NOT_EXIST)
            await until(lambda: slave.store.get_max_phy_offset() == master_a.store.get_max_phy_offset()
                        and slave.topics.get(TOPIC) is not None)  # fmt: skip

            await master_a.shutdown()  # broker-a has no master now

            after: list[str] = []
            for i in range(40):  # every send succeeds: a failed attempt is retried on broker-b
                r = await producer.send(Message(TOPIC, f"after-{i}".encode()))
                assert r.status is SendStatus.SEND_OK
                after.append(r.message_queue.broker_name)
            assert set(after) == {"broker-b"}
            # the connection failure refreshed the route: broker-a (no master) left the publish list
            assert producer.instance.failure_refresh.count >= 1
            queues = producer.topic_publish_info_table[TOPIC].message_queues
            assert {q.broker_name for q in queues} == {"broker-b"}

            got: set[str] = set()
            consumer = PushConsumer(GROUP, config=client_config(cluster.namesrv_addr), rebalance_interval=0.5,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
            consumer.subscribe(TOPIC, "*")
            consumer.register_message_listener(lambda msgs, ctx: got.update(m.msg_id for m in msgs))
            await consumer.start()
            try:
                await until(lambda: set(sent) <= got)  # broker-a's messages came from its slave
                # offsets of broker-a's queues were committed to the slave (a pull never commits on a slave)
                key = f"{TOPIC}@{GROUP}"
                await until(lambda: sum(slave.offsets.table.get(key, {}).values()) == on_a)
            finally:
                await consumer.shutdown()
        finally:
            await producer.shutdown()

        # the master comes back (its store as it was) with none of those offsets: the slave takes the master's
        master_a = await cluster.restart_broker(0)
        assert master_a.offsets.table.get(key) is None
        master_a.offsets.commit(GROUP, TOPIC, 0, 1)
        # Java's putAll: the master's topic@group entry replaces the slave's whole entry
        await until(lambda: slave.offsets.table.get(key) == {0: 1})


async def test_slave_synchronize_copies_topics_groups_and_delay_offsets_until_promoted(tmp_path: Path) -> None:
    async with EmbeddedCluster(tmp_path, **BROKER) as cluster:
        master = cluster.broker
        master.groups.update(SubscriptionGroupConfig("cg-synced", retry_max_times=3, broker_id=1))
        master.topics.update(TopicConfig("TSynced", 3, 3))
        master.schedule.offsets[2] = 17  # a delay level's progress
        slave = await cluster.start_slave(0)
        await until(lambda: slave.slave_sync.rounds >= 1 and slave.groups.get("cg-synced") is not None)
        assert slave.topics.get("TSynced") == master.topics.get("TSynced")
        assert slave.topics.data_version == master.topics.data_version
        assert slave.groups.get("cg-synced") == master.groups.get("cg-synced")
        delay = fastjson.loads((Path(slave.config.storePathRootDir) / "config" / "delayOffset.json").read_bytes())
        assert delay["offsetTable"]["2"] == 17
        # a newer table on the master replaces the slave's; a topic gone from the master is gone
        assert master.topics.delete("TSynced")
        await until(lambda: slave.topics.get("TSynced") is None)
        # promoted: the copying stops, and the delay service starts from the copied progress
        slave.role.change(BrokerRole.ASYNC_MASTER, epoch=1, broker_id=0)
        assert slave._slave_sync_task is None and slave.schedule.offsets.get(2) == 17
        rounds = slave.slave_sync.rounds
        master.topics.update(TopicConfig("TLate", 1, 1))
        await asyncio.sleep(0.7)  # two sync intervals: no round runs on a master
        assert slave.slave_sync.rounds == rounds and slave.topics.get("TLate") is None


async def test_a_slave_signs_its_sync_requests_for_a_master_with_acl(tmp_path: Path) -> None:
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(yaml.safe_dump({"accounts": [{"accessKey": "rocketmq2", "secretKey": "admin-secret",
                                                      "admin": True}]}))  # fmt: skip
    async with EmbeddedCluster(tmp_path / "c", aclEnable=True, aclFilePath=str(acl_file), **BROKER) as cluster:
        cluster.broker.topics.update(TopicConfig("TAclSynced", 2, 2))
        anonymous = await cluster.start_slave(0, broker_id=1)
        signed = await cluster.start_slave(0, broker_id=2, accessKey="rocketmq2", secretKey="admin-secret")
        await until(lambda: signed.topics.get("TAclSynced") is not None and anonymous.slave_sync.rounds >= 2)
        assert anonymous.topics.get("TAclSynced") is None  # refused: GET_ALL_* are admin requests


MASTER_PROCESS = (
    "brokerName=broker-a", "registerNameServerPeriod=1000", "fastListenPortEnable=false",
    "mappedFileSizeCommitLog=4194304", "mappedFileSizeConsumeQueue=20000", "maxHashSlotNum=1000", "maxIndexNum=4000",
    "haSendHeartbeatInterval=200", "consumerOffsetPersistIntervalMills=200",
)  # fmt: skip


async def test_the_rocketq_client_across_a_master_killed_with_minus_9(tmp_path: Path) -> None:
    """``broker-a``'s master is a separate process killed with SIGKILL (no unregistration: the name server
    drops it when its connection closes). A consumer group read phase "a" (offsets on the master, copied to
    the slave); phase "b" waits unread. After the kill every send succeeds (on ``broker-b``), and a new consumer
    of the group reads "b" — ``broker-a``'s part from the slave, from the offsets the slave copied (nothing of
    "a" again) — and "c". The master restarts: the slave takes the master's offsets (end of "a") again."""
    store = f"storePathRootDir={tmp_path / 'master-a'}"
    async with EmbeddedCluster(tmp_path, brokers=0, **BROKER) as cluster:
        namesrv = cluster.namesrv
        assert namesrv is not None
        master, master_addr = await start_broker_process(cluster.namesrv_addr, store, *MASTER_PROCESS)
        try:
            await until(lambda: "broker-a" in namesrv.route_info.broker_addr_table)
            slave = await cluster.start_slave(0)
            broker_b = await cluster.start_broker(1)
            async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
                for addr in (master_addr, broker_b.config.broker_addr):
                    await admin.create_topic(TOPIC, broker_addr=addr, read_queue_nums=2, write_queue_nums=2)
            await until(lambda: slave.topics.get(TOPIC) is not None)
            key = f"{TOPIC}@{GROUP}"

            async with Producer("pg-kill", config=client_config(cluster.namesrv_addr)) as producer:

                async def phase(name: str) -> dict[str, tuple[str, int]]:
                    out = {}
                    for i in range(20):
                        r = await producer.send(Message(TOPIC, f"{name}-{i}".encode()))
                        assert r.status is SendStatus.SEND_OK
                        out[r.msg_id] = (r.message_queue.broker_name, r.message_queue.queue_id)
                    return out

                a = await phase("a")
                first: set[str] = set()
                consumer = consumer_of(cluster.namesrv_addr, first)
                await consumer.start()
                await until(lambda: set(a) <= first)
                await consumer.shutdown()  # its offsets are on the master ...
                a_on_a = sum(queue_ends(a))
                # ... and the slave's SlaveSynchronize copied them
                await until(lambda: sum(slave.offsets.offsets_of(GROUP, TOPIC).values()) == a_on_a)
                after_a = slave.offsets.offsets_of(GROUP, TOPIC)
                b = await phase("b")
                await until(lambda: all(slave.store.get_max_offset_in_queue(TOPIC, q) == n
                                        for q, n in enumerate(queue_ends(b, a))))  # fmt: skip

                master.kill()  # SIGKILL
                await master.wait()
                c = await phase("c")  # every send succeeds: an attempt on broker-a is retried on broker-b
                assert {name for name, _ in c.values()} == {"broker-b"}
                # the refresh the failures triggered (debounced: the first may come before the name server has
                # seen the connection close, the next within a second) drops broker-a from the publish list
                info = producer.topic_publish_info_table
                await until(lambda: {q.broker_name for q in info[TOPIC].message_queues} == {"broker-b"}, timeout=10)
                assert producer.instance.failure_refresh.count >= 1

            second: set[str] = set()
            consumer = consumer_of(cluster.namesrv_addr, second)
            await consumer.start()
            try:
                await until(lambda: set(b) | set(c) <= second)
                await until(lambda: sum(slave.offsets.offsets_of(GROUP, TOPIC).values()) == sum(queue_ends(b, a)))
            finally:
                await consumer.shutdown()
            assert not second & {m for m, (name, _) in a.items() if name == "broker-a"}  # "a" is not read again

            # the master is back: the slave takes its offsets (the end of "a") over the ones committed to it
            master, master_addr = await start_broker_process(cluster.namesrv_addr, store, *MASTER_PROCESS)
            await until(lambda: slave.offsets.offsets_of(GROUP, TOPIC) == after_a)
            assert key in slave.offsets.table
        finally:
            if master.returncode is None:
                master.kill()
                await master.wait()


def consumer_of(namesrv: str, got: set[str]) -> PushConsumer:
    consumer = PushConsumer(GROUP, config=client_config(namesrv), rebalance_interval=0.5,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
    consumer.subscribe(TOPIC, "*")
    consumer.register_message_listener(lambda msgs, ctx: got.update(m.msg_id for m in msgs))
    return consumer


def queue_ends(*phases: dict[str, tuple[str, int]]) -> list[int]:
    """How many messages of ``phases`` went to broker-a's queues 0 and 1 (their ends: both start empty)."""
    ends = [0, 0]
    for phase in phases:
        for name, queue_id in phase.values():
            if name == "broker-a":
                ends[queue_id] += 1
    return ends
