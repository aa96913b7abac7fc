"""ACL denials, differential: the same hand-built, hand-signed requests to a Java 4.9.7 broker and to rocketq's,
both with ``aclEnable=true`` and the same ``plain_acl.yml`` (acl_accounts.PLAIN_ACL), answers compared exactly
(code, remark text with Java's exception frame, header fields, body).

The signatures are computed here from the algorithm of Java's server (every extField but ``Signature`` and
``_UNIQUE_KEY_QUERY``, sorted by key, values concatenated, UTF-8, then the body; HMAC-SHA1 with the secret key,
base64 with padding), not with rocketq's code. rocketq runs with ``aclStrictAdmin=false`` and
``aclStrictResources=false`` (Java's five admin codes, Java's resources per code), so every answer must be
Java's; rocketq's stricter defaults are its own (docs/security.md, docs/compatibility.md).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from acl_accounts import ACL_EXCEPTION, ADMIN, GROUP, OTHER_GROUP, OTHER_TOPIC, PLAIN_ACL, TOPIC, USER, WHITE
from diff_scenarios import heartbeat_body, send_ext, topic_ext, v2
from differential import Side, assert_same, observe

from rocketq.codes import RequestCode as RC
from rocketq.remoting.client import RemotingClient
from rocketq.testing import EmbeddedCluster
from rocketq.testing.java import JavaCluster, JavaUnavailable

pytestmark = pytest.mark.asyncio(loop_scope="module")

Creds = tuple[str, str] | None
#: each side's plain_acl.yml, by Side.label (filled by the ``sides`` fixture)
ACL_FILES: dict[str, Path] = {}
WRONG = (USER[0], "not-the-secret")
UNKNOWN = ("nobody-at-all", "whatever-secret")


def signature(ext: Mapping[str, str], body: bytes, secret: str) -> str:
    """Java's server-side signature, written from the algorithm (not rocketq's code)."""
    keys = sorted((k for k in ext if k not in ("Signature", "_UNIQUE_KEY_QUERY")), key=lambda k: k.encode("utf-16-be"))
    content = "".join(ext[k] for k in keys).encode() + body
    return base64.b64encode(hmac.new(secret.encode(), content, hashlib.sha1).digest()).decode()


def signed(ext: Mapping[str, Any], creds: Creds, body: bytes = b"", **extra: str) -> dict[str, str]:
    """``ext`` with ``AccessKey`` (+ ``extra`` fields, e.g. SecurityToken/OnsChannel) and ``Signature``."""
    out = {k: str(v) for k, v in ext.items()}
    if creds is None:
        return out
    out.update(AccessKey=creds[0], **extra)
    out["Signature"] = signature(out, body, creds[1])
    return out


def pull_ext(topic: str, group: str, queue_id: int = 0) -> dict[str, str]:
    return {
        "consumerGroup": group, "topic": topic, "queueId": str(queue_id), "queueOffset": "0", "maxMsgNums": "32",
        "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0",
        "expressionType": "TAG",
    }  # fmt: skip


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def sides(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Side, Side]]:
    base = tmp_path_factory.mktemp("acl-diff")
    java = JavaCluster(base / "java", plain_acl=PLAIN_ACL)
    try:
        await asyncio.to_thread(java.start)
    except JavaUnavailable as exc:
        pytest.fail(str(exc))
    acl_file = base / "plain_acl.yml"
    acl_file.write_text(PLAIN_ACL)
    rc = RemotingClient()
    try:
        async with EmbeddedCluster(
            base / "rocketq", brokerClusterName="RqCluster", brokerName="rq-broker-a", aclEnable=True,
            aclFilePath=str(acl_file), aclStrictAdmin=False, aclStrictResources=False,
        ) as rq:  # fmt: skip
            ACL_FILES.update(java=java.acl_file, rocketq=acl_file)
            yield (
                Side("java", rc, java.namesrv_addr, java.broker_addr, java.cluster_name, java.broker_name),
                Side("rocketq", rc, rq.namesrv_addr, rq.broker_addr, "RqCluster", "rq-broker-a"),
            )
    finally:
        await rc.close()
        java.stop()


async def both(sides: tuple[Side, Side], scenario: Any) -> None:
    java, rq = await asyncio.gather(scenario(sides[0]), scenario(sides[1]))
    assert_same(java, rq)


def seen(s: Side, resp: Any) -> dict[str, Any]:
    """The answer; a remark's text is compared when it is an ACL refusal (else, as in the differential suite,
    whether an error has one). A refused heartbeat body's remark carries fastjson's parse message: only its
    exception class is compared."""
    out = observe(s, resp, remark=True, body="none")
    remark = out.get("remark")
    if not isinstance(remark, str) or not remark.startswith(ACL_EXCEPTION):
        if out.get("code") == 0:
            out.pop("remark", None)  # Java leaves its default text on some successes
        else:
            out["remark"] = bool(remark)
    elif "PlainAccessValidator.parse(" in remark:
        out["remark"] = ACL_EXCEPTION
    return out


async def max_offset(s: Side, topic: str, queue: int, at_least: int) -> dict[str, Any]:
    """GET_MAX_OFFSET once the queue reached ``at_least`` (Java dispatches after it answers a send)."""
    ext = signed({"topic": topic, "queueId": str(queue)}, USER)
    for _ in range(200):
        resp = await s.b(RC.GET_MAX_OFFSET, ext)
        if isinstance(resp, str) or resp.code != 0 or int(resp.ext_fields.get("offset", -1)) >= at_least:
            break
        await asyncio.sleep(0.02)
    return observe(s, resp, remark=True)


TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"


async def setup_topics(s: Side) -> dict[str, Any]:
    out = {}
    for topic in (TOPIC, OTHER_TOPIC, TRACE_TOPIC):
        out[topic] = seen(s, await s.b(RC.UPDATE_AND_CREATE_TOPIC, signed(topic_ext(topic), ADMIN)))
    return out


async def sc_sends(s: Side) -> dict[str, Any]:
    """SEND_MESSAGE_V2 by every kind of caller; what was stored is read back with GET_MAX_OFFSET."""
    await setup_topics(s)
    body = b"acl body"

    async def send(creds: Creds, topic: str = TOPIC, queue: int = 1, sent_body: bytes = body, **extra: str) -> Any:
        ext = signed(v2(send_ext(topic, queue_id=queue)), creds, body, **extra)
        return seen(s, await s.b(RC.SEND_MESSAGE_V2, ext, sent_body))

    out: dict[str, Any] = {
        "anonymous": await send(None),
        "unknown_key": await send(UNKNOWN),
        "wrong_secret": await send(WRONG),
        "empty_key": await send(("", "")),
        "lacks_topic": await send(USER, OTHER_TOPIC),
        "body_changed": await send(USER, sent_body=b"another body"),
        "user": await send(USER),
        "with_token_and_channel": await send(USER, SecurityToken="a-token", OnsChannel="ALIYUN"),
        "admin_any_topic": await send(ADMIN, OTHER_TOPIC),
        # the account's whiteRemoteAddress matches: no signature check, no permission check
        "white_account_wrong_secret": await send((WHITE[0], "not-the-secret"), OTHER_TOPIC),
        # a PUB of the trace topic skips the permission check (4.9.4+)
        "trace_topic": await send(USER, TRACE_TOPIC),
    }
    # SEND_MESSAGE_V2 to a retry topic asks SUB on the producer group's retry resource instead of PUB on topic
    for name, group in (("retry_own_group", GROUP), ("retry_other_group", OTHER_GROUP)):
        ext = v2(send_ext(f"%RETRY%{group}", producerGroup=group))
        out[name] = seen(s, await s.b(RC.SEND_MESSAGE_V2, signed(ext, USER, body), body))
    # SEND_MESSAGE (V1) names the group producerGroup, but Java reads "group" (reference §5: UNVERIFIED)
    ext = send_ext(f"%RETRY%{OTHER_GROUP}", producerGroup=OTHER_GROUP)
    out["v1_retry_other_group"] = seen(s, await s.b(RC.SEND_MESSAGE, signed(ext, USER, body), body))
    # A refused one-way request gets no answer, and is not stored: queue 2 holds only the signed send after it.
    await s.b(RC.SEND_MESSAGE_V2, v2(send_ext(TOPIC, queue_id=2)), body, oneway=True)
    out["signed_after_oneway"] = await send(USER, queue=2)
    out["max_offset_1"] = await max_offset(s, TOPIC, 1, 2)  # user + with_token_and_channel
    out["max_offset_2"] = await max_offset(s, TOPIC, 2, 1)
    return out


async def sc_consumers(s: Side) -> dict[str, Any]:
    """PULL_MESSAGE, HEART_BEAT and the consumer's other requests, allowed and refused by resource."""
    await setup_topics(s)
    out: dict[str, Any] = {}
    for name, topic, group in (("ok", TOPIC, GROUP), ("lacks_topic", OTHER_TOPIC, GROUP),
                               ("lacks_group", TOPIC, OTHER_GROUP)):  # fmt: skip
        hb = heartbeat_body("127.0.0.1@acl-diff", group, [{"topic": topic, "subVersion": 1}])
        out[f"heartbeat_{name}"] = seen(s, await s.b(RC.HEART_BEAT, signed({}, USER, hb), hb))
        out[f"pull_{name}"] = seen(s, await s.b(RC.PULL_MESSAGE, signed(pull_ext(topic, group), USER)))
        ids = {"consumerGroup": group}
        out[f"consumer_list_{name}"] = seen(s, await s.b(RC.GET_CONSUMER_LIST_BY_GROUP, signed(ids, USER)))
        offset = {"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": "0"}
        out[f"update_offset_{name}"] = seen(s, await s.b(RC.UPDATE_CONSUMER_OFFSET, signed(offset, USER)))
    out["pull_anonymous"] = seen(s, await s.b(RC.PULL_MESSAGE, pull_ext(TOPIC, GROUP)))
    bad = b"{not json"
    out["heartbeat_bad_body"] = seen(s, await s.b(RC.HEART_BEAT, signed({}, USER, bad), bad))
    return out


async def sc_admin_codes(s: Side) -> dict[str, Any]:
    """Java's five admin codes from a plain account and from nobody; then from the admin (harmless targets)."""
    await setup_topics(s)
    victim = "AclVictimTopic"
    requests: list[tuple[str, int, dict[str, str]]] = [
        ("create_topic", RC.UPDATE_AND_CREATE_TOPIC, topic_ext(victim)),
        ("broker_config", RC.UPDATE_BROKER_CONFIG, {}),
        ("create_group", RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}),
        ("delete_group", RC.DELETE_SUBSCRIPTIONGROUP, {"groupName": GROUP}),
        ("delete_topic", RC.DELETE_TOPIC_IN_BROKER, {"topic": TOPIC}),
    ]
    out: dict[str, Any] = {}
    for name, code, ext in requests:
        out[f"{name}_user"] = seen(s, await s.b(code, signed(ext, USER)))
        out[f"{name}_anonymous"] = seen(s, await s.b(code, ext))
    out["create_topic_admin"] = seen(s, await s.b(RC.UPDATE_AND_CREATE_TOPIC, signed(topic_ext(victim), ADMIN)))
    out["delete_topic_admin"] = seen(s, await s.b(RC.DELETE_TOPIC_IN_BROKER, signed({"topic": victim}, ADMIN)))
    return out


async def sc_unchecked_codes(s: Side) -> dict[str, Any]:
    """Codes Java checks for a valid signature only (no resource): a plain account passes, nobody does not."""
    await setup_topics(s)
    out: dict[str, Any] = {}
    for name, code, ext in (
        ("query_offset", RC.QUERY_CONSUMER_OFFSET,
         {"consumerGroup": OTHER_GROUP, "topic": OTHER_TOPIC, "queueId": "0"}),
        ("max_offset", RC.GET_MAX_OFFSET, {"topic": OTHER_TOPIC, "queueId": "0"}),
    ):  # fmt: skip
        out[f"{name}_user"] = observe(s, await s.b(code, signed(ext, USER)), remark=True)
        out[f"{name}_anonymous"] = observe(s, await s.b(code, ext), remark=True)
    return out


async def sc_unique_key_query(s: Side) -> dict[str, Any]:
    """QUERY_MESSAGE as a Java 4.9.4+ client signs it: ``_UNIQUE_KEY_QUERY`` included in the signed content."""
    await setup_topics(s)
    ext = {"topic": TOPIC, "key": "no-such-key", "maxNum": "32", "beginTimestamp": "0",
           "endTimestamp": str(2**62), "_UNIQUE_KEY_QUERY": "false", "AccessKey": USER[0]}  # fmt: skip
    content = "".join(ext[k] for k in sorted(ext)).encode()
    ext["Signature"] = base64.b64encode(hmac.new(USER[1].encode(), content, hashlib.sha1).digest()).decode()
    out = {"signed_with_flag": seen(s, await s.b(RC.QUERY_MESSAGE, ext, timeout=20))}
    ext["Signature"] = signature(ext, b"", USER[1])  # the server's content: without the flag
    out["signed_without_flag"] = seen(s, await s.b(RC.QUERY_MESSAGE, ext, timeout=20))
    return out


def replace_file(path: Path, text: str) -> None:
    """A whole new file at once (an editor's save), so a poll never reads half of it."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(text)
    os.replace(tmp, path)


async def sc_reload(s: Side) -> dict[str, Any]:
    """The file edited under a running broker: a granted topic takes effect on the next poll (Java's is every
    5 s); a malformed file is not applied and the rules before it stay in force."""
    await setup_topics(s)
    path = ACL_FILES[s.label]
    body = b"reload"

    async def send_other(creds: Creds) -> Any:
        ext = signed(v2(send_ext(OTHER_TOPIC, queue_id=3)), creds, body)
        return await s.b(RC.SEND_MESSAGE_V2, ext, body)

    out = {"before": seen(s, await send_other(USER))}
    replace_file(path, PLAIN_ACL.replace(f"  - {TOPIC}=PUB|SUB\n", f"  - {TOPIC}=PUB|SUB\n  - {OTHER_TOPIC}=PUB\n"))
    for _ in range(80):  # up to 20 s
        answer = await send_other(USER)
        if isinstance(answer, str) or answer.code == 0:
            break
        await asyncio.sleep(0.25)
    out["granted"] = seen(s, answer)
    try:
        replace_file(path, "accounts:\n  - accessKey: [unclosed\n")
        await asyncio.sleep(6.5)  # past both brokers' next poll: a shorter wait would only test less
        out["malformed_granted_still"] = seen(s, await send_other(USER))
        out["malformed_anonymous_still_refused"] = seen(s, await send_other(None))
    finally:
        replace_file(path, PLAIN_ACL)
    return out


async def test_sends(sides: tuple[Side, Side]) -> None:
    await both(sides, sc_sends)


async def test_consumer_requests(sides: tuple[Side, Side]) -> None:
    await both(sides, sc_consumers)


async def test_admin_codes(sides: tuple[Side, Side]) -> None:
    await both(sides, sc_admin_codes)


async def test_unchecked_codes(sides: tuple[Side, Side]) -> None:
    await both(sides, sc_unchecked_codes)



async def test_query_message_signed_with_the_unique_key_flag(sides: tuple[Side, Side]) -> None:
    """docs/compatibility.md, "Deliberate differences": a Java broker refuses what 4.9.4+ clients sign for
    QUERY_MESSAGE (apache/rocketmq #5310); rocketq also accepts the signature over ``_UNIQUE_KEY_QUERY``."""
    java, rq = await asyncio.gather(sc_unique_key_query(sides[0]), sc_unique_key_query(sides[1]))
    refused = java["signed_with_flag"]
    assert refused["code"] == 1
    assert refused["remark"].startswith(ACL_EXCEPTION + f"Check signature failed for accessKey={USER[0]}")
    assert rq["signed_with_flag"] == rq["signed_without_flag"] == java["signed_without_flag"]
    assert java["signed_without_flag"]["code"] != 1


async def test_hot_reload_and_a_malformed_file(sides: tuple[Side, Side]) -> None:
    """Last in the module: it edits both files (and puts PLAIN_ACL back)."""
    java, rq = await asyncio.gather(sc_reload(sides[0]), sc_reload(sides[1]))
    assert java["before"]["code"] == 1 and java["granted"]["code"] == 0, java
    assert java["malformed_granted_still"]["code"] == 0, java
    assert_same(java, rq)
