"""plain_acl.yml (+ acl/*.yml): schema, validation, first-wins duplicates, refusal of what cannot be honoured."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.acl import permission
from rocketq.acl.config import acl_files, load_rules, parse_document, write_document
from rocketq.acl.errors import AclConfigError

SAMPLE = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
dataVersion:
  - counter: 3
    timestamp: 1700000000000
"""


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_sample_file(tmp_path: Path) -> None:
    rules = load_rules(write(tmp_path / "conf" / "plain_acl.yml", SAMPLE))
    a = rules.accounts["RocketMQ"]
    assert a.secret_key == "12345678"  # a YAML number is read as its text, as Java reads it
    assert not a.admin and a.default_topic_perm == permission.DENY and a.default_group_perm == permission.SUB
    assert a.perms == {
        "topicA": permission.DENY, "topicB": permission.PUB | permission.SUB, "topicC": permission.SUB,
        "%RETRY%groupA": permission.DENY, "%RETRY%groupB": permission.PUB | permission.SUB,
    }  # fmt: skip
    assert not a.white.matches("192.168.1.5")
    b = rules.accounts["rocketmq2"]
    assert b.admin and b.perms is None and b.white.matches("192.168.1.5")
    assert b.default_topic_perm == permission.DENY  # missing = DENY
    assert [p.matches("10.10.103.7") for p in rules.white] == [True, False]
    assert rules.files[0].data_version == (3, 1700000000000)


def test_empty_file_is_no_rules(tmp_path: Path) -> None:
    rules = load_rules(write(tmp_path / "plain_acl.yml", ""))
    assert rules.accounts == {} and rules.white == ()


def test_acl_dir_files_first_then_main_and_first_wins(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    main = write(tmp_path / "conf" / "plain_acl.yml", "accounts:\n- {accessKey: dupkey1, secretKey: from-main}\n")
    write(tmp_path / "conf" / "acl" / "b.yaml", "accounts:\n- {accessKey: dupkey1, secretKey: from-b-yaml}\n")
    write(tmp_path / "conf" / "acl" / "sub" / "c.yml", "globalWhiteRemoteAddresses: [1.2.3.4]\n")
    write(tmp_path / "conf" / "acl" / "ignored.txt", "not: acl")
    assert [Path(p).name for p in acl_files(main)] == ["b.yaml", "c.yml", "plain_acl.yml"]
    rules = load_rules(main)
    assert rules.accounts["dupkey1"].secret_key == "from-b-yaml"
    assert rules.owners["dupkey1"].endswith("b.yaml")
    assert any(p.matches("1.2.3.4") for p in rules.white)
    assert "acl.duplicate_key key=dupkey1" in caplog.text


@pytest.mark.parametrize(
    "text,names",
    [
        ("accounts:\n- {accessKey: short, secretKey: 12345678}\n", "at least 7"),
        ("accounts:\n- {accessKey: longenough, secretKey: 123456}\n", "at least 7"),
        ("accounts:\n- {secretKey: 12345678}\n", "accounts[0]"),
        ("accounts:\n- {accessKey: longenough, secretKey: 12345678, admn: true}\n", "accounts[0].admn: unknown key"),
        ("acounts: []\n", "acounts: unknown key"),
        ("accounts:\n- {accessKey: longenough, secretKey: 12345678, defaultTopicPerm: ALL}\n", "defaultTopicPerm"),
        ("accounts:\n- {accessKey: longenough, secretKey: 12345678, topicPerms: [t=PUBSUB]}\n", "topicPerms[0]"),
        ("accounts:\n- {accessKey: longenough, secretKey: 12345678, topicPerms: [justtopic]}\n", "not name=PERM"),
        ("accounts:\n- {accessKey: longenough, secretKey: 12345678, admin: yes-please}\n", "admin"),
        ("accounts:\n- {accessKey: longenough, secretKey: 12345678, whiteRemoteAddress: 1.2.3}\n", "whiteRemote"),
        ("globalWhiteRemoteAddresses: [999.1.1.1]\n", "globalWhiteRemoteAddresses[0]"),
        ("accounts: {accessKey: x}\n", "accounts: expected a list"),
        ("- just a list\n", "expected a mapping"),
        ("accounts: [\n", "not valid YAML"),
        ("dataVersion: [nope]\n", "dataVersion"),
    ],
)
def test_bad_files_are_refused_naming_the_key(tmp_path: Path, text: str, names: str) -> None:
    path = write(tmp_path / "plain_acl.yml", text)
    with pytest.raises(AclConfigError) as err:
        load_rules(path)
    assert names in str(err.value) and path in str(err.value)


def test_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AclConfigError, match="not found"):
        load_rules(tmp_path / "plain_acl.yml")


def test_write_document_round_trips(tmp_path: Path) -> None:
    path = str(tmp_path / "plain_acl.yml")
    doc = parse_document(None, path).document
    write_document(path, {**doc, "accounts": [{"accessKey": "newkey1", "secretKey": "newsecret"}]})
    assert load_rules(path).accounts["newkey1"].secret_key == "newsecret"
    assert [p.name for p in tmp_path.iterdir()] == ["plain_acl.yml"]  # no temporary file left behind
