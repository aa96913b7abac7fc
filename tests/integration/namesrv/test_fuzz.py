"""Fuzz a running name server with random and mutated frames over many connections.

A seeded random loop (bounded in count) throws garbage and mutated valid frames at the server from many
connections, a few at a time, while a well-behaved client keeps asking for its route and re-registering its
broker. The server must never crash or log an error, must close exactly the connections whose bytes do not
form valid frames, and must answer every request of the well-behaved client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import zlib
from pathlib import Path
from typing import Any

import pytest

from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import ProtocolError
from rocketq.namesrv import NamesrvConfig, NamesrvServer
from rocketq.protocol import SERIALIZE_JSON, SERIALIZE_ROCKETMQ, FrameDecoder, RemotingCommand, encode
from rocketq.protocol.bodies import DataVersion, TopicConfig
from rocketq.protocol.route import RegisterBrokerBody, TopicConfigSerializeWrapper
from rocketq.remoting import RemotingClient

SEED = 20240607
CONNECTIONS = 400
CONCURRENCY = 8
WAIT = 5.0  # upper bound for "the server closes the connection"; never a timing threshold

GOOD_TOPIC = "GoodTopic"
GOOD_BROKER = "good-broker"
GOOD_ADDR = "10.9.9.9:10911"  # never an address a fuzz connection comes from


def register_request(name: str, addr: str, cluster: str, topic: str, *, compressed: bool) -> RemotingCommand:
    wrapper = TopicConfigSerializeWrapper(DataVersion(1700000000000, 1), {topic: TopicConfig(topic, 4, 4, 6)})
    body = RegisterBrokerBody(wrapper).encode(compressed)
    ext = {
        "brokerName": name,
        "brokerAddr": addr,
        "clusterName": cluster,
        "haServerAddr": addr,
        "brokerId": "0",
        "compressed": str(compressed).lower(),
        "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF),
    }
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, ext, body, language="JAVA")


def seed_frames() -> list[bytes]:
    """Valid frames naming only fuzz-owned brokers, topics and namespaces."""
    cmds = [
        RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "FuzzTopic"}),
        RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO),
        RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
        RemotingCommand.request(RequestCode.PUT_KV_CONFIG, {"namespace": "fuzz", "key": "k", "value": "v"}),
        RemotingCommand.request(RequestCode.GET_KV_CONFIG, {"namespace": "fuzz", "key": "k"}),
        RemotingCommand.request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "fuzz"}),
        RemotingCommand.request(
            RequestCode.QUERY_DATA_VERSION,
            {"brokerName": "fuzz-broker", "brokerAddr": "fuzz:1", "clusterName": "FuzzCluster", "brokerId": "0"},
            b'{"counter":1,"timestamp":1}',
        ),
        RemotingCommand.request(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "FuzzCluster"}),
        RemotingCommand.request(4242),
        register_request("fuzz-broker", "fuzz:1", "FuzzCluster", "FuzzTopic", compressed=False),
        register_request("fuzz-broker2", "fuzz:2", "FuzzCluster", "FuzzTopic2", compressed=True),
    ]
    frames = []
    for cmd in cmds:
        for serialize_type in (SERIALIZE_JSON, SERIALIZE_ROCKETMQ):
            cmd.serialize_type = serialize_type
            cmd.opaque = 7
            frames.append(encode(cmd))
    return frames


def mutate(rng: random.Random, frame: bytes) -> bytes:
    data = bytearray(frame)
    for _ in range(rng.randint(1, 4)):
        if not data:
            break
        pos = rng.randrange(len(data))
        op = rng.randrange(6)
        if op == 0:
            data[pos] ^= 1 << rng.randrange(8)
        elif op == 1:
            data[pos] = rng.randrange(256)
        elif op == 2:
            data[pos:pos] = rng.randbytes(rng.randint(1, 8))
        elif op == 3:
            del data[pos : pos + rng.randint(1, 8)]
        elif op == 4:
            del data[pos:]
        else:  # corrupt a length word: total length, or header length with its type byte
            at = rng.choice((0, 4))
            data[at : at + 4] = rng.randbytes(4)
    return bytes(data)


def make_payload(rng: random.Random, seeds: list[bytes]) -> bytes:
    kind = rng.randrange(4)
    if kind == 0:
        return rng.randbytes(rng.randint(1, 64))
    if kind == 1:
        return mutate(rng, rng.choice(seeds))
    if kind == 2:  # valid frames, then a mutated one
        return b"".join(rng.sample(seeds, 2)) + mutate(rng, rng.choice(seeds))
    return b"".join(mutate(rng, rng.choice(seeds)) for _ in range(rng.randint(2, 3)))


def server_must_close(payload: bytes) -> bool:
    decoder = FrameDecoder()
    try:
        decoder.feed(payload)
    except ProtocolError:
        return True
    return decoder.error is not None


async def attack(port: int, payload: bytes) -> tuple[bool, bool]:
    """Send ``payload`` on a fresh connection; returns (expected close, server closed it)."""
    expect_close = server_must_close(payload)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    closed_by_server = False
    try:
        writer.write(payload)
        await writer.drain()
        if expect_close:
            async with asyncio.timeout(WAIT):
                while await reader.read(65536):
                    pass  # responses to any valid frames before the bad one
            closed_by_server = True
    except ConnectionResetError:
        closed_by_server = True
    finally:
        writer.close()
        with contextlib.suppress(ConnectionResetError):
            await writer.wait_closed()
    return expect_close, closed_by_server


@pytest.mark.timeout(120)
async def test_fuzzed_name_server_keeps_serving(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    loop_errors: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: loop_errors.append(ctx))

    config = NamesrvConfig(listen_host="127.0.0.1", listen_port=0, home_dir=tmp_path, broker_expiry=600)
    rng = random.Random(SEED)
    seeds = seed_frames()
    payloads = [make_payload(rng, seeds) for _ in range(CONNECTIONS)]

    async with NamesrvServer(config) as server:
        good = RemotingClient()
        stop = asyncio.Event()
        answered = 0

        async def well_behaved() -> None:
            nonlocal answered
            while not stop.is_set():
                reg = register_request(GOOD_BROKER, GOOD_ADDR, "GoodCluster", GOOD_TOPIC, compressed=False)
                assert (await good.invoke(server.address, reg, timeout=WAIT)).code == ResponseCode.SUCCESS
                for _ in range(5):
                    req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": GOOD_TOPIC})
                    resp = await good.invoke(server.address, req, timeout=WAIT)
                    assert resp.code == ResponseCode.SUCCESS, resp.remark
                    assert b'"brokerAddrs":{"0":"10.9.9.9:10911"}' in bytes(resp.body)
                    answered += 1
                await asyncio.sleep(0)

        try:
            good_task = asyncio.ensure_future(well_behaved())
            results: list[tuple[bool, bool]] = []
            for i in range(0, len(payloads), CONCURRENCY):
                batch = payloads[i : i + CONCURRENCY]
                results += await asyncio.gather(*(attack(server.port, p) for p in batch))
                assert not good_task.done(), good_task.exception()
            stop.set()
            await good_task
        finally:
            stop.set()
            await good.close()

        expected_closes = sum(1 for expect, _ in results if expect)
        assert expected_closes > CONNECTIONS // 4  # the corpus really exercises the rejection path
        assert all(closed for expect, closed in results if expect)
        assert answered > 0
        # Every fuzz connection is gone; the server still answers a new client.
        async with asyncio.timeout(WAIT):
            while server._remoting is not None and server._remoting.connections:
                await asyncio.sleep(0.01)
        late = RemotingClient()
        try:
            info = await late.invoke(server.address, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), WAIT)
            assert info.code == ResponseCode.SUCCESS
        finally:
            await late.close()

    assert loop_errors == []
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]
