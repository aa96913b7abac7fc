"""The client's ACL signature against vectors computed here from the reference's algorithm (§3.4 of
rocketmq-ha-acl-trace.md): extFields but ``Signature``/``_UNIQUE_KEY_QUERY``, sorted by key in UTF-16 order,
values concatenated, UTF-8, body appended, HMAC-SHA1, base64 with padding. Nothing here calls the project's
signing code to compute an expected value."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from rocketq.client import ClientConfig, SessionCredentials
from rocketq.client.credentials import signature, signed_content
from rocketq.codes import RequestCode
from rocketq.protocol.command import RemotingCommand, decode_frame, encode


def expected_signature(ext: dict[str, str], body: bytes, secret: str) -> str:
    keys = sorted((k for k in ext if k not in ("Signature", "_UNIQUE_KEY_QUERY")), key=lambda k: k.encode("utf-16-be"))
    content = "".join(ext[k] for k in keys).encode("utf-8") + body
    return base64.b64encode(hmac.new(secret.encode("utf-8"), content, hashlib.sha1).digest()).decode()


def test_fixed_vector() -> None:
    # HMAC-SHA1("12345678", "rocketmq") in base64 (computed with `openssl dgst -sha1 -hmac`): pins key, digest, padding
    assert signature(b"rocketmq", "12345678") == "wmnVRiuXwvgUxJ6oySLyc1qu7Z4="
    assert base64.b64encode(hmac.new(b"12345678", b"rocketmq", hashlib.sha1).digest()).decode() == (
        "wmnVRiuXwvgUxJ6oySLyc1qu7Z4="
    )


def test_send_request_signed_as_the_broker_computes_it() -> None:
    ext = {"a": "ProducerGroup", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1732400000000",
           "h": "0", "i": "UNIQ_KEY\x01ABC\x02", "j": "0", "k": "false", "m": "false", "n": "broker-a"}  # fmt: skip
    body = b"Hello \xe4\xb8\x96\xe7\x95\x8c \x00\xff"
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, dict(ext), body)
    creds = SessionCredentials("RocketMQ", "12345678")
    creds.sign(cmd)
    assert cmd.ext_fields["AccessKey"] == "RocketMQ"
    sig = cmd.ext_fields["Signature"]
    assert len(sig) == 28 and sig.endswith("=")
    assert sig == expected_signature({**ext, "AccessKey": "RocketMQ"}, body, "12345678")
    # the values alone are signed, in key order: AccessKey sorts before the lower-case keys
    content = ("RocketMQ" + "".join(ext[k] for k in sorted(ext))).encode() + body
    assert sig == base64.b64encode(hmac.new(b"12345678", content, hashlib.sha1).digest()).decode()


def test_signature_survives_the_wire_both_header_types() -> None:
    creds = SessionCredentials("RocketMQ", "secret-key-1", "token-xyz")
    for serialize_type in (0, 1):
        cmd = RemotingCommand.request(RequestCode.PULL_MESSAGE, {"topic": "T", "consumerGroup": "G", "queueId": "3"})
        cmd.serialize_type = serialize_type
        creds.sign(cmd)
        got = decode_frame(encode(cmd)[4:])
        assert got.ext_fields["SecurityToken"] == "token-xyz"
        assert got.ext_fields["Signature"] == expected_signature(got.ext_fields, b"", "secret-key-1")


def test_unique_key_query_is_left_out_as_the_broker_does() -> None:
    ext = {"topic": "T", "key": "ABCDEF", "maxNum": "32", "beginTimestamp": "0", "endTimestamp": "9",
           "_UNIQUE_KEY_QUERY": "true"}  # fmt: skip
    cmd = RemotingCommand.request(RequestCode.QUERY_MESSAGE, dict(ext))
    SessionCredentials("RocketMQ", "12345678").sign(cmd)
    without = {k: v for k, v in cmd.ext_fields.items() if k != "_UNIQUE_KEY_QUERY"}
    assert cmd.ext_fields["Signature"] == expected_signature(without, b"", "12345678")
    # signing it too (what Java 4.9.4+'s client does) gives another signature, which the broker refuses
    keys = sorted(k for k in cmd.ext_fields if k != "Signature")
    with_flag = "".join(cmd.ext_fields[k] for k in keys).encode()
    java_client = base64.b64encode(hmac.new(b"12345678", with_flag, hashlib.sha1).digest()).decode()
    assert cmd.ext_fields["Signature"] != java_client


def test_utf16_key_order_not_code_point_order() -> None:
    # U+10000 is the surrogate pair D800 DC00 in UTF-16, so Java's TreeMap puts it before U+FFFF
    ext = {"\uffff": "B", "\U00010000": "A", "z": "Z"}
    assert signed_content(ext) == b"ZAB"


def test_resigning_replaces_a_stale_signature_and_keeps_the_body() -> None:
    creds = SessionCredentials("RocketMQ", "12345678")
    cmd = RemotingCommand.request(RequestCode.HEART_BEAT, {}, b'{"clientID":"c"}')
    creds.sign(cmd)
    first = cmd.ext_fields["Signature"]
    creds.sign(cmd)
    assert cmd.ext_fields["Signature"] == first
    cmd.ext_fields["extra"] = "1"  # a retry with a changed header is signed afresh
    creds.sign(cmd)
    assert cmd.ext_fields["Signature"] == expected_signature(cmd.ext_fields, b'{"clientID":"c"}', "12345678")
    assert cmd.ext_fields["Signature"] != first


def test_non_ascii_values_are_utf8() -> None:
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"b": "主题", "a": "groupé"}, b"x")
    SessionCredentials("RocketMQ", "12345678").sign(cmd)
    content = ("RocketMQ" + "groupé" + "主题").encode() + b"x"
    digest = hmac.new(b"12345678", content, hashlib.sha1).digest()
    assert cmd.ext_fields["Signature"] == base64.b64encode(digest).decode()


def test_config_credentials_and_secrecy() -> None:
    assert ClientConfig().credentials() is None
    cfg = ClientConfig(access_key="RocketMQ", secret_key="very-secret", security_token="tok-secret")
    creds = cfg.credentials()
    assert creds == SessionCredentials("RocketMQ", "very-secret", "tok-secret")
    for text in (repr(cfg), repr(creds)):
        assert "RocketMQ" in text and "very-secret" not in text and "tok-secret" not in text
    with pytest.raises(ValueError, match="both access_key and secret_key"):
        ClientConfig(access_key="RocketMQ").credentials()
    with pytest.raises(ValueError, match="both access_key and secret_key"):
        ClientConfig(secret_key="x").credentials()
    with pytest.raises(ValueError, match="security_token"):
        ClientConfig(security_token="t").credentials()
