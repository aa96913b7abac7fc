"""A running broker whose state holds values that cannot be saved keeps working and keeps what is good.

The gate refuses such values in requests; these tests put them straight into the managers (as a bug could),
then check that normal work goes on and that a graceful restart keeps every good topic, group and offset.
"""

from __future__ import annotations

import pytest

from rocketq.broker.managers.subscription_manager import SubscriptionGroupConfig
from rocketq.codes import RequestCode
from rocketq.errors import ConfigError
from rocketq.protocol.bodies import TopicConfig, dumps
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire

HUGE = 2**70

FAST = {"consumerOffsetPersistIntervalMills": 100}


def _topic(name: str) -> dict[str, str]:
    return {"topic": name, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6",
            "topicFilterType": "SINGLE_TAG"}  # fmt: skip


@pytest.mark.parametrize("cluster", [FAST], indirect=True)
async def test_poisoned_managers_do_not_stop_commits_new_topics_groups_or_a_restart(
    wire: Wire, cluster: EmbeddedCluster
) -> None:
    broker = cluster.broker
    assert (await wire.send("TGood", b"m")).code == 0
    q = {"consumerGroup": "gGood", "topic": "TGood", "queueId": "0"}
    assert (await wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, {**q, "commitOffset": "1"})).code == 0
    # the poison: an offset, a topic flag and a group's broker id no file (and no Java reader) can hold
    broker.offsets.table["TGood@gBad"] = {0: HUGE}
    broker.topics.table["TBad"] = TopicConfig("TBad", 4, 4, topic_sys_flag=HUGE)
    broker.groups.table["gBad"] = SubscriptionGroupConfig("gBad", broker_id=HUGE)

    # normal work after it: an offset commit (saved by the periodic task), a new topic, a new group
    assert (await wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, {**q, "commitOffset": "2"})).code == 0
    created = await wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, _topic("TNew"))
    assert created.code == 0, created.remark
    group = SubscriptionGroupConfig("gNew", retry_max_times=5).to_json()
    created = await wire.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=dumps(group))
    assert created.code == 0, created.remark
    assert (await wire.send("TNew", b"n")).code == 0
    assert (await wire.pull("TNew", 0, 0, group="gNew")).code == 0
    assert (await wire.pull("TNew", 0, 0, group="gAuto")).code == 0  # a group created by its first pull
    for code in (RequestCode.GET_ALL_CONSUMER_OFFSET, RequestCode.GET_ALL_TOPIC_CONFIG,
                 RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG):  # fmt: skip
        assert (await wire.call(code)).code == 0
    await broker.offsets.persist_in_background(broker.persister)

    broker = await cluster.restart_broker()
    assert broker.offsets.query("gGood", "TGood", 0) == 2
    assert broker.offsets.query("gBad", "TGood", 0) == -1
    assert {"TGood", "TNew"} <= set(broker.topics.table) and "TBad" not in broker.topics.table
    new_group = broker.groups.get("gNew")
    assert new_group is not None and new_group.retry_max_times == 5 and broker.groups.get("gBad") is None
    assert broker.groups.get("gAuto") is not None


async def test_a_save_that_fails_at_shutdown_does_not_stop_the_others_or_the_store(
    wire: Wire, cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = cluster.broker
    assert (await wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, _topic("TKept"))).code == 0
    q = {"consumerGroup": "g", "topic": "TKept", "queueId": "0"}
    assert (await wire.send("TKept", b"m", queue_id=0)).code == 0
    assert (await wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, {**q, "commitOffset": "1"})).code == 0
    broker.groups.update(SubscriptionGroupConfig("gKept"))

    def disk_says_no() -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(broker.offsets, "persist", disk_says_no)
    stopped: list[bool] = []
    store_shutdown = broker.store.shutdown

    def recorded_shutdown() -> None:
        stopped.append(True)
        store_shutdown()

    monkeypatch.setattr(broker.store, "shutdown", recorded_shutdown)
    assert await broker.shutdown() is False  # the CLI exits 1 on this
    assert stopped == [True]
    monkeypatch.undo()
    broker = await cluster.start_broker(0)
    assert "TKept" in broker.topics.table and broker.groups.get("gKept") is not None
    assert broker.store.get_max_offset_in_queue("TKept", 0) == 1


def test_the_cli_exit_code_says_whether_everything_was_saved() -> None:
    from rocketq.cli.broker_commands import _run

    async def saved() -> bool:
        return True

    async def not_saved() -> bool:
        return False

    async def bad_file() -> bool:
        raise ConfigError("topics.json", "entry 'T' readQueueNums is 'x', not an integer")

    assert _run("broker", saved) == 0
    assert _run("broker", not_saved) == 1
    assert _run("broker", bad_file) == 2
