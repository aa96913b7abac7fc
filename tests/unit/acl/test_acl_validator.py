"""The check in Java's order, the resources per request code (PlainAccessValidator.parse 4.9.7), the remark."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.acl import signature
from rocketq.acl.config import AclRules, parse_document
from rocketq.acl.errors import AclDenied
from rocketq.acl.permission import PUB, SUB
from rocketq.acl.resources import needed
from rocketq.acl.validator import check, client_ip, peer_ip, remark
from rocketq.codes import RequestCode

DOC = {
    "globalWhiteRemoteAddresses": ["10.0.0.*"],
    "accounts": [
        {"accessKey": "producer1", "secretKey": "producer-secret", "defaultTopicPerm": "DENY",
         "topicPerms": ["orders=PUB", "closed=DENY"], "defaultGroupPerm": "DENY"},
        {"accessKey": "consumer1", "secretKey": "consumer-secret", "defaultTopicPerm": "SUB",
         "defaultGroupPerm": "DENY", "groupPerms": ["billing=SUB"]},
        {"accessKey": "adminkey", "secretKey": "admin-secret", "admin": True},
        {"accessKey": "adminlimited", "secretKey": "admin-secret", "admin": True, "topicPerms": ["t1=PUB"]},
        {"accessKey": "trusted1", "secretKey": "trusted-secret", "whiteRemoteAddress": "192.168.7.*"},
    ],
}  # fmt: skip
RULES = AclRules.combine([parse_document(DOC, "plain_acl.yml")])
SECRETS = {a["accessKey"]: a["secretKey"] for a in DOC["accounts"]}  # type: ignore[index]
IP = "127.0.0.1"


def signed(key: str, ext: dict[str, str], body: bytes = b"", secret: str | None = None) -> dict[str, str]:
    out = dict(ext)
    signature.sign_request(out, body, key, secret or SECRETS[key])
    return out


def denial(code: int, ext: dict[str, str], body: bytes = b"", ip: str = IP) -> str | None:
    try:
        check(RULES, ip, code, ext, body)
    except AclDenied as exc:
        return exc.message
    return None


SEND_V2 = {"a": "pg", "b": "orders", "c": "TBW102", "d": "4", "e": "0"}


def test_order_of_checks() -> None:
    # 1 global white list: nothing else looked at
    assert denial(RequestCode.UPDATE_AND_CREATE_TOPIC, {}, ip="10.0.0.9") is None
    # 2 no key
    assert denial(RequestCode.SEND_MESSAGE_V2, SEND_V2) == "No accessKey is configured"
    # 3 unknown key (the empty key of the C++ client's defaults too)
    unknown = signed("nobody1", SEND_V2, secret="x" * 8)
    assert denial(RequestCode.SEND_MESSAGE_V2, unknown) == "No acl config for nobody1"
    assert denial(RequestCode.SEND_MESSAGE_V2, {**SEND_V2, "AccessKey": "", "Signature": "s"}) == "No acl config for "
    # 4 the account's white address skips the signature
    assert denial(RequestCode.SEND_MESSAGE_V2, {**SEND_V2, "AccessKey": "trusted1"}, ip="192.168.7.1") is None
    # 5 signature
    bad = signed("producer1", SEND_V2, secret="wrong-secret")
    assert denial(RequestCode.SEND_MESSAGE_V2, bad) == "Check signature failed for accessKey=producer1"
    tampered = {**signed("producer1", SEND_V2), "b": "other"}
    assert denial(RequestCode.SEND_MESSAGE_V2, tampered) == "Check signature failed for accessKey=producer1"
    # 6 message trace: a PUB to RMQ_SYS_TRACE_TOPIC is always allowed to a signed caller
    assert denial(RequestCode.SEND_MESSAGE_V2, signed("consumer1", {**SEND_V2, "b": "RMQ_SYS_TRACE_TOPIC"})) is None
    # 7 admin codes
    assert denial(RequestCode.DELETE_TOPIC_IN_BROKER, signed("producer1", {"topic": "orders"})) == (
        "Need admin permission for request code=215, but accessKey=producer1 is not"
    )
    # 8 resources
    assert denial(RequestCode.SEND_MESSAGE_V2, signed("producer1", SEND_V2)) is None
    assert denial(RequestCode.SEND_MESSAGE_V2, signed("producer1", {**SEND_V2, "b": "closed"})) == (
        "No default permission for topic:closed"
    )
    assert denial(RequestCode.SEND_MESSAGE_V2, signed("producer1", {**SEND_V2, "b": "else"})) == (
        "No default permission for topic:else"
    )


def test_admin_accounts() -> None:
    for code in (17, 25, 200, 207, 215):
        assert denial(code, signed("adminkey", {"topic": "x"})) is None
        assert denial(code, signed("consumer1", {"topic": "x"})) is not None
    # an admin that lists perms falls back to the defaults (DENY) for the rest
    assert denial(RequestCode.SEND_MESSAGE_V2, signed("adminlimited", {**SEND_V2, "b": "t1"})) is None
    assert denial(RequestCode.SEND_MESSAGE_V2, signed("adminlimited", SEND_V2)) == (
        "No default permission for topic:orders"
    )
    assert denial(RequestCode.SEND_MESSAGE_V2, signed("adminkey", SEND_V2)) is None


def test_consumer_paths() -> None:
    pull = {"consumerGroup": "billing", "topic": "orders", "queueId": "0", "queueOffset": "0"}
    assert denial(RequestCode.PULL_MESSAGE, signed("consumer1", pull)) is None
    assert denial(RequestCode.PULL_MESSAGE, signed("consumer1", {**pull, "consumerGroup": "other"})) == (
        "No default permission for group:other"
    )
    assert denial(RequestCode.PULL_MESSAGE, signed("producer1", pull)) is not None
    hb = json.dumps(
        {
            "clientID": "c",
            "producerDataSet": [],
            "consumerDataSet": [
                {"groupName": "billing", "subscriptionDataSet": [{"topic": "orders"}, {"topic": "%RETRY%billing"}]}
            ],
        }
    ).encode()
    assert denial(RequestCode.HEART_BEAT, signed("consumer1", {}, hb), hb) is None
    hb_other = hb.replace(b'"groupName": "billing"', b'"groupName": "other"')
    assert denial(RequestCode.HEART_BEAT, signed("consumer1", {}, hb_other), hb_other) == (
        "No default permission for group:other"
    )
    # a producer-only heartbeat needs nothing
    phb = b'{"clientID":"c","producerDataSet":[{"groupName":"pg"}],"consumerDataSet":[]}'
    assert denial(RequestCode.HEART_BEAT, signed("producer1", {}, phb), phb) is None


def test_bad_heartbeat_body_is_refused_even_when_whitelisted() -> None:
    with pytest.raises(AclDenied) as err:
        check(RULES, "10.0.0.1", RequestCode.HEART_BEAT, {}, b"{not json")
    assert "heartbeat body" in err.value.message and "PlainAccessValidator.parse" in err.value.frame


@pytest.mark.parametrize(
    "code,ext,expected",
    [
        (RequestCode.SEND_MESSAGE, {"topic": "T", "producerGroup": "pg"}, {"T": PUB}),
        (RequestCode.SEND_MESSAGE, {"topic": "%RETRY%g", "producerGroup": "pg"}, {}),  # reads "group": absent
        (RequestCode.SEND_MESSAGE, {"topic": "%RETRY%g", "group": "g"}, {"%RETRY%g": SUB}),
        (RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "T"}, {"T": PUB}),
        (RequestCode.SEND_MESSAGE_V2, {"a": "g", "b": "%RETRY%g"}, {"%RETRY%g": SUB}),
        (RequestCode.SEND_BATCH_MESSAGE, {"a": "pg", "b": "T"}, {}),
        (RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "g", "originTopic": "T"}, {"%RETRY%g": SUB}),
        (RequestCode.PULL_MESSAGE, {"topic": "T", "consumerGroup": "g"}, {"T": SUB, "%RETRY%g": SUB}),
        (RequestCode.QUERY_MESSAGE, {"topic": "T", "key": "k"}, {"T": SUB}),
        (RequestCode.UNREGISTER_CLIENT, {"clientID": "c", "consumerGroup": "g"}, {"%RETRY%g": SUB}),
        (RequestCode.UNREGISTER_CLIENT, {"clientID": "c", "producerGroup": "pg"}, {}),
        (RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "g"}, {"%RETRY%g": SUB}),
        (RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "g", "topic": "T"}, {"%RETRY%g": SUB, "T": SUB}),
        (RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "g", "topic": "T"}, {}),
        (RequestCode.END_TRANSACTION, {"producerGroup": "pg"}, {}),
        (RequestCode.GET_ALL_CONSUMER_OFFSET, {}, {}),
    ],
)
def test_resources_per_code(code: int, ext: dict[str, str], expected: dict[str, int]) -> None:
    assert needed(code, ext, b"") == expected


def test_remark_is_javas() -> None:
    with pytest.raises(AclDenied) as err:
        check(RULES, IP, RequestCode.SEND_MESSAGE_V2, {**SEND_V2, "AccessKey": "abc"}, b"")
    assert remark(err.value) == (
        "org.apache.rocketmq.acl.common.AclException: No acl config for abc, "
        "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:667)"
    )


def test_client_ip() -> None:
    assert client_ip("192.168.0.1:5555") == "192.168.0.1"
    assert client_ip("[::1]:5555") == "::1"
    assert client_ip("0:0:0:0:0:0:0:1:5555") == "0:0:0:0:0:0:0:1"


def test_peer_ip_unmaps_ipv4() -> None:
    assert peer_ip("::ffff:10.0.0.9") == "10.0.0.9"
    assert peer_ip("::1") == "::1" and peer_ip("10.0.0.9") == "10.0.0.9"
    assert denial(RequestCode.UPDATE_AND_CREATE_TOPIC, {}, ip=peer_ip("::ffff:10.0.0.9")) is None


@pytest.mark.parametrize(
    "code,ext,body,expected",
    [
        (RequestCode.SEND_BATCH_MESSAGE, {"a": "pg", "b": "T"}, b"", {"T": PUB}),
        (RequestCode.SEND_BATCH_MESSAGE, {"a": "g", "b": "%RETRY%g"}, b"", {"%RETRY%g": SUB}),
        (RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "g", "topic": "T"}, b"", {"%RETRY%g": SUB, "T": SUB}),
        (RequestCode.LOCK_BATCH_MQ, {},
         b'{"consumerGroup":"g","clientId":"c","mqSet":[{"topic":"T","brokerName":"b","queueId":0}]}',
         {"%RETRY%g": SUB, "T": SUB}),
        (RequestCode.UNLOCK_BATCH_MQ, {}, b'{"consumerGroup":"g","clientId":"c","mqSet":[]}', {"%RETRY%g": SUB}),
        (RequestCode.PULL_MESSAGE, {"topic": "T", "consumerGroup": "g"}, b"", {"T": SUB, "%RETRY%g": SUB}),
    ],
)  # fmt: skip
def test_strict_resources(code: int, ext: dict[str, str], body: bytes, expected: dict[str, int]) -> None:
    assert needed(code, ext, body, strict=True) == expected


def test_strict_lock_body_must_read() -> None:
    with pytest.raises(AclDenied, match="lock body"):
        needed(RequestCode.LOCK_BATCH_MQ, {}, b"[1]", strict=True)
    assert needed(RequestCode.LOCK_BATCH_MQ, {}, b"[1]") == {}  # as Java: not read at all


@settings(max_examples=300, deadline=None)
@given(
    code=st.sampled_from([10, 11, 12, 14, 15, 17, 34, 35, 36, 38, 41, 42, 215, 310, 320, 9999]),
    ext=st.dictionaries(
        st.sampled_from(["AccessKey", "Signature", "a", "b", "topic", "group", "consumerGroup", "_UNIQUE_KEY_QUERY"]),
        st.text(max_size=12),
        max_size=6,
    ),
    body=st.one_of(st.binary(max_size=40), st.sampled_from([b"{}", b"[]", b'{"consumerDataSet":7}', b"null"])),
    strict=st.booleans(),
)
def test_any_request_is_allowed_or_refused_never_an_error(
    code: int, ext: dict[str, str], body: bytes, strict: bool
) -> None:
    for key in (None, "producer1"):
        fields = dict(ext)
        if key is not None:
            signature.sign_request(fields, body, key, SECRETS[key])
        try:
            check(RULES, IP, code, fields, body, strict_resources=strict)
        except AclDenied as exc:
            assert exc.message and exc.frame
