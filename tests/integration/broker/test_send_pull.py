"""Send and pull over the wire, with both send dialects, filtering, offsets and long polling."""

from __future__ import annotations

import asyncio

import orjson

from rocketq.codes import ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.message import BatchItem, encode_batch, encode_properties, parse_offset_msg_id
from rocketq.testing.wire import Wire, records


async def test_send_v1_and_v2_then_pull_back(wire: Wire, cluster) -> None:
    r1 = await wire.send("T1", b"hello", v2=False, props={"TAGS": "A", "KEYS": "k1 k2"})
    r2 = await wire.send("T1", b"world", v2=True, props={"TAGS": "B", "color": "red"})
    for r in (r1, r2):
        assert r.code == ResponseCode.SUCCESS, r.remark
        assert set(r.ext_fields) >= {"msgId", "queueId", "queueOffset", "MSG_REGION", "TRACE_ON"}
        assert len(r.ext_fields["msgId"]) == 32
    assert r1.ext_fields["queueOffset"] == "0" and r2.ext_fields["queueOffset"] == "1"
    host, phys = parse_offset_msg_id(r2.ext_fields["msgId"])
    assert host[1] == cluster.broker.config.listenPort and phys > 0

    resp = await wire.pull("T1", 0, 0)
    assert resp.code == ResponseCode.SUCCESS
    assert set(resp.ext_fields) >= {"nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId"}
    assert resp.ext_fields["nextBeginOffset"] == "2" and resp.ext_fields["maxOffset"] == "2"
    msgs = records(resp)
    assert [m.body for m in msgs] == [b"hello", b"world"]
    assert msgs[0].keys == ["k1", "k2"] and msgs[1].properties["color"] == "red"
    assert msgs[0].properties["CLUSTER"] == "DefaultCluster"
    assert msgs[0].born_host[0] == "127.0.0.1"

    # End of queue: 19 with nextBeginOffset = max, never stuck.
    end = await wire.pull("T1", 0, 2)
    assert end.code == ResponseCode.PULL_NOT_FOUND and end.ext_fields["nextBeginOffset"] == "2"
    # Far beyond the end: offset moved back to max.
    moved = await wire.pull("T1", 0, 99)
    assert moved.code == ResponseCode.PULL_OFFSET_MOVED and moved.ext_fields["nextBeginOffset"] == "2"


async def test_cpp_style_numeric_ext_fields_are_accepted(wire: Wire) -> None:
    from rocketq.protocol.command import encode

    # The C++ client sends numbers for queueId/sysFlag/flag and "1"/"0" booleans.
    header = {
        "code": 10, "language": "CPP", "version": 63, "opaque": 77, "flag": 0, "remark": "",
        "extFields": {"producerGroup": "pg", "topic": "TCpp", "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
                      "queueId": 1, "sysFlag": 0, "bornTimestamp": "1700000000000", "flag": 0,
                      "properties": encode_properties({"TAGS": "x"}), "reconsumeTimes": "0", "unitMode": "0",
                      "batch": "0"},
    }  # fmt: skip
    conn = await wire.rc.connection(wire.addr)
    hdr = orjson.dumps(header) + b"\n"
    body = b"cpp-body"
    frame = (4 + len(hdr) + len(body)).to_bytes(4, "big") + len(hdr).to_bytes(4, "big") + hdr + body
    fut = asyncio.get_running_loop().create_future()
    conn._pending[77] = fut
    conn._transport.write(frame)
    resp = await asyncio.wait_for(fut, 5)
    assert resp.code == ResponseCode.SUCCESS and resp.serialize_type == 0
    assert resp.ext_fields["queueId"] == "1"
    assert all(isinstance(v, str) for v in resp.ext_fields.values())
    assert encode  # the encoder is not used for this frame on purpose


async def test_batch_send_gets_consecutive_offsets(wire: Wire) -> None:
    items = [BatchItem(0, f"m{i}".encode(), {"UNIQ_KEY": f"{i:032X}", "KEYS": f"key{i}"}) for i in range(5)]
    ext = {"a": "pg", "b": "TB", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0",
           "i": encode_properties({"WAIT": "true"}), "j": "0", "k": "false", "m": "true"}  # fmt: skip
    resp = await wire.call(320, ext, encode_batch(items))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    ids = resp.ext_fields["msgId"].split(",")
    assert len(ids) == 5 and resp.ext_fields["queueOffset"] == "0"
    msgs = records(await wire.pull("TB", 0, 0))
    assert [m.body for m in msgs] == [f"m{i}".encode() for i in range(5)]
    assert [m.queue_offset for m in msgs] == list(range(5))
    assert msgs[3].properties["WAIT"] == "true" and msgs[3].uniq_key == f"{3:032X}"


async def test_tag_filter_advances_offset(wire: Wire) -> None:
    for tag in ("A", "B", "A", "C"):
        assert (await wire.send("TF", tag.encode(), props={"TAGS": tag})).code == 0
    resp = await wire.pull("TF", 0, 0, subscription="A || C")
    assert [m.body for m in records(resp)] == [b"A", b"A", b"C"]
    assert resp.ext_fields["nextBeginOffset"] == "4"
    none = await wire.pull("TF", 0, 1, subscription="Z", max_nums=1)
    assert none.code == ResponseCode.PULL_RETRY_IMMEDIATELY
    assert int(none.ext_fields["nextBeginOffset"]) > 1  # offsets always progress


async def test_long_poll_answers_on_arrival(wire: Wire) -> None:
    assert (await wire.send("TL", b"first")).code == 0
    waiter = asyncio.create_task(wire.pull("TL", 0, 1, sys_flag=4 | 2, suspend_ms=10_000, timeout=15))
    await asyncio.sleep(0.2)
    assert not waiter.done()
    assert (await wire.send("TL", b"second")).code == 0
    resp = await asyncio.wait_for(waiter, 5)
    assert resp.code == ResponseCode.SUCCESS and [m.body for m in records(resp)] == [b"second"]


async def test_long_poll_answers_after_timeout(wire: Wire) -> None:
    assert (await wire.send("TL2", b"x")).code == 0
    resp = await wire.pull("TL2", 0, 1, sys_flag=4 | 2, suspend_ms=300, timeout=5)
    assert resp.code == ResponseCode.PULL_NOT_FOUND and resp.ext_fields["nextBeginOffset"] == "1"


async def test_send_checks(wire: Wire, cluster) -> None:
    big = b"x" * (cluster.broker.config.maxMessageSize + 1)
    assert (await wire.send("TBig", big)).code == ResponseCode.MESSAGE_ILLEGAL
    assert (await wire.send("bad topic!", b"x")).code == ResponseCode.SYSTEM_ERROR
    assert (await wire.send("SCHEDULE_TOPIC_XXXX", b"x")).code == ResponseCode.NO_PERMISSION
    assert (await wire.send("TQ", b"x", queue_id=0)).code == 0
    resp = await wire.send("TQ", b"x", queue_id=50)
    assert resp.code == ResponseCode.SYSTEM_ERROR and "MSG_REGION" in resp.ext_fields


async def test_unknown_code_is_answered(wire: Wire) -> None:
    resp = await wire.call(9999)
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED and "9999" in (resp.remark or "")


async def test_auto_created_topic_is_routable(wire: Wire, cluster, rc) -> None:
    assert (await wire.send("TRoute", b"x")).code == 0
    for _ in range(50):
        resp = await rc.invoke(cluster.namesrv_addr, RemotingCommand.request(105, {"topic": "TRoute"}))
        if resp.code == 0:
            break
        await asyncio.sleep(0.1)
    assert resp.code == 0
    route = orjson.loads(resp.body)
    assert route["queueDatas"][0]["writeQueueNums"] == 4
    assert route["brokerDatas"][0]["brokerAddrs"]["0"] == cluster.broker_addr


async def test_stored_properties_are_the_request_s_plus_cluster_whatever_the_text_s_shape(wire: Wire) -> None:
    texts = [
        "UNIQ_KEY\x01U1\x02TAGS\x01a\x02",  # as our clients and the C++ client send it
        "UNIQ_KEY\x01U2\x02TAGS\x01b",  # Java's: no trailing separator
        "TAGS\x01c\x02TAGS\x01d\x02UNIQ_KEY\x01U3\x02",  # a repeated name: the last wins
        "UNIQ_KEY\x01U4\x02junk\x02empty\x01\x02",  # pieces Java drops
        "UNIQ_KEY\x01U5\x02CLUSTER\x01theirs\x02",  # the broker's CLUSTER replaces the client's
    ]
    expected = [
        [("UNIQ_KEY", "U1"), ("TAGS", "a")],
        [("UNIQ_KEY", "U2"), ("TAGS", "b")],
        [("TAGS", "d"), ("UNIQ_KEY", "U3")],
        [("UNIQ_KEY", "U4")],
        [("UNIQ_KEY", "U5")],
    ]
    for text in texts:
        ext = {"a": "pg", "b": "TP", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0", "i": text,
               "j": "0", "k": "false"}  # fmt: skip
        resp = await wire.call(310, ext, b"x")
        assert resp.code == ResponseCode.SUCCESS, resp.remark
    msgs = records(await wire.pull("TP", 0, 0))
    assert [list(m.properties.items()) for m in msgs] == [[*e, ("CLUSTER", "DefaultCluster")] for e in expected]
