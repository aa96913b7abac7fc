"""RpcLatency's buckets and the /metrics endpoint's HTTP edge, without a broker."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.metrics_http import RPC_BUCKETS_MS, MetricsEndpoint, RpcLatency, histogram_buckets
from rocketq.remoting.server import RemotingDispatcher


def test_histogram_buckets_are_cumulative_and_end_with_inf() -> None:
    assert histogram_buckets([1, 0, 2], (1.0, 5.0)) == [("1.0", 1.0), ("5.0", 1.0), ("+Inf", 3.0)]


def test_every_answer_is_observed_once_and_unanswered_stamps_stay_bounded() -> None:
    rpc = RpcLatency()
    dispatcher = RemotingDispatcher("t")
    rpc.install(dispatcher)
    assert dispatcher.request_hooks[0] == rpc.on_request
    cmds = [RemotingCommand(code=310) for _ in range(3)]
    for cmd in cmds:
        rpc.on_request(None, cmd)  # type: ignore[arg-type]
    for cmd in cmds[:2]:
        rpc.on_answer(None, cmd, 0)  # type: ignore[arg-type]
    rpc.on_answer(None, cmds[0], 0)  # type: ignore[arg-type]  # a second answer: not stamped any more
    rpc.on_answer(None, RemotingCommand(code=11), 0)  # type: ignore[arg-type]  # never stamped: ignored
    assert sum(rpc.buckets[(310, 0)]) == 2
    assert len(rpc.buckets[(310, 0)]) == len(RPC_BUCKETS_MS) + 1
    (family,) = [rpc.family(["node_type"], ["broker"], long_polling=(11,))]
    count = [s for s in family.samples if s.name == "rocketmq_rpc_latency_count"]
    assert [(s.labels["request_code"], s.value) for s in count] == [("310", 2.0)]


async def _get(port: int, raw: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    async with asyncio.timeout(30):
        data = await reader.read()
    writer.close()
    return data


async def test_endpoint_serves_get_and_head_and_refuses_the_rest() -> None:
    rpc = RpcLatency()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(rpc))
    endpoint = MetricsEndpoint(registry, "127.0.0.1", 0)
    port = await endpoint.start()
    try:
        get = await _get(port, b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n")
        head, _, body = get.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and b"text/plain" in head
        assert [f.name for f in text_string_to_metric_families(body.decode())] == ["rocketmq_rpc_latency"]
        only_head = await _get(port, b"HEAD /metrics HTTP/1.1\r\n\r\n")
        assert only_head.startswith(b"HTTP/1.1 200") and only_head.endswith(b"\r\n\r\n")
        assert (await _get(port, b"DELETE /metrics HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 405")
        assert (await _get(port, b"GET /admin HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 404")
        assert await _get(port, b"GET /metrics HTTP/1.1\r\n" + b"x" * 10_000) == b""  # no end of head: dropped
    finally:
        await endpoint.close()


class _Fixed:
    def __init__(self, rpc: RpcLatency) -> None:
        self._rpc = rpc

    def collect(self):  # type: ignore[no-untyped-def]
        yield self._rpc.family([], [])
