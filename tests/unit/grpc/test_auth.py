"""The gRPC ACL check: header parsing, signature, the check's order, the resources each request needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.acl.config import load_rules
from rocketq.acl.errors import AclDenied
from rocketq.acl.permission import ANY, PUB, SUB
from rocketq.grpc.auth import authenticate, authorize, needed, parse_authorization, sign
from rocketq.grpc.proto import messaging_service_pb2 as svc
from rocketq.grpc.proto import messaging_types_pb2 as pb
from rocketq.testing.acl import AclAccounts

STAMP = "20261205T101010Z"
A = AclAccounts()


def header(key: str, secret: str) -> dict[str, str]:
    auth = f"MQv2-HMAC-SHA1 Credential={key}, SignedHeaders=x-mq-date-time, Signature={sign(STAMP, secret)}"
    return {"x-mq-date-time": STAMP, "authorization": auth}


def test_parse_and_sign() -> None:
    key, b64 = parse_authorization("MQv2-HMAC-SHA1 Credential=AK/x, SignedHeaders=x-mq-date-time, Signature=0aff")
    assert key == "AK" and b64 == "Cv8="
    for bad in ("Basic abc", "MQv2-HMAC-SHA1 Credential=AK", "MQv2-HMAC-SHA1 Credential=AK, Signature=zz"):
        with pytest.raises(AclDenied):
            parse_authorization(bad)
    # RFC 2202 HMAC-SHA1 test case 2 (key "Jefe"), as lower-case hex
    assert sign("what do ya want for nothing?", "Jefe") == "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"


def test_check_order(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text(A.yaml())
    rules = load_rules(path)
    assert authenticate(rules, "10.0.0.1", header(A.user_key, A.user_secret)) == A.user_key
    with pytest.raises(AclDenied, match="No accessKey"):
        authenticate(rules, "10.0.0.1", {})
    with pytest.raises(AclDenied, match="No acl config"):
        authenticate(rules, "10.0.0.1", header("nobody", "x"))
    with pytest.raises(AclDenied, match="Check signature failed"):
        authenticate(rules, "10.0.0.1", header(A.user_key, "wrong"))
    send_ok = svc.SendMessageRequest(messages=[pb.Message(topic=pb.Resource(name=A.topic))])
    authorize(rules, A.user_key, send_ok)
    with pytest.raises(AclDenied, match=f"topic:{A.other_topic}"):
        authorize(rules, A.user_key, svc.SendMessageRequest(messages=[pb.Message(topic=pb.Resource(
            name=A.other_topic))]))  # fmt: skip
    authorize(rules, A.admin_key, svc.SendMessageRequest(messages=[pb.Message(topic=pb.Resource(
        name=A.other_topic))]))  # fmt: skip


def test_needed_resources() -> None:
    g, t = pb.Resource(name="G"), pb.Resource(resource_namespace="ns", name="T")
    assert needed(svc.QueryRouteRequest(topic=t)) == {"ns%T": ANY}
    assert needed(svc.ReceiveMessageRequest(group=g, message_queue=pb.MessageQueue(topic=t))) == {
        "%RETRY%G": SUB, "ns%T": SUB}  # fmt: skip
    assert needed(svc.AckMessageRequest(group=g, topic=t)) == {"%RETRY%G": SUB, "ns%T": SUB}
    assert needed(svc.EndTransactionRequest(topic=t)) == {"ns%T": PUB}
    assert needed(svc.HeartbeatRequest(client_type=pb.PRODUCER)) == {}
    assert needed(svc.HeartbeatRequest(client_type=pb.SIMPLE_CONSUMER, group=g)) == {"%RETRY%G": SUB}
    settings = svc.TelemetryCommand(settings=pb.Settings(publishing=pb.Publishing(topics=[t])))
    assert needed(settings) == {"ns%T": PUB}
