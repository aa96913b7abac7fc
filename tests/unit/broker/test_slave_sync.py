"""SlaveSynchronize against a fake master: what each answer does to the slave's tables, and answers it cannot
use (an error code, a body that is not JSON, wrong shapes) leave the tables alone with a warning line."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.unit.broker.conftest import make_context

from rocketq.broker.context import BrokerContext
from rocketq.broker.role import BrokerRole
from rocketq.broker.services.slave_sync import SlaveSynchronize, vip_addr
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import ProtocolError, RemotingConnectError
from rocketq.protocol.command import RemotingCommand

MASTER = "10.0.0.1:10911"


@pytest.fixture
def slave(tmp_path: Path) -> Iterator[BrokerContext]:
    ctx = make_context(tmp_path, role=BrokerRole.SLAVE, brokerId=1)
    yield ctx
    ctx.store.shutdown()
    ctx.persister.close()


class FakeMaster:
    def __init__(self, answers: dict[int, tuple[int, bytes]]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, int]] = []

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        self.asked.append((addr, cmd.code))
        if addr == vip_addr(MASTER):
            raise RemotingConnectError("nothing listens on the VIP port")
        code, body = self.answers[cmd.code]
        return cmd.response(code, None if code == ResponseCode.SUCCESS else "no", body=body)


async def test_a_round_copies_the_four_tables(slave: BrokerContext) -> None:
    slave.offsets.commit("only-on-slave", "T", 0, 4)
    slave.offsets.commit("g", "T", 1, 9)
    master = FakeMaster({
        RequestCode.GET_ALL_TOPIC_CONFIG: (0, b'{"dataVersion":{"timestamp":5,"counter":7},"topicConfigTable":'
                                              b'{"T":{"topicName":"T","readQueueNums":2,"writeQueueNums":2,"perm":6}}}'),
        RequestCode.GET_ALL_CONSUMER_OFFSET: (0, b'{"offsetTable":{"T@g":{"0":3}}}'),
        RequestCode.GET_ALL_DELAY_OFFSET: (0, b'{"offsetTable":{"1":12}}'),
        RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: (0, b'{"dataVersion":{"timestamp":5,"counter":2},'
                                                          b'"subscriptionGroupTable":{"g":{"groupName":"g"}}}'),
    })  # fmt: skip
    sync = SlaveSynchronize(slave, master.invoke, lambda: MASTER)
    await sync.sync_all()
    assert set(slave.topics.table) == {"T"} and slave.topics.data_version.counter == 7
    assert set(slave.groups.table) == {"g"}
    # the master's entry replaces the slave's; an entry only the slave has stays
    assert slave.offsets.table == {"T@g": {0: 3}, "T@only-on-slave": {0: 4}}
    assert b'"1": 12' in (Path(slave.config.storePathRootDir) / "config" / "delayOffset.json").read_bytes()
    assert master.asked[:2] == [(vip_addr(MASTER), RequestCode.GET_ALL_TOPIC_CONFIG),
                                (MASTER, RequestCode.GET_ALL_TOPIC_CONFIG)]  # fmt: skip


BAD_SHAPES = (b'{"topicConfigTable":[1],"offsetTable":{"T@g":7},"subscriptionGroupTable":{"g":3},'
              b'"dataVersion":{"counter":"x"}}')  # fmt: skip


@pytest.mark.parametrize("answer", [(ResponseCode.SYSTEM_ERROR, b""), (0, b"not json"), (0, b"[1]"), (0, BAD_SHAPES)])
async def test_an_answer_it_cannot_use_changes_nothing(
    slave: BrokerContext, answer: tuple[int, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    before = (dict(slave.topics.table), dict(slave.groups.table), dict(slave.offsets.table))
    master = FakeMaster(dict.fromkeys((RequestCode.GET_ALL_TOPIC_CONFIG, RequestCode.GET_ALL_CONSUMER_OFFSET,
                                       RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG), answer)
                        | {RequestCode.GET_ALL_DELAY_OFFSET: (ResponseCode.SYSTEM_ERROR, b"")})  # fmt: skip
    sync = SlaveSynchronize(slave, master.invoke, lambda: MASTER)
    with caplog.at_level(logging.WARNING, "rocketq.broker.services.slave_sync"):
        await sync.sync_all()
    assert (dict(slave.topics.table), dict(slave.groups.table), dict(slave.offsets.table)) == before
    failures = [r for r in caplog.records if "slave_sync.failed" in r.getMessage()]
    assert len(failures) == 4 and not any(r.exc_info for r in failures)
    assert sync.rounds == 1


async def test_no_master_known_means_no_round(slave: BrokerContext) -> None:
    master = FakeMaster({})
    sync = SlaveSynchronize(slave, master.invoke, lambda: None)
    await sync.sync_all()
    assert master.asked == [] and sync.rounds == 0


def topic_table(*names: str) -> bytes:
    entries = ",".join(f'"{n}":{{"topicName":"{n}","readQueueNums":1,"writeQueueNums":1,"perm":6}}' for n in names)
    return b'{"dataVersion":{"timestamp":5,"counter":7},"topicConfigTable":{' + entries.encode() + b"}}"


class TwoPorts(FakeMaster):
    """The master's main port answers ``answers``; whatever listens at its VIP port answers ``vip``."""

    def __init__(self, answers: dict[int, tuple[int, bytes]], vip: tuple[int, bytes] | Exception) -> None:
        super().__init__(answers)
        self.vip = vip

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        if addr != vip_addr(MASTER):
            return await super().invoke(addr, cmd, timeout)
        self.asked.append((addr, cmd.code))
        if isinstance(self.vip, Exception):
            raise self.vip
        return cmd.response(self.vip[0], None, body=self.vip[1])


#: the other three steps fail (their tables are not what these tests look at)
ONLY_TOPICS: dict[int, tuple[int, bytes]] = {
    code: (ResponseCode.SYSTEM_ERROR, b"")
    for code in (RequestCode.GET_ALL_CONSUMER_OFFSET, RequestCode.GET_ALL_DELAY_OFFSET,
                 RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
}  # fmt: skip


@pytest.mark.parametrize("vip", [
    (0, topic_table("broker-b", "T-of-b")),  # another broker group's table (another broker listens there)
    (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, b""),  # a name server
    ProtocolError("not a RocketMQ frame"),  # an HA port, a web server
])  # fmt: skip
async def test_a_vip_port_that_is_not_the_masters_is_not_believed(
    slave: BrokerContext, vip: tuple[int, bytes] | Exception
) -> None:
    name = slave.config.brokerName
    master = TwoPorts({RequestCode.GET_ALL_TOPIC_CONFIG: (0, topic_table(name, "T"))} | ONLY_TOPICS, vip)
    sync = SlaveSynchronize(slave, master.invoke, lambda: MASTER)
    await sync.sync_all()
    assert set(slave.topics.table) == {name, "T"}
    # from then on the main port alone
    master.asked.clear()
    await sync.sync_all()
    assert [addr for addr, code in master.asked if code == RequestCode.GET_ALL_TOPIC_CONFIG] == [MASTER]


async def test_the_masters_own_vip_port_is_used(slave: BrokerContext) -> None:
    name = slave.config.brokerName
    master = TwoPorts(ONLY_TOPICS, (0, topic_table(name, "T")))
    sync = SlaveSynchronize(slave, master.invoke, lambda: MASTER)
    for _ in range(2):
        await sync.sync_all()
    assert set(slave.topics.table) == {name, "T"}
    assert [addr for addr, code in master.asked if code == RequestCode.GET_ALL_TOPIC_CONFIG] == [vip_addr(MASTER)] * 2
