"""The request signature against vectors computed here, independently of rocketq's code.

``reference_signature`` follows the algorithm of the reference (§3.4) step by step with ``hmac`` and
``base64``; the literal vectors were computed with ``openssl dgst -sha1 -hmac <secret> -binary | base64``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from rocketq.acl import signature


def reference_signature(ext: dict[str, str], body: bytes, secret: str) -> str:
    fields = {k: v for k, v in ext.items() if k not in ("Signature", "_UNIQUE_KEY_QUERY")}
    # Java TreeMap order: compare UTF-16 code units
    keys = sorted(
        fields,
        key=lambda k: [
            int.from_bytes(k.encode("utf-16-be", "surrogatepass")[i : i + 2], "big")
            for i in range(0, len(k.encode("utf-16-be", "surrogatepass")), 2)
        ],
    )
    data = "".join(fields[k] for k in keys).encode("utf-8") + body
    return base64.b64encode(hmac.new(secret.encode("utf-8"), data, hashlib.sha1).digest()).decode()


C_SEND = {"topic": "TopicTest", "AccessKey": "RocketMQ", "OnsChannel": "ALIYUN", "queueId": "1"}


def test_literal_vector_cpp_style_send() -> None:
    # content: AccessKey, OnsChannel, queueId, topic → "RocketMQ" "ALIYUN" "1" "TopicTest"
    assert signature.signature_of(C_SEND, b"", "12345678") == "rufU5wfA3VJ01yLC7v8WJhWVn74="


def test_literal_vector_body_appended_utf8() -> None:
    assert signature.signature_of({"AccessKey": "AK12345"}, "bodyé".encode(), "sk-secret") == (
        "taGn3IRv1pO4p8PRXAbOFNp4YQc="
    )


def test_literal_vector_empty_secret_as_cpp_default() -> None:
    # C++ 1.2.3 signs with an empty secret by default: still a 28-character signature
    assert signature.sign_content(b"x", "") == "YkTmZFGhyGlduXMc4sT9XeJcz4c="


def test_signature_and_unique_key_are_left_out() -> None:
    ext = {**C_SEND, "Signature": "whatever", "_UNIQUE_KEY_QUERY": "true"}
    assert signature.signature_of(ext, b"", "12345678") == "rufU5wfA3VJ01yLC7v8WJhWVn74="
    # the Java 4.9.4+ client's content includes it: AccessKey OnsChannel _UNIQUE_KEY_QUERY queueId topic
    with_key = signature.sign_content(signature.content(ext, b"", with_unique_key=True), "12345678")
    assert with_key == "eDmSj+9F8R6tePJqqcavoBTvhPE="


@pytest.mark.parametrize(
    "ext,body",
    [
        ({"a": "1", "b": "2", "AccessKey": "ak", "SecurityToken": "tok"}, b""),
        ({"b": "topic", "a": "group", "AccessKey": "ak", "z": "", "Z": "é"}, b"\x00\x01binary\xff"),
        ({"\ufffd": "b", "\U0001f600": "a", "AccessKey": "k"}, b""),  # UTF-16 order differs from code points
        ({"AccessKey": "ak", "OnsChannel": "ALIYUN", "queueId": "-1", "sysFlag": "0"}, b"hello"),
    ],
)
def test_matches_independent_reference(ext: dict[str, str], body: bytes) -> None:
    for secret in ("12345678", "sécret-ünïcode", ""):
        assert signature.signature_of(ext, body, secret) == reference_signature(ext, body, secret)


def test_utf16_order_puts_surrogates_before_high_bmp() -> None:
    assert signature.content({"\ufffd": "b", "\U0001f600": "a"}) == b"ab"


def test_verify_accepts_java_server_and_java_client_forms() -> None:
    ext = dict(C_SEND)
    signature.sign_request(ext, b"body", "RocketMQ", "12345678")
    assert signature.verify(ext, b"body", "12345678")
    assert not signature.verify(ext, b"other body", "12345678")
    assert not signature.verify(ext, b"body", "wrong-secret")
    # a Java 4.9.4+ client signs _UNIQUE_KEY_QUERY too (QUERY_MESSAGE): tolerated
    q = {"topic": "T", "key": "k", "AccessKey": "RocketMQ", "_UNIQUE_KEY_QUERY": "true"}
    q["Signature"] = signature.sign_content(signature.content(q, b"", with_unique_key=True), "12345678")
    assert signature.verify(q, b"", "12345678")
    q["_UNIQUE_KEY_QUERY"] = "false"  # the value is covered too
    assert not signature.verify(q, b"", "12345678")


def test_verify_without_signature_or_with_garbage() -> None:
    assert not signature.verify({"AccessKey": "k"}, b"", "12345678")
    assert not signature.verify({"AccessKey": "k", "Signature": "ünïcode"}, b"", "12345678")


def test_sign_request_adds_key_token_and_signature() -> None:
    ext = {"topic": "T"}
    signature.sign_request(ext, None, "AK12345", "SK12345", "tok")
    assert ext["AccessKey"] == "AK12345" and ext["SecurityToken"] == "tok"
    assert ext["Signature"] == reference_signature(
        {"topic": "T", "AccessKey": "AK12345", "SecurityToken": "tok"}, b"", "SK12345"
    )
