"""The admin commands through the real ``rocketq`` command against one real ``rocketq standalone`` (issue 20:
items 1, 2, 3, 4's ``| head``, 15, 16, 18; the convention is docs/cli.md's).

Each invocation costs an interpreter start-up, so independent ones run together and every test uses its own
topics and groups on the module's one standalone.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from clihelpers import WAIT, Run, camel_keys, rocketq, table

from rocketq.client import LitePullConsumer
from rocketq.testing.process import StandaloneProcess

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def standalone(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[StandaloneProcess]:
    base = tmp_path_factory.mktemp("cli")
    sa = await StandaloneProcess.start(base / "data", log_path=base / "standalone.log", timeout=WAIT)
    try:
        yield sa
    finally:
        await sa.stop()


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    # the test's own environment, as StandaloneProcess's: the rocketq under test is the one Python imports here
    return dict(os.environ)


@pytest.fixture
def cli(standalone: StandaloneProcess, env: dict[str, str]) -> Any:
    async def run(*argv: str) -> Run:
        return await rocketq(env, *argv, namesrv=standalone.namesrv_addr)

    return run


# ---------------------------------------------------------------------------------------------------- item 1


async def test_consume_count_commits_only_the_printed_messages(cli: Any) -> None:
    assert (await cli("topic", "create", "-t", "CountT", "-r", "1", "-w", "1")).rc == 0
    sent = (await cli("send", "-t", "CountT", "--count", "5", "--json")).json()
    assert [s["queueOffset"] for s in sent] == [0, 1, 2, 3, 4]

    first = await cli("consume", "-t", "CountT", "-g", "g1", "--count", "2", "--commit", "--idle-timeout", "30")
    assert first.rc == 0, first.err
    rows = table(first.out, "msg id", "topic", "broker", "queue", "offset", "stored", "tags", "keys")
    assert [r[0] for r in rows] == [s["msgId"] for s in sent[:2]]
    progress = (await cli("group", "progress", "-g", "g1", "--json")).json()
    assert [(p["consumerOffset"], p["lag"]) for p in progress] == [(2, 3)]  # was (5, 0): the whole poll committed

    rest = await cli(
        "consume", "-t", "CountT", "-g", "g1", "--count", "3", "--commit", "--json", "--idle-timeout", "30"
    )
    assert [m["msgId"] for m in rest.json()] == [s["msgId"] for s in sent[2:]]  # was none: all 5 were committed


# ---------------------------------------------------------------------------------------------------- item 2


async def test_topic_update_changes_only_what_is_given(cli: Any) -> None:
    assert (await cli("topic", "create", "-t", "Wide", "-r", "16", "-w", "16", "-o")).rc == 0
    updated = (await cli("topic", "update", "-t", "Wide", "-c", "DefaultCluster", "-p", "4", "--json")).json()
    assert [(u["readQueueNums"], u["writeQueueNums"], u["perm"], u["order"]) for u in updated] == [(16, 16, 4, True)]
    route = (await cli("topic", "route", "-t", "Wide", "--json")).json()
    assert [(q["readQueueNums"], q["writeQueueNums"], q["perm"]) for q in route["queueDatas"]] == [(16, 16, 4)]
    updated = (await cli("topic", "update", "-t", "Wide", "-w", "12", "--no-order", "--json")).json()
    assert [(u["readQueueNums"], u["writeQueueNums"], u["perm"], u["order"]) for u in updated] == [(16, 12, 4, False)]
    assert camel_keys(updated) == []
    (await cli("topic", "update", "-t", "NeverCreated", "-p", "6")).failed(1, "NeverCreated", "does not exist")


# ---------------------------------------------------------------------------------------------------- item 3


async def test_a_malformed_message_id_is_a_usage_error(cli: Any) -> None:
    by_id, resend, not_hex = await asyncio.gather(
        cli("message", "by-id", "-i", "FFFF", "-t", "Orders"),
        cli("group", "resend-dlq", "-g", "G", "-i", "FFFF"),
        cli("message", "by-id", "-i", "Z" * 32),
    )
    for run in (by_id, resend, not_hex):  # was struct.error from client/_uniq_id.py
        run.failed(2, "is not a message id")


# ------------------------------------------------------------------------------------------- item 4 (| head)


async def test_a_reader_closing_stdout_ends_the_command_quietly(standalone: StandaloneProcess, env: Any) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes anything, as with '| head' done early
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "rocketq", "topic", "list", "--json", "-n", standalone.namesrv_addr, env=env,
            stdout=write_end, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
    finally:
        os.close(write_end)
    async with asyncio.timeout(WAIT):
        _, err = await proc.communicate()
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err.decode()
    assert proc.returncode == 141


# --------------------------------------------------------------------------------------------------- item 15


async def test_every_command_follows_one_output_convention(cli: Any, standalone: StandaloneProcess) -> None:
    created = (await cli("topic", "create", "-t", "ConvT", "-r", "2", "-w", "2", "--json")).json()
    sent = (await cli("send", "-t", "ConvT", "--keys", "k1", "--tags", "A", "--count", "2", "--json")).json()
    consumed = await cli("consume", "-t", "ConvT", "-g", "conv-g", "--count", "2", "--commit", "--json",
                         "--idle-timeout", "30")  # fmt: skip
    assert len(consumed.json()) == 2  # one JSON array, not JSON lines
    docs = {"topic create": created, "send": sent, "consume": consumed.json()}
    commands = {
        "topic list": ["topic", "list"],
        "topic route": ["topic", "route", "-t", "ConvT"],
        "topic status": ["topic", "status", "-t", "ConvT"],
        "group progress": ["group", "progress", "-g", "conv-g"],
        "group reset-offset": ["group", "reset-offset", "-g", "conv-g", "-t", "ConvT", "--timestamp", "0"],
        "cluster list": ["cluster", "list"],
        "broker-status": ["broker-status"],
        "message by-key": ["message", "by-key", "-t", "ConvT", "-k", "k1", "--print-body"],
        "message by-id": ["message", "by-id", "-i", sent[0]["offsetMsgId"]],
        "message peek": ["message", "peek", "-t", "ConvT"],
        "group connections": ["group", "connections", "-g", "conv-online"],
    }
    online = LitePullConsumer("conv-online", namesrv_addr=standalone.namesrv_addr)
    online.subscribe("ConvT")
    await online.start()  # its heartbeat has reached the broker when start returns
    try:
        runs = await asyncio.gather(*(cli(*argv, "--json") for argv in commands.values()))
    finally:
        await online.shutdown()
    docs |= {name: run.json() for name, run in zip(commands, runs, strict=True)}
    for name, doc in docs.items():
        assert isinstance(doc, list | dict), name
        assert camel_keys(doc) == [], name
    assert sum(q["maxOffset"] for q in docs["topic status"]) == 2
    assert [m["msgId"] for m in docs["message by-id"]] == [sent[0]["msgId"]]
    assert {m["body"] for m in docs["message by-key"]} == {"Hello RocketMQ"}
    assert docs["group connections"]["subscriptions"] == {"ConvT": "*"}

    # text: every table starts with its header row and a rule (consume's: test_consume_count_...)
    text = await asyncio.gather(cli("group", "progress", "-g", "conv-g"), cli("cluster", "list"))
    progress = text[0].out.split("\n\n")[0]
    assert len(table(progress, "topic", "broker", "queue", "broker offset", "consumer offset", "lag",
                     "last consumed")) == 2  # fmt: skip
    assert len(table(text[1].out, "cluster", "broker", "id", "address", "role", "lag", "version", "put tps",
                     "get tps", "error")) == 1  # fmt: skip


# --------------------------------------------------------------------------------------------------- item 16


async def test_mistakes_say_what_is_wrong(cli: Any, env: Any, tmp_path: Path) -> None:
    assert (await cli("topic", "create", "-t", "MistakeT", "-r", "1", "-w", "1")).rc == 0
    assert (await cli("send", "-t", "MistakeT")).rc == 0
    runs = await asyncio.gather(
        cli("topic", "delete", "-t", "NeverExisted"),
        cli("group", "progress", "-g", "typo"),
        cli("group", "progress", "-g", "typo", "-t", "MistakeT"),
        cli("group", "reset-offset", "-g", "nosuchgroup", "-t", "MistakeT", "--timestamp", "0"),
        cli("message", "by-key", "-t", "MistakeT", "-k", "nope"),
        cli("consume", "-t", "NoSuchTopic", "--idle-timeout", "1"),
        cli("cluster", "list", "-c", "NoSuchCluster"),
        cli("consume", "-t", "MistakeT", "--commit"),
        cli("send", "-t", "MistakeT", "--body-file", str(tmp_path / "missing")),
        cli("send", "-t", "MistakeT", "--property", "novalue"),
        cli("group", "reset-offset", "-g", "g", "-t", "MistakeT", "--timestamp", "yesterday"),
    )
    runs[0].failed(1, "NeverExisted", "does not exist", "nothing deleted")  # was "deleted", rc 0
    runs[1].failed(1, "typo", "no committed offsets")  # was an empty table, "total lag: 0"
    runs[2].failed(1, "typo", "no committed offsets", "MistakeT")  # was every queue at offset 0, lag 1
    runs[3].failed(1, "nosuchgroup", "no committed offsets")  # was offsets created
    runs[4].failed(1, "nope", "MistakeT")  # was an empty table, no message
    runs[5].failed(1, "NoSuchTopic")  # was "consumed 0 message(s)"
    runs[6].failed(1, "NoSuchCluster", "DefaultCluster")
    runs[7].failed(2, "--commit needs -g")
    runs[8].failed(1, "--body-file", "No such file")  # was FileNotFoundError
    runs[9].failed(2, "--property", "KEY=VALUE")
    runs[10].failed(2, "--timestamp", "yesterday")  # was ValueError
    (await cli("group", "progress", "-g", "nosuchgroup")).failed(1, "nosuchgroup")  # the reset created nothing


async def test_no_broker_registered_is_said(env: Any, tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketq", "--log-level", "WARNING", "namesrv", "--host", "127.0.0.1", "--port", "0",
        "--home", str(tmp_path / "ns"), env=env, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        async with asyncio.timeout(WAIT):
            line = (await proc.stdout.readline()).decode()  # type: ignore[union-attr]
        addr = line.rsplit(" ", 1)[1].strip()
        listed, status, topics = await asyncio.gather(
            rocketq(env, "cluster", "list", namesrv=addr), rocketq(env, "broker-status", namesrv=addr),
            rocketq(env, "topic", "list", "--json", namesrv=addr),
        )  # fmt: skip
        listed.failed(1, "no broker is registered", addr)  # was an empty table, rc 0
        status.failed(1, "no broker is registered")
        topics.failed(1, "knows no topic")
    finally:
        proc.terminate()
        await proc.wait()


# --------------------------------------------------------------------------------------------------- item 18


async def test_peek_and_consume_without_commit_leave_the_topic_as_it_was(cli: Any) -> None:
    assert (await cli("topic", "create", "-t", "PeekT", "-r", "2", "-w", "2")).rc == 0
    sent = (await cli("send", "-t", "PeekT", "--count", "6", "--tags", "A", "--json")).json()
    assert (await cli("send", "-t", "PeekT", "--tags", "B", "--sharding-key", "k")).rc == 0
    ids = {s["msgId"] for s in sent}
    q0 = [s for s in sent if s["queueId"] == 0]

    looks = await asyncio.gather(
        cli("consume", "-t", "PeekT", "-g", "look", "--count", "7", "--json", "--idle-timeout", "30"),
        cli("message", "peek", "-t", "PeekT", "-s", "A", "--json"),
        cli("message", "peek", "-t", "PeekT", "-q", "0", "--from-offset", "1", "--to-offset", "3", "--json"),
        cli("message", "peek", "-t", "PeekT", "-q", "9"),
        cli("message", "peek", "-t", "PeekT", "--end", "1000000000000"),
    )
    again = await cli("consume", "-t", "PeekT", "-g", "look", "--count", "7", "--json", "--idle-timeout", "30")
    first, second = looks[0].json(), again.json()
    assert len(first) == 7 and {m["msgId"] for m in first} == {m["msgId"] for m in second}  # a second look sees all
    assert "not committed" in again.err
    assert {m["msgId"] for m in looks[1].json()} == ids  # the tag filter leaves B out
    assert len(q0) == 3  # one producer alternates over the two queues
    assert [(m["queueId"], m["queueOffset"], m["msgId"]) for m in looks[2].json()] == [
        (0, 1, q0[1]["msgId"]),
        (0, 2, q0[2]["msgId"]),
    ]
    looks[3].failed(1, "no such queue", "PeekT")
    looks[4].failed(1, "no message")
    groups = ("look", "TOOLS_CONSUMER")  # neither the consume nor the peeks wrote an offset
    for group, run in zip(
        groups, await asyncio.gather(*(cli("group", "progress", "-g", g) for g in groups)), strict=True
    ):
        run.failed(1, group, "no committed offsets")


_WITH_SIGINT = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from rocketq.cli.main import main; sys.exit(main())"
)


async def test_ctrl_c_stops_consume_like_its_end(cli: Any, standalone: StandaloneProcess, env: Any) -> None:
    assert (await cli("topic", "create", "-t", "StopT", "-r", "1", "-w", "1")).rc == 0
    assert (await cli("send", "-t", "StopT", "--count", "2")).rc == 0
    # A shell without job control starts its background commands with SIGINT ignored, and a child inherits
    # that (make test runs a half with `&`): the consumer gets Python's own SIGINT handler back, as in a terminal.
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _WITH_SIGINT, "consume", "-t", "StopT", "-g", "stop-g", "--commit", "--idle-timeout", "0",
        "-n", standalone.namesrv_addr, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    try:
        async with asyncio.timeout(WAIT):
            lines = [await proc.stdout.readline() for _ in range(4)]  # header, rule, the two messages
            proc.send_signal(signal.SIGINT)
            _, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert all(lines) and b"StopT" in lines[3]
    assert proc.returncode == 130 and b"Traceback" not in err, err.decode()
    assert b"consumed 2 message(s)" in err
    progress = (await cli("group", "progress", "-g", "stop-g", "--json")).json()
    assert [(p["consumerOffset"], p["lag"]) for p in progress] == [(2, 0)]  # committed on the way out


async def test_progress_without_a_group_lists_every_group(cli: Any, standalone: StandaloneProcess) -> None:
    assert (await cli("topic", "create", "-t", "AllT", "-r", "1", "-w", "1")).rc == 0
    assert (await cli("send", "-t", "AllT", "--count", "5")).rc == 0
    consumed = await cli("consume", "-t", "AllT", "-g", "all-off", "--count", "2", "--commit", "--idle-timeout", "30")
    assert consumed.rc == 0, consumed.err
    online = LitePullConsumer("all-on", namesrv_addr=standalone.namesrv_addr)
    online.subscribe("AllT")
    await online.start()  # its heartbeat has reached the broker when start returns
    try:
        doc, text, mixed = await asyncio.gather(
            cli("group", "progress", "--json"), cli("group", "progress"), cli("group", "progress", "-t", "AllT")
        )
    finally:
        await online.shutdown()
    rows = {r["group"]: r for r in doc.json()}
    assert camel_keys(doc.json()) == []
    # the offline group: no clients, its lag is what it left (5 sent, 2 committed)
    assert (rows["all-off"]["count"], rows["all-off"]["diffTotal"], rows["all-off"]["version"]) == (0, 3, None)
    # the online one: one client, its type and model, no committed offsets yet
    on = rows["all-on"]
    assert (on["count"], on["consumeType"], on["messageModel"]) == (1, "CONSUME_ACTIVELY", "CLUSTERING")
    assert isinstance(on["version"], int) and on["version"] > 0
    assert list(rows) == sorted(rows)
    lines = table(text.out, "group", "clients", "min version", "type", "model", "consume tps", "lag")
    # (empty cells vanish when a row is split on runs of spaces: the first and last cells are compared)
    assert [(r[1], r[-1]) for r in lines if r[0] == "all-off"] == [("0", "3")]
    mixed.failed(2, "-t", "-g")
