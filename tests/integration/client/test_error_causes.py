"""Errors that say their cause (issue 20 item 17): the last broker answer on a failed send, "no broker is
registered", a hint when -n points at a broker, and a client id refused without its topic — through the client
API and through the real ``rocketq`` command."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from rocketq.client import AdminClient, Message, Producer
from rocketq.client._uniq_id import UniqIdGenerator
from rocketq.client.errors import InvalidMessageIdError, NoRouteError, SendFailedError
from rocketq.codes import ResponseCode
from rocketq.errors import BrokerError
from rocketq.testing import EmbeddedCluster
from rocketq.testing.process import StandaloneProcess

CLIENT_ID = UniqIdGenerator("10.1.2.3", pid=4242, loader_hash=0x1234ABCD, clock=lambda: 1_700_000_000_000).create()


async def rocketq(*args: str) -> tuple[int, str]:
    """The real command line: (exit code, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketq", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(60):
        _, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, err.decode()


def error_line(stderr: str) -> str:
    """The command's last line (earlier ones may be the client's retry warnings): the error, no traceback."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert lines and lines[-1].startswith("error: ") and "Traceback" not in stderr, stderr
    return lines[-1]


async def send_error(namesrv_addr: str, topic: str) -> Exception:
    producer = Producer("pg-cause", namesrv_addr=namesrv_addr)
    await producer.start()
    try:
        with pytest.raises((SendFailedError, NoRouteError)) as info:
            await producer.send(Message(topic, b"x"))
    finally:
        await producer.shutdown()
    return info.value


async def test_a_failed_send_names_the_last_broker_answer(tmp_path: Path) -> None:
    async with EmbeddedCluster(tmp_path) as cluster:
        # TBW102 was created while auto-creation was on: it stays in topics.json, so the producer gets a
        # route for any topic, and the broker now refuses each one (as a Java broker with that store does)
        cluster.overrides["autoCreateTopicEnable"] = "false"
        await cluster.restart_broker()
        err = await send_error(cluster.namesrv_addr, "NoSuchTopic")
        assert isinstance(err, SendFailedError)
        assert "still failed" in str(err) and "last error: TOPIC_NOT_EXIST" in str(err) and "NoSuchTopic" in str(err)
        assert err.response_code == ResponseCode.TOPIC_NOT_EXIST
    async with EmbeddedCluster(tmp_path / "fresh", autoCreateTopicEnable=False) as cluster:
        err = await send_error(cluster.namesrv_addr, "NoSuchTopic")  # no TBW102 either: no route at all
        assert isinstance(err, NoRouteError) and "none of the 1 registered broker(s) has it" in str(err)


async def test_no_route_says_that_no_broker_is_registered(tmp_path: Path) -> None:
    async with EmbeddedCluster(tmp_path, brokers=0) as cluster:
        producer = Producer("pg-empty", namesrv_addr=cluster.namesrv_addr)
        await producer.start()
        try:
            with pytest.raises(NoRouteError, match="no broker is registered with the name server"):
                await producer.send(Message("Orders", b"x"))
        finally:
            await producer.shutdown()
        async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
            with pytest.raises(NoRouteError, match="no broker is registered"):
                await admin.topic_route("Orders")


async def test_a_broker_given_as_name_server_and_bad_message_ids(tmp_path: Path) -> None:
    async with EmbeddedCluster(tmp_path) as cluster:
        async with AdminClient(namesrv_addr=cluster.broker_addr) as admin:
            with pytest.raises(BrokerError, match="pointing at a broker") as info:
                await admin.topic_list()
            assert info.value.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        # a producer asks for routes: the missing route says why
        err = await send_error(cluster.broker_addr, "Orders")
        assert isinstance(err, NoRouteError) and "pointing at a broker" in str(err)
        producer = Producer("pg-ids", namesrv_addr=cluster.namesrv_addr)
        await producer.start()
        await producer.send(Message("Orders", b"x"))
        await producer.shutdown()
        async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
            with pytest.raises(InvalidMessageIdError, match="client message id") as bad:
                await admin.query_message_by_id(CLIENT_ID)
            assert isinstance(bad.value, ValueError)
            for short in ("FFFF", "not-hex"):
                with pytest.raises(InvalidMessageIdError, match="is not a message id"):
                    await admin.query_message_by_id(short, "Orders")
                with pytest.raises(InvalidMessageIdError, match="is not a message id"):
                    await admin.resend_dead_letter("G", short)
            assert await admin.query_message_by_id(CLIENT_ID, "Orders") == []  # with its topic: searched


async def test_the_command_line_shows_the_causes(tmp_path: Path) -> None:
    first = await StandaloneProcess.start(tmp_path / "standalone")  # leaves TBW102 in topics.json
    assert await first.stop() == 0
    standalone = await StandaloneProcess.start(tmp_path / "standalone", "autoCreateTopicEnable=false")
    try:
        async with EmbeddedCluster(tmp_path / "empty", brokers=0) as empty:
            ns = standalone.namesrv_addr
            results: list[Any] = await asyncio.gather(
                rocketq("send", "-n", ns, "-t", "NoSuchTopic"),
                rocketq("send", "-n", empty.namesrv_addr, "-t", "Orders"),
                rocketq("topic", "list", "-n", standalone.broker_addr),
                rocketq("send", "-n", standalone.broker_addr, "-t", "Orders"),
                rocketq("message", "by-id", "-n", ns, "-i", CLIENT_ID),
            )
    finally:
        await standalone.stop()
    (send_rc, send_err), (empty_rc, empty_err), (list_rc, list_err), (to_broker_rc, to_broker_err), (id_rc, id_err) = (
        results
    )
    assert send_rc == 1 and "still failed" in error_line(send_err)
    assert "last error: TOPIC_NOT_EXIST" in error_line(send_err)
    assert empty_rc == 1 and "no broker is registered" in error_line(empty_err)
    assert list_rc == 1 and "pointing at a broker" in error_line(list_err)
    assert to_broker_rc == 1 and "pointing at a broker" in error_line(to_broker_err)
    line = error_line(id_err)
    assert id_rc == 1 and "client message id" in line and "-t" in line and "port" not in line
