"""Persistence that one bad entry cannot poison: each manager leaves an entry it cannot write out of its file
(logged once, the others saved), and a file with a bad entry names the file and the entry at start-up."""

from __future__ import annotations

import logging
from pathlib import Path

import orjson
import pytest

from rocketq.broker.managers.lock_manager import QueueLockManager, _Lock
from rocketq.broker.managers.offset_manager import ConsumerOffsetManager
from rocketq.broker.managers.persist import ConfigFileError, read_json
from rocketq.broker.managers.sink_watermark import PendingCommit, SinkState, SinkWatermarkManager
from rocketq.broker.managers.subscription_manager import SubscriptionGroupConfig, SubscriptionGroupManager
from rocketq.broker.managers.topic_manager import TopicConfigManager
from rocketq.errors import BrokerError, ProtocolError
from rocketq.protocol.bodies import MessageQueue, TopicConfig
from rocketq.protocol.sink import StagedRange

HUGE = 2**70  # orjson cannot encode it; Java's int and long cannot hold it


def make_topics(path: Path) -> TopicConfigManager:
    return TopicConfigManager(path, cluster_name="C", broker_name="b")


def dropped(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "persist.entry_dropped" in r.getMessage()]


def write(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(doc))


# ------------------------------------------------------------------------------------------ saving


def test_offsets_a_bad_queue_is_left_out_and_logged_once_the_rest_is_saved(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    offsets = ConsumerOffsetManager(tmp_path)
    offsets.commit("good", "T", 0, 5)
    offsets.commit("bad", "T", 0, 7)
    offsets.table["T@bad"][1] = HUGE  # what a request without a range check once stored
    offsets.table["T@bad"][2**40] = 3  # a queue id beyond Java's int
    offsets.table["T@neg"] = {0: -(2**63) - 1}
    with caplog.at_level(logging.ERROR):
        offsets.persist()
        offsets.persist()  # each bad entry is logged once, not on every write
    lines = dropped(caplog)
    assert len(lines) == 3
    assert any("ConsumerOffsetManager" in line and "T@bad queue 1" in line and "long" in line for line in lines)
    assert any(f"T@bad queue {2**40}" in line and "int" in line for line in lines)
    saved = read_json(offsets.path)
    assert saved == {"offsetTable": {"T@bad": {"0": 7}, "T@good": {"0": 5}, "T@neg": {}}}
    again = ConsumerOffsetManager(tmp_path)
    again.load()
    assert again.query("good", "T", 0) == 5 and again.query("bad", "T", 0) == 7 and again.query("bad", "T", 1) == -1
    # GET_ALL_CONSUMER_OFFSET's document leaves it out too (its encoding no longer fails)
    assert "1" not in offsets.to_json()["offsetTable"]["T@bad"]


def test_topics_a_bad_topic_is_left_out_of_the_file_and_of_the_registration(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    topics = make_topics(tmp_path)
    topics.update(TopicConfig("Good", 4, 4))
    topics.table["Bad"] = TopicConfig("Bad", 4, 4, topic_sys_flag=HUGE)
    topics.table["Wide"] = TopicConfig("Wide", 2**31, 4)  # encodable, but not a Java int
    with caplog.at_level(logging.ERROR):
        topics.persist()
    lines = dropped(caplog)
    assert len(lines) == 2 and any("'Bad'" in line and "topicSysFlag" in line for line in lines)
    saved = read_json(topics.path)
    assert saved is not None and "Good" in saved["topicConfigTable"]
    assert not {"Bad", "Wide"} & set(saved["topicConfigTable"])
    assert "Good" in topics.good_table() and "Bad" not in topics.good_table()
    assert "Bad" not in topics.wrapper_json()["topicConfigTable"]  # type: ignore[operator]
    again = make_topics(tmp_path)
    again.load()
    assert again.get("Good") == TopicConfig("Good", 4, 4) and again.get("Bad") is None


def test_topics_and_groups_refuse_what_they_could_not_save(tmp_path: Path) -> None:
    topics = make_topics(tmp_path)
    with pytest.raises(BrokerError, match="topicSysFlag"):
        topics.update(TopicConfig("Bad", 4, 4, topic_sys_flag=HUGE))
    assert topics.get("Bad") is None
    groups = SubscriptionGroupManager(tmp_path)
    with pytest.raises(BrokerError, match="brokerId"):
        groups.update(SubscriptionGroupConfig("g", broker_id=HUGE))
    assert groups.get("g") is None


def test_groups_a_bad_group_is_left_out_the_rest_is_saved(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    groups = SubscriptionGroupManager(tmp_path)
    groups.update(SubscriptionGroupConfig("good", retry_max_times=3))
    groups.table["bad"] = SubscriptionGroupConfig("bad", broker_id=HUGE)
    with caplog.at_level(logging.ERROR):
        groups.persist()
    assert any("'bad'" in line and "brokerId" in line for line in dropped(caplog))
    again = SubscriptionGroupManager(tmp_path)
    again.load()
    good = again.get("good")
    assert good is not None and good.retry_max_times == 3 and again.get("bad") is None
    assert "bad" not in groups.to_json()["subscriptionGroupTable"]


def test_locks_a_bad_lock_is_left_out(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    locks = QueueLockManager(60.0, path=tmp_path / "queueLocks.json")
    good = MessageQueue("T", "b", 0)
    assert locks.try_lock_batch("g", [good], "A") == [good]
    locks._locks["g"][MessageQueue("T", "b", HUGE)] = _Lock("A", locks.clock())
    with caplog.at_level(logging.ERROR):
        locks.persist()
    assert any("queueId" in line for line in dropped(caplog))
    saved = read_json(locks.path)
    assert saved is not None and [e["queueId"] for e in saved["locks"]] == [0]


def test_sinks_an_intent_that_cannot_be_recorded_is_refused_before_it_is_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sinks = SinkWatermarkManager(tmp_path)
    sinks.complete("good", 4)
    with pytest.raises(ProtocolError, match="batchId"):
        sinks.begin("s", PendingCommit(HUGE, 0, [StagedRange(0, 1, 1)]))
    assert sinks.get("s").pending is None
    sinks.table["bad"] = SinkState(last_batch_id=HUGE)
    with caplog.at_level(logging.ERROR):
        sinks.complete("good", 5)
    assert any("'bad'" in line and "lastBatchId" in line for line in dropped(caplog))
    again = SinkWatermarkManager(tmp_path)
    again.load()
    assert again.get("good").last_batch_id == 5 and "bad" not in again.table


# ----------------------------------------------------------------------------------------- loading


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("readQueueNums", "eight", "not an integer"),
        ("writeQueueNums", 8.5, "not an integer"),
        ("perm", 2**31, "outside Java's int range"),
        ("topicSysFlag", 1e23, "not an integer"),  # what orjson reads 2^70 written by another tool as
        ("order", "yes", "not a boolean"),
    ],
)
def test_topics_a_bad_entry_stops_start_up_naming_file_entry_and_field(
    tmp_path: Path, field: str, value: object, why: str
) -> None:
    topics = make_topics(tmp_path)
    entry = {"topicName": "T", "readQueueNums": 8, "writeQueueNums": 8, "perm": 6, field: value}
    write(topics.path, {"topicConfigTable": {"Fine": {"topicName": "Fine"}, "T": entry}})
    with pytest.raises(ConfigFileError) as err:
        topics.load()
    text = str(err.value)
    assert "topics.json" in text and "'T'" in text and field in text and why in text
    assert topics.get("Fine") is None  # nothing of a refused file is taken


def test_topics_a_bad_entry_falls_back_to_a_good_backup_like_java(tmp_path: Path) -> None:
    topics = make_topics(tmp_path)
    write(topics.path, {"topicConfigTable": {"T": {"topicName": "T", "readQueueNums": "x"}}})
    write(topics.path.with_name("topics.json.bak"), {"topicConfigTable": {"T": {"topicName": "T", "readQueueNums": 2}}})
    topics.load()
    tc = topics.get("T")
    assert tc is not None and tc.read_queue_nums == 2


@pytest.mark.parametrize(
    ("queues", "entry", "why"),
    [
        ({"0": "abc"}, "T@g queue 0", "not an integer"),
        ({"0": 1e23}, "T@g queue 0", "not an integer"),
        ({"zero": 1}, "T@g queue zero", "not an integer"),
        ({"0": 2**63}, "T@g queue 0", "outside Java's long range"),
        ([1, 2], "T@g", "not an object"),
    ],
)
def test_offsets_a_bad_entry_stops_start_up_naming_it(tmp_path: Path, queues: object, entry: str, why: str) -> None:
    offsets = ConsumerOffsetManager(tmp_path)
    write(offsets.path, {"offsetTable": {"T@ok": {"0": 1}, "T@g": queues}})
    with pytest.raises(ConfigFileError) as err:
        offsets.load()
    text = str(err.value)
    assert "consumerOffset.json" in text and repr(entry) in text and why in text


def test_groups_and_data_version_bad_entries_stop_start_up(tmp_path: Path) -> None:
    groups = SubscriptionGroupManager(tmp_path)
    write(groups.path, {"subscriptionGroupTable": {"g": {"groupName": "g", "brokerId": "one"}}})
    with pytest.raises(ConfigFileError, match=r"subscriptionGroup\.json.*'g' brokerId is 'one'"):
        groups.load()
    write(groups.path, {"dataVersion": {"counter": "x"}, "subscriptionGroupTable": {}})
    with pytest.raises(ConfigFileError, match="dataVersion"):
        groups.load()


def test_locks_a_bad_lock_in_the_file_is_skipped_the_rest_are_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    locks = QueueLockManager(60.0, path=tmp_path / "queueLocks.json")
    now = locks.clock()
    good = {"group": "g", "topic": "T", "brokerName": "b", "queueId": 0, "clientId": "A", "lastUpdate": now}
    write(locks.path, {"locks": [good, {**good, "queueId": 1, "lastUpdate": "soon"}, "junk"]})
    with caplog.at_level(logging.WARNING):
        locks.load()
    assert locks.holder("g", MessageQueue("T", "b", 0)) == "A"
    assert locks.holder("g", MessageQueue("T", "b", 1)) is None
    skipped = [r.getMessage() for r in caplog.records if "persist.entry_skipped" in r.getMessage()]
    assert len(skipped) == 2 and any("lastUpdate" in line for line in skipped)

