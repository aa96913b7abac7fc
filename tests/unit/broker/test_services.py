"""The transport-neutral services built alone — real managers and store in a temp dir, no sockets — and
checked on their outcomes."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from pathlib import Path

import pytest
from tests.unit.broker.conftest import RecordingRegistrar, make_context

from rocketq.broker.context import BrokerContext
from rocketq.broker.messaging.consumers import ConsumerService
from rocketq.broker.messaging.pull import PullService
from rocketq.broker.messaging.semantics import MessageSemantics
from rocketq.broker.messaging.send import SendService, send_back
from rocketq.broker.role import BrokerRole, BrokerRoleState, StaleEpochError
from rocketq.broker.services.timer import TimerService
from rocketq.broker.services.transaction import TransactionService
from rocketq.codes import ResponseCode
from rocketq.protocol.bodies import SubscriptionData
from rocketq.protocol.headers import (
    PULL_FLAG_SUBSCRIPTION,
    PULL_FLAG_SUSPEND,
    ConsumerSendMsgBackRequestHeader,
    PullMessageRequestHeader,
    SendMessageRequestHeader,
)
from rocketq.protocol.message import encode_properties, iter_records

HOST = ("10.0.0.9", 50000)


def header(topic: str, queue_id: int = 0, **props: str) -> SendMessageRequestHeader:
    return SendMessageRequestHeader(
        producer_group="pg", topic=topic, queue_id=queue_id, born_timestamp=1,
        properties=encode_properties({"UNIQ_KEY": "AB" * 16, **props}),
    )  # fmt: skip


def service(ctx: BrokerContext) -> SendService:
    return SendService(ctx, MessageSemantics(TransactionService(ctx), TimerService(ctx)))


def pull_header(topic: str, offset: int = 0, sys_flag: int = PULL_FLAG_SUBSCRIPTION) -> PullMessageRequestHeader:
    return PullMessageRequestHeader(
        consumer_group="cg", topic=topic, queue_id=0, queue_offset=offset, max_msg_nums=32, sys_flag=sys_flag,
        subscription="*", suspend_timeout_millis=1000,
    )  # fmt: skip


def test_a_send_to_a_new_topic_is_stored_and_names_the_topic_it_created(ctx: BrokerContext) -> None:
    out = service(ctx).send(header("TNew"), b"hello", HOST, client_version=409, remote="r")
    assert out.ok and out.stored and out.created_topic == "TNew" and out.topic == "TNew"
    assert out.queue_offset == 0 and out.end_offset > 0
    assert ctx.topics.get("TNew") is not None
    again = service(ctx).send(header("TNew"), b"again", HOST, client_version=409, remote="r")
    assert again.created_topic is None and again.queue_offset == 1


def test_refusals_are_outcomes_and_store_nothing(ctx: BrokerContext) -> None:
    svc = service(ctx)
    assert svc.send(header("bad topic!"), b"x", HOST, client_version=409, remote="r").code == ResponseCode.SYSTEM_ERROR
    assert svc.send(header("SCHEDULE_TOPIC_XXXX"), b"x", HOST, client_version=409, remote="r").code == (
        ResponseCode.NO_PERMISSION
    )
    too_big = b"x" * (ctx.config.maxMessageSize + 1)
    assert svc.send(header("TBig"), too_big, HOST, client_version=409, remote="r").code == ResponseCode.MESSAGE_ILLEGAL
    assert svc.send(header("TBig", queue_id=99), b"x", HOST, client_version=409, remote="r").code == (
        ResponseCode.SYSTEM_ERROR
    )
    assert ctx.store.get_max_phy_offset() == 0


def test_a_slave_refuses_sends_and_follows_a_role_change(ctx: BrokerContext) -> None:
    svc = service(ctx)
    ctx.role.change(BrokerRole.SLAVE, epoch=1, master_addr="10.0.0.1:10911")
    out = svc.send(header("TRole"), b"x", HOST, client_version=409, remote="r")
    assert out.code == ResponseCode.SERVICE_NOT_AVAILABLE and not out.stored
    assert not svc.runs_open
    ctx.role.change(BrokerRole.ASYNC_MASTER, epoch=2)
    assert svc.send(header("TRole"), b"x", HOST, client_version=409, remote="r").ok


def test_a_retry_send_past_the_groups_maximum_goes_to_the_dlq(ctx: BrokerContext) -> None:
    h = SendMessageRequestHeader(
        producer_group="pg", topic="%RETRY%g1", queue_id=0, reconsume_times=16, max_reconsume_times=16,
        properties=encode_properties({"UNIQ_KEY": "CD" * 16}),
    )  # fmt: skip
    out = service(ctx).send(h, b"poison", HOST, client_version=409, remote="r")
    assert out.ok and out.topic == "%DLQ%g1"
    assert ctx.store.get_max_offset_in_queue("%DLQ%g1", 0) == 1
    assert isinstance(ctx.registrar, RecordingRegistrar) and ctx.registrar.kicks >= 1


def test_a_plain_run_stores_what_the_general_path_stores(tmp_path: Path) -> None:
    records = []
    for name, use_run in (("general", False), ("run", True)):
        c = make_context(tmp_path / name)
        try:
            svc = service(c)
            assert svc.send(header("TPlain"), b"create", HOST, client_version=409, remote="r").ok
            svc.route_registered("TPlain")
            messages = [header("TPlain", TAGS="t", KEYS=f"k{i}", WAIT="true") for i in range(5)]
            if use_run:
                run = [svc.prepare_plain(h, f"m{i}".encode(), HOST) for i, h in enumerate(messages)]
                assert all(m is not None for m in run)
                results = svc.put_plain_run([m for m in run if m is not None])
                assert [r[1] for r in results if isinstance(r, tuple)] == [1, 2, 3, 4, 5]
            else:
                for i, h in enumerate(messages):
                    assert svc.send(h, f"m{i}".encode(), HOST, client_version=409, remote="r").ok
            sel = c.store.get_commit_log_data(0)
            assert sel is not None
            records.append([(r.topic, r.body, r.properties, r.queue_offset) for r in iter_records(bytes(sel.view))])
            sel.release()
        finally:
            c.store.shutdown()
    assert records[0] == records[1] and len(records[0]) == 6
    # Java 4.9.7 stores a plain message without its WAIT property; both paths do the same
    assert all("WAIT" not in props for _, _, props, _ in records[0])


def test_wait_is_kept_where_the_store_encodes_the_properties_again(ctx: BrokerContext) -> None:
    svc = service(ctx)
    assert svc.send(header("TWait", WAIT="true"), b"plain", HOST, client_version=409, remote="r").ok
    assert svc.send(header("TWait", WAIT="true", DELAY="1"), b"delayed", HOST, client_version=409, remote="r").ok
    sel = ctx.store.get_commit_log_data(0)
    assert sel is not None
    stored = {r.body: r.properties for r in iter_records(bytes(sel.view))}
    sel.release()
    assert "WAIT" not in stored[b"plain"]
    assert stored[b"delayed"]["WAIT"] == "true"  # as Java's CommitLog keeps it for a delay level


def test_wait_is_not_stored_on_either_path(ctx: BrokerContext) -> None:
    svc = service(ctx)
    assert svc.send(header("TWait", WAIT="true", TAGS="a"), b"general", HOST, client_version=409, remote="r").ok
    svc.route_registered("TWait")
    plain = svc.prepare_plain(header("TWait", WAIT="false", TAGS="b"), b"run", HOST)
    assert plain is not None and svc.put_plain_run([plain])
    sel = ctx.store.get_commit_log_data(0)
    assert sel is not None
    stored = [r.properties for r in iter_records(bytes(sel.view))]
    sel.release()
    assert [p.get("TAGS") for p in stored] == ["a", "b"] and not any("WAIT" in p for p in stored)


def test_a_transactional_or_delayed_send_is_not_plain(ctx: BrokerContext) -> None:
    svc = service(ctx)
    assert svc.send(header("TSpecial"), b"c", HOST, client_version=409, remote="r").ok
    svc.route_registered("TSpecial")
    assert svc.prepare_plain(header("TSpecial", DELAY="3"), b"x", HOST) is None
    assert svc.prepare_plain(header("TSpecial", TRAN_MSG="true"), b"x", HOST) is None
    assert svc.prepare_plain(header("TSpecial"), b"x", HOST) is not None


def test_send_back_reroutes_to_retry_then_dlq(ctx: BrokerContext) -> None:
    sem = MessageSemantics(TransactionService(ctx), TimerService(ctx))
    out = service(ctx).send(header("TBack"), b"failed", HOST, client_version=409, remote="r")
    offset = out.end_offset - ctx.store.look_message_by_offset(0).store_size  # type: ignore[union-attr]
    h = ConsumerSendMsgBackRequestHeader(offset=offset, group="g2", delay_level=-1, origin_msg_id="ignored")
    assert send_back(ctx, sem, h, client_version=409) == (ResponseCode.SUCCESS, None)
    assert ctx.store.get_max_offset_in_queue("%DLQ%g2", 0) == 1
    original = ctx.store.look_message_by_offset(offset)
    dead = ctx.store.look_message_by_offset(out.end_offset)
    assert original is not None and dead is not None and dead.topic == "%DLQ%g2"
    # as Java's asyncConsumerSendMsgBack writes them: no wait, no delay, the original's offset id
    assert (dead.properties["WAIT"], dead.properties["DELAY"]) == ("false", "0")
    assert dead.properties["ORIGIN_MESSAGE_ID"] == original.offset_msg_id
    assert dead.properties["RETRY_TOPIC"] == "TBack" and dead.reconsume_times == 1


def test_send_back_replaces_a_blank_origin_message_id(ctx: BrokerContext) -> None:
    """Java keeps the message's ORIGIN_MESSAGE_ID unless it is blank (``UtilAll.isBlank``): then the offset id."""
    sem = MessageSemantics(TransactionService(ctx), TimerService(ctx))
    kept = "0A00000100002A9F0000000000000001"
    for topic, origin, expected in (("TBlank", " ", None), ("TEmpty", "", None), ("TKept", kept, kept)):
        offset = ctx.store.get_max_phy_offset()
        assert service(ctx).send(header(topic, ORIGIN_MESSAGE_ID=origin), b"x", HOST, client_version=409, remote="r").ok
        original = ctx.store.look_message_by_offset(offset)
        assert original is not None and original.topic == topic
        back_at = ctx.store.get_max_phy_offset()
        h = ConsumerSendMsgBackRequestHeader(offset=offset, group="gb", delay_level=-1, origin_msg_id="ignored")
        assert send_back(ctx, sem, h, client_version=409) == (ResponseCode.SUCCESS, None)
        dead = ctx.store.look_message_by_offset(back_at)
        assert dead is not None and dead.topic == "%DLQ%gb"
        assert dead.properties["ORIGIN_MESSAGE_ID"] == (expected or original.offset_msg_id)


def test_pull_outcomes(ctx: BrokerContext) -> None:
    svc = service(ctx)
    pulls = PullService(ctx)
    assert pulls.pull(pull_header("TPull"), remote="r", allow_suspend=True).code == ResponseCode.TOPIC_NOT_EXIST
    for i in range(3):
        assert svc.send(header("TPull"), f"m{i}".encode(), HOST, client_version=409, remote="r").ok
    found = pulls.pull(pull_header("TPull"), remote="r", allow_suspend=True)
    assert found.code == ResponseCode.SUCCESS and found.next_begin_offset == 3 and found.max_offset == 3
    assert [r.body for r in iter_records(found.body)] == [b"m0", b"m1", b"m2"]
    caught_up = pull_header("TPull", offset=3, sys_flag=PULL_FLAG_SUBSCRIPTION | PULL_FLAG_SUSPEND)
    parked = pulls.pull(caught_up, remote="r", allow_suspend=True)
    assert parked.code == ResponseCode.PULL_NOT_FOUND and parked.suspend_seconds == 1.0
    again = pulls.pull(caught_up, remote="r", allow_suspend=False)
    assert again.suspend_seconds == 0 and again.next_begin_offset == 3
    # a queue never written: Java's store makes its file on lookup and reports an empty queue
    empty = pulls.pull(dataclasses.replace(pull_header("TPull", offset=2), queue_id=3), remote="r", allow_suspend=True)
    assert (empty.code, empty.remark, empty.next_begin_offset) == (
        ResponseCode.PULL_OFFSET_MOVED, "NO_MESSAGE_IN_QUEUE", 0,
    )  # fmt: skip
    # a filter type other than TAG on a broker without enablePropertyFilter: SYSTEM_ERROR naming the type
    sql = dataclasses.replace(pull_header("TPull"), subscription="a = 1", expression_type="SQL92")
    refused = pulls.pull(sql, remote="r", allow_suspend=True)
    assert refused.code == ResponseCode.SYSTEM_ERROR and (refused.remark or "").endswith("filter message by SQL92")
    ctx.topics.update(type(ctx.topics.get("TPull"))("TPull", 8, 8, 0))  # type: ignore[misc]
    assert pulls.pull(pull_header("TPull"), remote="r", allow_suspend=True).code == ResponseCode.NO_PERMISSION


def test_offsets_and_the_young_queue_rule(ctx: BrokerContext) -> None:
    consumers = ConsumerService(ctx)
    assert consumers.query_offset("cg", "TOff", 0) == 0  # no offset, a young queue: start at 0
    consumers.commit_offset("cg", "TOff", 0, 7)
    assert consumers.query_offset("cg", "TOff", 0) == 7


class _HeldReplication:
    def __init__(self) -> None:
        self.waiting: list[tuple[int, object]] = []
        self.slave_ok = True

    def is_replica_ok(self, offset: int) -> bool:
        return self.slave_ok

    def add_replication_waiter(self, offset: int, callback: object) -> None:
        self.waiting.append((offset, callback))


async def test_put_ack_waits_for_a_slave_on_a_sync_master(tmp_path: Path) -> None:
    c = make_context(tmp_path, role=BrokerRole.SYNC_MASTER)
    try:
        replication = _HeldReplication()
        c.store.set_replication_hook(replication)
        c.put_ack.start()
        svc = service(c)
        assert svc.runs_open  # runs are stored; the processor waits for the slave once per run
        out = svc.send(header("TSync"), b"x", HOST, client_version=409, remote="r")
        codes: list[int] = []
        assert c.put_ack.wait(out.end_offset, codes.append)
        assert codes == [] and replication.waiting[0][0] == out.end_offset
        done = threading.Event()

        def from_a_thread() -> None:
            replication.waiting[0][1](False)  # type: ignore[operator]
            done.set()

        threading.Thread(target=from_a_thread).start()
        done.wait(5)
        for _ in range(50):
            if codes:
                break
            await asyncio.sleep(0.01)
        assert codes == [ResponseCode.FLUSH_SLAVE_TIMEOUT]

        replication.slave_ok = False  # no slave connected, or too far behind: answered without a wait
        codes.clear()
        out = svc.send(header("TSync"), b"y", HOST, client_version=409, remote="r")
        assert c.put_ack.wait(out.end_offset, codes.append)
        for _ in range(50):
            if codes:
                break
            await asyncio.sleep(0.01)
        assert codes == [ResponseCode.SLAVE_NOT_AVAILABLE] and len(replication.waiting) == 1
    finally:
        c.store.shutdown()


def test_put_ack_is_immediate_on_an_async_master(ctx: BrokerContext) -> None:
    assert ctx.put_ack.immediate
    assert not ctx.put_ack.wait(100, lambda code: pytest.fail("no wait expected"))


def test_the_role_epoch_only_grows() -> None:
    role = BrokerRoleState(BrokerRole.ASYNC_MASTER)
    seen: list[tuple[str, str]] = []
    role.on_change(lambda before, after: seen.append((before.role.value, after.role.value)))
    role.change(BrokerRole.SLAVE, epoch=3, master_addr="m:1")
    assert role.is_slave and role.epoch == 3 and role.master_addr == "m:1"
    with pytest.raises(StaleEpochError):
        role.change(BrokerRole.ASYNC_MASTER, epoch=2)
    assert role.is_slave and seen == [("ASYNC_MASTER", "SLAVE")]
    role.change(BrokerRole.SYNC_MASTER, epoch=4)
    assert role.waits_for_slave and role.master_addr is None



async def test_admin_topics_groups_and_offset_resets(ctx: BrokerContext) -> None:
    from rocketq.broker.managers.subscription_manager import SubscriptionGroupConfig
    from rocketq.broker.messaging.admin import AdminService
    from rocketq.protocol.bodies import TopicConfig

    admin = AdminService(ctx)
    assert (await admin.create_topic(TopicConfig("bad name", 4, 4, 6)))[0] == ResponseCode.SYSTEM_ERROR
    assert (await admin.create_topic(TopicConfig("TAdm", 0, 4, 6)))[0] == ResponseCode.SYSTEM_ERROR
    assert (await admin.create_topic(TopicConfig("TAdm", 4, 4, 6, "NO_SUCH_TYPE")))[0] == ResponseCode.SYSTEM_ERROR
    # system topics, as Java's TopicValidator.isSystemTopic: the fixed set, rmq_sys_*, the broker's own names
    for name in ("TBW102", "RMQ_SYS_TRACE_TOPIC", "rmq_sys_x", ctx.config.brokerClusterName, ctx.config.brokerName,
                 f"{ctx.config.brokerClusterName}_REPLY_TOPIC"):  # fmt: skip
        code, remark = await admin.create_topic(TopicConfig(name, 4, 4, 6))
        assert code == ResponseCode.SYSTEM_ERROR and "conflict with system topic" in (remark or ""), name
        assert admin.delete_topic(name)[0] == ResponseCode.SYSTEM_ERROR
    assert ctx.topics.get("TBW102") is not None and ctx.topics.get("TBW102").perm == 7  # type: ignore[union-attr]
    assert admin.delete_topic("bad name")[0] == ResponseCode.SYSTEM_ERROR
    assert await admin.create_topic(TopicConfig("TAdm", 2, 2, 6)) == (ResponseCode.SUCCESS, None)
    registrar = ctx.registrar
    assert isinstance(registrar, RecordingRegistrar) and registrar.registrations == 1
    for i in range(3):
        assert service(ctx).send(header("TAdm"), f"m{i}".encode(), HOST, client_version=409, remote="r").ok
    offsets = await admin.topic_offsets("TAdm")
    assert offsets is not None and [q.max_offset for q in offsets] == [3, 0]
    assert await admin.reset_offsets("g", "TAdm", -1, force=True) == [(0, 3), (1, 0)]
    assert [q.consumer_offset for q in (await admin.consume_offsets("g", None))["TAdm"]] == [3, 0]
    # a group that never committed: offset 0 on every read queue (Java's getConsumeStats), no store time
    fresh = (await admin.consume_offsets("never", "TAdm"))["TAdm"]
    assert [(q.consumer_offset, q.max_offset, q.last_timestamp) for q in fresh] == [(0, 3, 0), (0, 0, 0)]
    assert admin.update_group(SubscriptionGroupConfig("g", retry_max_times=3)) == (ResponseCode.SUCCESS, None)
    assert ctx.groups.get("g") is not None and ctx.groups.get("g").retry_max_times == 3  # type: ignore[union-attr]
    assert admin.delete_group("g") == (ResponseCode.SUCCESS, None)
    assert ctx.groups.get("g") is None and ctx.offsets.offsets_of("g", "TAdm") == {0: 3, 1: 0}  # kept, as Java
    assert admin.delete_group("g", remove_offsets=True) == (ResponseCode.SUCCESS, None)
    assert ctx.offsets.offsets_of("g", "TAdm") == {}
    assert admin.delete_topic("TAdm") == (ResponseCode.SUCCESS, None)
    assert await admin.topic_offsets("TAdm") is None
    assert await admin.reset_offsets("g", "TAdm", -1, force=True) is None


async def test_admin_refuses_system_topics_and_changes_on_a_slave(ctx: BrokerContext) -> None:
    from rocketq.broker.managers.subscription_manager import SubscriptionGroupConfig
    from rocketq.broker.messaging.admin import AdminService
    from rocketq.protocol.bodies import TopicConfig

    admin = AdminService(ctx)
    for system in ("TBW102", "SCHEDULE_TOPIC_XXXX", "BenchmarkTest", "RMQ_SYS_TRACE_TOPIC", "rmq_sys_wheel_timer"):
        conflict = (ResponseCode.SYSTEM_ERROR, f"The topic[{system}] is conflict with system topic.")
        assert await admin.create_topic(TopicConfig(system, 4, 4, 6)) == conflict
        assert admin.delete_topic(system) == conflict
    assert ctx.topics.get("SCHEDULE_TOPIC_XXXX") is not None  # still there
    assert admin.delete_topic("bad name")[0] == ResponseCode.SYSTEM_ERROR
    ctx.role.change(BrokerRole.SLAVE, epoch=1, master_addr="m:1")
    from_slave = "Can't modify topic or subscription group from slave broker, please execute it from master broker."
    assert await admin.create_topic(TopicConfig("TSlave", 1, 1, 6)) == (ResponseCode.SYSTEM_ERROR, from_slave)
    assert admin.delete_topic("TSlave") == (ResponseCode.SYSTEM_ERROR, from_slave)
    assert admin.update_group(SubscriptionGroupConfig("g")) == (ResponseCode.SYSTEM_ERROR, from_slave)
    assert admin.delete_group("g") == (ResponseCode.SYSTEM_ERROR, from_slave)


def test_check_client_config_names_the_expression_type(ctx: BrokerContext) -> None:
    """CHECK_CLIENT_CONFIG without enablePropertyFilter: SYSTEM_ERROR naming the subscription's type, as Java's
    ClientManageProcessor.checkClientConfig writes it (it said SQL92 whatever the type)."""
    consumers = ConsumerService(ctx)
    for expression_type in ("SQL92", "BOGUS"):
        code, remark = consumers.check_subscription(SubscriptionData.of("T", "a = 1", expression_type))
        assert (code, remark) == (
            ResponseCode.SYSTEM_ERROR, f"The broker does not support consumer to filter message by {expression_type}",
        )  # fmt: skip
    assert consumers.check_subscription(SubscriptionData.of("T", "A || B"))[0] == ResponseCode.SUCCESS


def test_only_sends_that_wait_for_the_store_join_a_waiting_run() -> None:
    from rocketq.broker.messaging.send import _waits_for_store

    assert _waits_for_store("")
    assert _waits_for_store("KEYS\x01k\x02WAIT\x01true\x02")
    assert _waits_for_store("WAIT\x01true")
    assert not _waits_for_store("KEYS\x01k\x02WAIT\x01false\x02")
    assert not _waits_for_store("WAIT\x01false")
    assert not _waits_for_store("NOWAIT\x01true\x02WAIT\x01false\x02")  # unusual: the general path decides
