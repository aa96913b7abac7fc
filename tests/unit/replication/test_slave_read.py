"""Reads from a slave, broker side: Java 4.9's ``suggestWhichBrokerId`` rule, pulls served by a slave (no offset
commit on a pull, no offset correction without offsetCheckInSlave). The wake of held pulls by replicated bytes
is tested in tests/unit/store/test_replica_arrival.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from tests.unit.broker.conftest import make_context
from tests.unit.broker.test_services import HOST, header, pull_header, service

from rocketq.broker.context import BrokerContext
from rocketq.broker.managers.subscription_manager import SubscriptionGroupConfig
from rocketq.broker.messaging.pull import PullService, suggest_broker_id
from rocketq.broker.role import BrokerRole
from rocketq.codes import ResponseCode
from rocketq.protocol.headers import PULL_FLAG_COMMIT_OFFSET, PULL_FLAG_SUBSCRIPTION


@pytest.mark.parametrize(
    ("enabled", "behind", "expected"),
    [(False, False, 0), (False, True, 0), (True, False, 3), (True, True, 7)],
)
def test_the_suggest_rule(enabled: bool, behind: bool, expected: int) -> None:
    got = suggest_broker_id(slave_read_enable=enabled, pulling_behind=behind, broker_id=3, slowly_broker_id=7)
    assert got == expected


def _context(tmp_path: Path, **config: Any) -> BrokerContext:
    ctx = make_context(tmp_path, **config)
    for i in range(3):
        assert service(ctx).send(header("TRead"), f"m{i}".encode(), HOST, client_version=409, remote="r").ok
    ctx.groups.update(SubscriptionGroupConfig("cg", broker_id=1, which_broker_when_consume_slowly=2))
    return ctx


def _close(ctx: BrokerContext) -> None:
    ctx.store.shutdown()
    ctx.persister.close()


def test_a_master_suggests_itself_unless_slave_reads_are_enabled(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    try:
        pulls = PullService(ctx)
        assert pulls.pull(pull_header("TRead"), remote="r", allow_suspend=True).suggest_which_broker_id == 0
        ctx.config.slaveReadEnable = True  # a live key
        found = pulls.pull(pull_header("TRead"), remote="r", allow_suspend=True)
        assert found.code == ResponseCode.SUCCESS and found.suggest_which_broker_id == 1  # the group's brokerId
        # nothing found: the store has no opinion, the group's brokerId again
        idle = pulls.pull(pull_header("TRead", offset=3), remote="r", allow_suspend=False)
        assert idle.code == ResponseCode.PULL_NOT_FOUND and idle.suggest_which_broker_id == 1
    finally:
        _close(ctx)


def test_a_pull_far_behind_the_log_end_is_sent_to_the_slowly_broker(tmp_path: Path) -> None:
    # a ratio of 0 % of RAM: any pull that does not read up to the last message is "behind"
    ctx = _context(tmp_path, accessMessageInMemoryMaxRatio=0, slaveReadEnable="true")
    try:
        one = dataclasses.replace(pull_header("TRead"), max_msg_nums=1)
        out = PullService(ctx).pull(one, remote="r", allow_suspend=True)
        assert out.code == ResponseCode.SUCCESS and out.suggest_which_broker_id == 2
    finally:
        _close(ctx)


def test_a_slave_serves_pulls_and_never_commits_or_moves_an_offset(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    try:
        ctx.role.change(BrokerRole.SLAVE, broker_id=1)
        pulls = PullService(ctx)
        commit = dataclasses.replace(
            pull_header("TRead", sys_flag=PULL_FLAG_SUBSCRIPTION | PULL_FLAG_COMMIT_OFFSET), commit_offset=2
        )
        found = pulls.pull(commit, remote="r", allow_suspend=True)
        # slaveReadEnable=false: served all the same (Java overwrites its retry code), master suggested
        assert found.code == ResponseCode.SUCCESS and found.next_begin_offset == 3
        assert found.suggest_which_broker_id == 0
        assert ctx.offsets.query("cg", "TRead", 0) == -1  # a pull never commits on a slave
        beyond = pulls.pull(pull_header("TRead", offset=10), remote="r", allow_suspend=True)
        assert (beyond.code, beyond.next_begin_offset, beyond.suggest_which_broker_id) == (
            ResponseCode.PULL_RETRY_IMMEDIATELY, 10, 1,
        )  # fmt: skip
        ctx.config.offsetCheckInSlave = True
        moved = pulls.pull(pull_header("TRead", offset=10), remote="r", allow_suspend=True)
        assert (moved.code, moved.next_begin_offset) == (ResponseCode.PULL_OFFSET_MOVED, 3)
    finally:
        _close(ctx)
