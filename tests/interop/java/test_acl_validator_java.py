"""rocketq's ACL check against Java 4.9.7's own ``PlainAccessValidator`` (no broker): the same account file,
the same requests, the same verdicts and remarks. rocketq's stricter options (``aclStrictAdmin``,
``aclStrictResources``) are off here: this compares the Java behaviour rocketq reproduces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from javaharness import run_java

from rocketq.acl import signature
from rocketq.acl.config import load_rules
from rocketq.acl.errors import AclDenied
from rocketq.acl.validator import check, remark

ACL = """\
globalWhiteRemoteAddresses:
  - 10.0.0.*
  - 172.16.1.{3,4}
accounts:
  - accessKey: producer1
    secretKey: producer-secret
    defaultTopicPerm: DENY
    topicPerms: [orders=PUB, closed=DENY, both=PUB|SUB]
    defaultGroupPerm: DENY
  - accessKey: consumer1
    secretKey: consumer-secret
    defaultTopicPerm: SUB
    defaultGroupPerm: DENY
    groupPerms: [billing=SUB, barred=DENY]
  - accessKey: adminfull
    secretKey: admin-secret
    admin: true
  - accessKey: adminlimited
    secretKey: admin-secret
    admin: true
    topicPerms: [t1=PUB]
  - accessKey: trusted1
    secretKey: trusted-secret
    whiteRemoteAddress: 192.168.7.*
"""
SECRETS = {"producer1": "producer-secret", "consumer1": "consumer-secret", "adminfull": "admin-secret",
           "adminlimited": "admin-secret", "trusted1": "trusted-secret"}  # fmt: skip
SEND = {"a": "pg", "b": "orders", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0"}


def hb(group: str, *topics: str) -> str:
    subs = [{"topic": t, "subString": "*"} for t in topics]
    return json.dumps({"clientID": "c1", "producerDataSet": [{"groupName": "pg"}],
                       "consumerDataSet": [{"groupName": group, "subscriptionDataSet": subs}]})  # fmt: skip


def signed(key: str, ext: dict[str, str], body: str = "", secret: str | None = None) -> dict[str, str]:
    out = dict(ext)
    signature.sign_request(out, body.encode(), key, secret or SECRETS[key])
    return out


LOCAL = "127.0.0.1"
# fmt: off
CASES: list[tuple[str, int, dict[str, str], str]] = [
    (LOCAL, 310, SEND, ""),
    ("10.0.0.5", 17, {}, ""),
    ("172.16.1.4", 215, {"topic": "x"}, ""),
    ("172.16.1.5", 215, {"topic": "x"}, ""),
    (LOCAL, 310, {**SEND, "AccessKey": "abc"}, ""),
    (LOCAL, 310, {**SEND, "AccessKey": "", "Signature": "x", "OnsChannel": "ALIYUN"}, ""),
    ("192.168.7.3", 310, {**SEND, "AccessKey": "trusted1"}, ""),
    ("192.168.8.3", 310, {**SEND, "AccessKey": "trusted1"}, ""),
    (LOCAL, 310, signed("producer1", SEND, secret="wrong-secret"), ""),
    (LOCAL, 310, {**signed("producer1", SEND), "b": "both"}, ""),
    (LOCAL, 310, signed("producer1", SEND, "body bytes é"), "body bytes é"),
    (LOCAL, 310, signed("producer1", {**SEND, "OnsChannel": "ALIYUN", "SecurityToken": "tok"}), ""),
    (LOCAL, 310, signed("producer1", {**SEND, "b": "closed"}), ""),
    (LOCAL, 310, signed("producer1", {**SEND, "b": "both"}), ""),
    (LOCAL, 310, signed("producer1", {**SEND, "b": "else"}), ""),
    (LOCAL, 310, signed("consumer1", {**SEND, "b": "RMQ_SYS_TRACE_TOPIC"}), ""),
    (LOCAL, 10, signed("producer1", {"producerGroup": "pg", "topic": "orders"}), ""),
    (LOCAL, 10, signed("producer1", {"producerGroup": "pg", "topic": "%RETRY%billing"}), ""),
    (LOCAL, 10, signed("producer1", {"group": "billing", "topic": "%RETRY%billing"}), ""),
    (LOCAL, 310, signed("consumer1", {"a": "billing", "b": "%RETRY%billing"}), ""),
    (LOCAL, 310, signed("consumer1", {"a": "nope", "b": "%RETRY%nope"}), ""),
    (LOCAL, 320, signed("consumer1", {**SEND, "b": "closed"}), ""),
    (LOCAL, 36, signed("consumer1", {"group": "billing", "offset": "1", "originTopic": "closed"}), ""),
    (LOCAL, 36, signed("consumer1", {"group": "barred", "offset": "1"}), ""),
    (LOCAL, 11, signed("consumer1", {"topic": "orders", "consumerGroup": "billing", "queueId": "0"}), ""),
    (LOCAL, 11, signed("consumer1", {"topic": "orders", "consumerGroup": "other"}), ""),
    (LOCAL, 11, signed("producer1", {"topic": "orders", "consumerGroup": "billing"}), ""),
    (LOCAL, 12, signed("consumer1", {"topic": "orders", "key": "k", "maxNum": "32"}), ""),
    (LOCAL, 34, signed("consumer1", {}, hb("billing", "orders")), hb("billing", "orders")),
    (LOCAL, 34, signed("consumer1", {}, hb("other", "orders")), hb("other", "orders")),
    (LOCAL, 34, signed("producer1", {}, hb("billing", "orders")), hb("billing", "orders")),
    (LOCAL, 35, signed("consumer1", {"clientID": "c", "consumerGroup": "barred"}), ""),
    (LOCAL, 35, signed("consumer1", {"clientID": "c", "producerGroup": "pg"}), ""),
    (LOCAL, 38, signed("consumer1", {"consumerGroup": "nope"}), ""),
    (LOCAL, 15, signed("consumer1", {"consumerGroup": "billing", "topic": "orders", "commitOffset": "1"}), ""),
    (LOCAL, 15, signed("consumer1", {"consumerGroup": "nope", "topic": "orders"}), ""),
    (LOCAL, 14, signed("consumer1", {"consumerGroup": "nope", "topic": "orders", "queueId": "0"}), ""),
    (LOCAL, 43, signed("consumer1", {}), ""),
    (LOCAL, 50, signed("consumer1", {"accessKey": "someone1", "secretKey": "12345678"}), ""),
    *[(LOCAL, code, signed(key, {"topic": "t"}), "") for code in (17, 25, 200, 207, 215)
      for key in ("producer1", "adminfull", "adminlimited")],
    (LOCAL, 310, signed("adminlimited", {**SEND, "b": "t1"}), ""),
    (LOCAL, 310, signed("adminlimited", SEND), ""),
    (LOCAL, 310, signed("adminfull", SEND), ""),
    # several resources refused: Java names the first in its HashMap's order
    (LOCAL, 34, signed("consumer1", {}, hb("other", "closed", "orders", "x1", "y2")),
     hb("other", "closed", "orders", "x1", "y2")),
    (LOCAL, 11, signed("producer1", {"topic": "zeta", "consumerGroup": "alpha"}), ""),
    (LOCAL, 15, signed("producer1", {"consumerGroup": "aa", "topic": "bb"}), ""),
]
# fmt: on


async def test_verdicts_match_java_plain_access_validator(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(ACL)
    lines = "".join(
        f"{ip}\t{code}\t{chr(3).join(f'{k}={v}' for k, v in ext.items())}\t{body}\n" for ip, code, ext, body in CASES
    )
    rc, out, err = await run_java("AclValidatorCheck", str(home), home=tmp_path / "jhome", stdin=lines.encode(),
                                  timeout=120)  # fmt: skip
    assert rc == 0, err[-3000:]
    java = [line.split("\t", 1)[1] for line in out.splitlines() if line.startswith("RESULT\t")]
    rules = load_rules(home / "conf" / "plain_acl.yml")
    ours: list[Any] = []
    for ip, code, ext, body in CASES:
        try:
            check(rules, ip, code, ext, body.encode())
            ours.append("OK")
        except AclDenied as exc:
            ours.append(remark(exc))
    assert len(java) == len(CASES)
    differ = [(CASES[i][:2], java[i], ours[i]) for i in range(len(CASES)) if java[i] != ours[i]]
    assert not differ, differ
    assert java.count("OK") >= 10 and len(set(java)) >= 12  # the table exercises both verdicts, many remarks
