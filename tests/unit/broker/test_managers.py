import asyncio
from pathlib import Path

import orjson

from rocketq.broker.managers.client_manager import ConsumerManager, ProducerManager
from rocketq.broker.managers.lock_manager import QueueLockManager
from rocketq.broker.managers.offset_manager import ConsumerOffsetManager
from rocketq.broker.managers.subscription_manager import SubscriptionGroupManager
from rocketq.broker.managers.topic_manager import TopicConfigManager, topic_name_error
from rocketq.protocol.bodies import ConsumerData, MessageQueue, SubscriptionData, TopicConfig


class FakeConn:
    def __init__(self, name: str) -> None:
        self.remote = name
        self.language = "JAVA"
        self.version = 409
        self.closed = False
        self.sent: list[object] = []

    def close(self) -> None:
        self.closed = True

    def send_oneway(self, cmd: object) -> None:
        self.sent.append(cmd)


def make_topics(tmp_path: Path, **kw: object) -> TopicConfigManager:
    return TopicConfigManager(tmp_path, cluster_name="C", broker_name="b", **kw)  # type: ignore[arg-type]


def test_system_topics_and_tbw102(tmp_path: Path) -> None:
    tm = make_topics(tmp_path)
    tbw = tm.get("TBW102")
    assert tbw is not None and tbw.perm == 7 and tbw.write_queue_nums == 8
    assert tm.get("SCHEDULE_TOPIC_XXXX") is not None
    assert make_topics(tmp_path, auto_create_topic_enable=False).get("TBW102") is None


def test_trace_topic_exists_from_the_start_only_when_enabled(tmp_path: Path) -> None:
    # Java's TopicConfigManager: traceTopicEnable adds msgTraceTopicName with one read and one write queue.
    assert make_topics(tmp_path).get("RMQ_SYS_TRACE_TOPIC") is None
    tm = make_topics(tmp_path, auto_create_topic_enable=False, trace_topic="RMQ_SYS_TRACE_TOPIC")
    tc = tm.get("RMQ_SYS_TRACE_TOPIC")
    assert tc is not None and (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (1, 1, 6)


def test_auto_create_takes_min_queue_nums_and_drops_inherit(tmp_path: Path) -> None:
    tm = make_topics(tmp_path)
    tc = tm.create_in_send("NewTopic", "TBW102", 4)
    assert tc is not None and tc.write_queue_nums == 4 and tc.read_queue_nums == 4 and tc.perm == 6
    tc2 = tm.create_in_send("Big", "TBW102", 100)
    assert tc2 is not None and tc2.write_queue_nums == 8
    assert tm.create_in_send("X", "NoSuchTemplate", 4) is None


def test_topics_persist_and_reload(tmp_path: Path) -> None:
    tm = make_topics(tmp_path)
    tm.update(TopicConfig("T1", 3, 3, 6))
    raw = orjson.loads((tmp_path / "topics.json").read_bytes())
    assert raw["topicConfigTable"]["T1"]["writeQueueNums"] == 3
    assert "counter" in raw["dataVersion"]
    tm2 = make_topics(tmp_path)
    tm2.load()
    assert tm2.get("T1") == TopicConfig("T1", 3, 3, 6)


def test_topic_name_rules() -> None:
    assert topic_name_error("Good_topic-1|%") is None
    assert topic_name_error("") is not None
    assert topic_name_error("a" * 128) is not None
    assert topic_name_error("bad topic") is not None


def test_offsets_persist_with_quoted_keys(tmp_path: Path) -> None:
    om = ConsumerOffsetManager(tmp_path)
    om.commit("g", "T", 0, 5)
    om.commit("g", "T", 1, 7)
    om.persist()
    raw = orjson.loads((tmp_path / "consumerOffset.json").read_bytes())
    assert raw == {"offsetTable": {"T@g": {"0": 5, "1": 7}}}
    om2 = ConsumerOffsetManager(tmp_path)
    om2.load()
    assert om2.query("g", "T", 1) == 7
    assert om2.query("g", "T", 2) == -1
    assert om2.query("other", "T", 0) == -1


def test_offsets_fall_back_to_backup(tmp_path: Path) -> None:
    om = ConsumerOffsetManager(tmp_path)
    om.commit("g", "T", 0, 1)
    om.persist()
    om.commit("g", "T", 0, 2)
    om.persist()
    (tmp_path / "consumerOffset.json").write_text("{ not json")
    om2 = ConsumerOffsetManager(tmp_path)
    om2.load()
    assert om2.query("g", "T", 0) == 1


def test_subscription_groups_auto_create(tmp_path: Path) -> None:
    sm = SubscriptionGroupManager(tmp_path)
    cfg = sm.find_or_create("g1")
    assert cfg is not None and cfg.retry_max_times == 16 and cfg.retry_queue_nums == 1
    assert SubscriptionGroupManager(tmp_path, auto_create=False).find_or_create("g2") is None
    sm2 = SubscriptionGroupManager(tmp_path)
    sm2.load()
    assert sm2.get("g1") is not None


def test_consumer_membership_changes_notify() -> None:
    now = [0.0]
    cm = ConsumerManager(clock=lambda: now[0])
    changes: list[list[str]] = []
    cm.on_members_changed = lambda g, info: changes.append(info.client_ids())
    c1, c2 = FakeConn("c1"), FakeConn("c2")
    data = ConsumerData("g", subscriptions=[SubscriptionData.of("T", "A || B", sub_version=1)])
    assert cm.register(c1, "id1", data)  # type: ignore[arg-type]
    assert not cm.register(c1, "id1", data)  # type: ignore[arg-type]
    assert cm.register(c2, "id2", data)  # type: ignore[arg-type]
    assert changes == [["id1"], ["id1", "id2"]]
    sub = cm.find_subscription("g", "T")
    assert sub is not None and sorted(sub.tags_set) == ["A", "B"]
    cm.connection_closed(c1)  # type: ignore[arg-type]
    assert changes[-1] == ["id2"]
    now[0] = 200.0
    cm.scan_expired(120.0)
    assert cm.get("g") is None and c2.closed


def test_producer_manager_picks_live_channel() -> None:
    pm = ProducerManager()
    c = FakeConn("p")
    pm.register(c, "pid", "pg")  # type: ignore[arg-type]
    ch = pm.any_channel("pg")
    assert ch is not None and ch.client_id == "pid"
    c.closed = True
    assert pm.any_channel("pg") is None


def test_queue_locks_exclusive_with_lease() -> None:
    now = [0.0]
    lm = QueueLockManager(lease=60.0, clock=lambda: now[0])
    q0, q1 = MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)
    assert lm.try_lock_batch("g", [q0, q1], "A") == [q0, q1]
    assert lm.try_lock_batch("g", [q0, q1], "B") == []
    assert lm.try_lock_batch("other-group", [q0], "B") == [q0]
    lm.unlock_batch("g", [q1], "A")
    assert lm.try_lock_batch("g", [q0, q1], "B") == [q1]
    now[0] = 61.0
    assert lm.try_lock_batch("g", [q0], "B") == [q0]
    assert lm.holder("g", q0) == "B"


async def test_pull_hold_wakes_on_matching_arrival_and_on_timeout() -> None:
    from rocketq.broker.services.long_polling import PullHoldService
    from rocketq.protocol.command import RemotingCommand

    reruns: list[int] = []

    def rerun(conn: object, cmd: RemotingCommand) -> RemotingCommand:
        reruns.append(cmd.opaque)
        return cmd.response(0)

    class Conn(FakeConn):
        def write(self, cmd: object) -> None:
            self.sent.append(cmd)

    from rocketq.remoting.server import RemotingDispatcher

    svc = PullHoldService(rerun, RemotingDispatcher().reply)  # type: ignore[arg-type]
    conn = Conn("c")
    a = RemotingCommand(code=11, opaque=1)
    b = RemotingCommand(code=11, opaque=2)
    svc.hold(conn, a, "T", 0, 5, 30.0, lambda code: code == 42)  # type: ignore[arg-type]
    svc.hold(conn, b, "T", 0, 5, 0.05, None)  # type: ignore[arg-type]
    svc.notify_arrival("T", 0, 6, 7)  # tag does not match a; b has no filter
    assert reruns == [2]
    svc.notify_arrival("T", 1, 6, 42)  # other queue
    assert reruns == [2]
    svc.notify_arrival("T", 0, 6, 42)
    assert reruns == [2, 1]
    c = RemotingCommand(code=11, opaque=3)
    svc.hold(conn, c, "T", 0, 5, 0.05, None)  # type: ignore[arg-type]
    await asyncio.sleep(0.2)
    assert reruns == [2, 1, 3]
    assert svc.held_count() == 0


async def test_a_runs_arrivals_wake_held_pulls_on_the_loop_and_from_other_threads() -> None:
    import threading

    from rocketq.broker.services.long_polling import PullHoldService
    from rocketq.protocol.command import RemotingCommand
    from rocketq.remoting.server import RemotingDispatcher

    reruns: list[int] = []

    def rerun(conn: object, cmd: RemotingCommand) -> RemotingCommand:
        reruns.append(cmd.opaque)
        return cmd.response(0)

    class Conn(FakeConn):
        def write(self, cmd: object) -> None:
            self.sent.append(cmd)

    svc = PullHoldService(rerun, RemotingDispatcher().reply)  # type: ignore[arg-type]
    svc.start()
    conn = Conn("c")
    for opaque, queue_id in ((1, 0), (2, 1), (3, 2)):
        svc.hold(conn, RemotingCommand(code=11, opaque=opaque), "T", queue_id, 5, 30.0,  # type: ignore[arg-type]
                 lambda code: code == 42)  # fmt: skip
    svc.on_arrivals([("T", 0, 6, 7), ("T", 1, 6, 42), ("T", 0, 7, 42), ("U", 2, 9, 42)])  # on the loop: at once
    assert reruns == [2, 1]  # queue 0 woken by its second arrival only (tags); topic U holds nobody
    worker = threading.Thread(target=svc.on_arrivals, args=([("T", 2, 6, 42)],))
    worker.start()
    worker.join()
    await asyncio.sleep(0.05)  # another thread's arrivals reach the loop
    assert reruns == [2, 1, 3] and svc.held_count() == 0


def test_a_corrupt_config_file_stops_loading_and_names_the_file(tmp_path: Path) -> None:
    import pytest

    from rocketq.broker.managers.persist import ConfigFileError

    topics = make_topics(tmp_path)
    topics.path.parent.mkdir(parents=True, exist_ok=True)
    topics.path.write_text("{not json")
    with pytest.raises(ConfigFileError, match=r"topics\.json"):
        topics.load()
    topics.path.with_name("topics.json.bak").write_text('{"topicConfigTable": {}}')
    topics.load()  # the backup is good: it is used


async def test_a_topic_change_is_written_off_the_loop_and_flushed_waits_for_it(tmp_path: Path) -> None:
    import threading

    from rocketq.broker.managers.persist import BackgroundWriter, read_json
    from rocketq.protocol.bodies import TopicConfig

    writer = BackgroundWriter()
    topics = make_topics(tmp_path, writer=writer)
    threads: list[str] = []
    original = topics.snapshot

    def snapshot():  # type: ignore[no-untyped-def]
        build = original()

        def traced():  # type: ignore[no-untyped-def]
            threads.append(threading.current_thread().name)
            return build()

        return traced

    topics.snapshot = snapshot  # type: ignore[method-assign]
    topics.update(TopicConfig("TWritten", 4, 4, 6))
    await topics.flushed()
    assert threads and threads[0].startswith("rocketq-persist")
    assert "TWritten" in read_json(topics.path)["topicConfigTable"]
    writer.close()


async def test_a_woken_pull_whose_rerun_fails_is_answered_system_error() -> None:
    from rocketq.broker.services.long_polling import PullHoldService
    from rocketq.protocol.command import RemotingCommand

    answers: list[object] = []

    def rerun(conn: object, cmd: RemotingCommand) -> RemotingCommand:
        raise RuntimeError("boom")

    svc = PullHoldService(rerun, lambda conn, cmd, resp: answers.append(resp))  # type: ignore[arg-type]
    svc.hold(FakeConn("c"), RemotingCommand(code=11, opaque=1), "T", 0, 5, 30.0, None)  # type: ignore[arg-type]
    svc.notify_arrival("T", 0, 6, None)
    assert len(answers) == 1 and answers[0].code == 1 and "boom" in (answers[0].remark or "")  # type: ignore[attr-defined]
