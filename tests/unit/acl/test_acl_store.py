"""AclStore: change detection, a refused reload keeping the rules (and not re-reported), the admin writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from rocketq.acl import signature
from rocketq.acl.errors import AclConfigError, AclDenied
from rocketq.acl.store import AccountUpdate, AclAdminError, AclStore

BASE = "accounts:\n  - {accessKey: firstkey, secretKey: first-secret, defaultTopicPerm: PUB}\n"


def touch_later(path: Path, text: str) -> None:
    """Write ``text`` with an mtime surely different from the previous one (coarse file-system clocks)."""
    st = path.stat()
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def allowed(store: AclStore, key: str, secret: str) -> bool:
    ext = {"a": "pg", "b": "T"}
    signature.sign_request(ext, b"", key, secret)
    try:
        store.check("127.0.0.1", 310, ext, b"")
    except AclDenied:
        return False
    return True


def test_poll_reloads_changes_and_refuses_bad_files(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    main = tmp_path / "plain_acl.yml"
    main.write_text(BASE)
    store = AclStore(main, clock=lambda: 1.5)
    store.load()
    assert not store.poll()  # nothing changed
    assert allowed(store, "firstkey", "first-secret")
    touch_later(main, BASE.replace("firstkey", "otherkey"))
    assert store.poll() and store.reloads == 1
    assert allowed(store, "otherkey", "first-secret") and not allowed(store, "firstkey", "first-secret")
    touch_later(main, "accounts: [\n")
    assert not store.poll() and store.refused_reloads == 1
    assert not store.poll() and store.refused_reloads == 1  # the same broken state is reported once
    assert caplog.text.count("acl.reload_refused") == 1
    assert allowed(store, "otherkey", "first-secret")  # previous rules in force
    # a new file in acl/ is noticed (the file count changed)
    (tmp_path / "acl").mkdir()
    (tmp_path / "acl" / "more.yml").write_text("accounts:\n  - {accessKey: morekey1, secretKey: more-secret}\n")
    touch_later(main, BASE)
    assert store.poll()
    assert allowed(store, "firstkey", "first-secret") and store.rules.owners["morekey1"].endswith("more.yml")
    (tmp_path / "acl" / "more.yml").unlink()
    assert store.poll() and "morekey1" not in store.rules.accounts


def test_load_refuses_and_keeps_nothing(tmp_path: Path) -> None:
    store = AclStore(tmp_path / "plain_acl.yml")
    with pytest.raises(AclConfigError, match="not found"):
        store.load()
    assert store.rules.accounts == {}


def test_admin_writes(tmp_path: Path) -> None:
    main = tmp_path / "plain_acl.yml"
    main.write_text(BASE)
    (tmp_path / "acl").mkdir()
    extra = tmp_path / "acl" / "team.yml"
    extra.write_text("accounts:\n  - {accessKey: teamkey1, secretKey: team-secret}\n")
    store = AclStore(main, clock=lambda: 2.0)
    store.load()
    store.update_account(AccountUpdate("teamkey1", "new-team-secret", default_topic_perm="PUB"))
    written = yaml.safe_load(extra.read_text())  # updated where it is defined
    assert written["accounts"] == [{"accessKey": "teamkey1", "secretKey": "new-team-secret", "admin": False,
                                    "defaultTopicPerm": "PUB"}]  # fmt: skip
    assert written["dataVersion"] == [{"counter": 1, "timestamp": 2000}]
    assert allowed(store, "teamkey1", "new-team-secret")
    assert not store.poll()  # its own write is not a change to reload
    store.update_account(AccountUpdate("brandnew", "brandnew-secret", topic_perms=["T=PUB"]))
    assert "brandnew" in [a["accessKey"] for a in yaml.safe_load(main.read_text())["accounts"]]
    with pytest.raises(AclAdminError, match="longer than 6"):
        store.update_account(AccountUpdate("brandnew", "short"))
    with pytest.raises(AclAdminError, match="whiteRemoteAddress"):
        store.update_account(AccountUpdate("brandnew", "brandnew-secret", white_remote_address="1.2.3"))
    assert allowed(store, "brandnew", "brandnew-secret")  # a refused update changed nothing
    assert store.delete_account("brandnew") and not store.delete_account("brandnew")
    assert not allowed(store, "brandnew", "brandnew-secret")
    store.update_global_white(["127.0.0.1"])
    assert allowed(store, "nobody00", "x")
    with pytest.raises(AclAdminError, match="not one of"):
        store.update_global_white(["*"], str(tmp_path / "elsewhere.yml"))
    store.update_global_white([], str(extra))
    assert yaml.safe_load(extra.read_text())["globalWhiteRemoteAddresses"] == []
    # main: created, deleted, white list; team.yml: updated, white list
    assert store.versions()[str(main)][0] == 3 and store.default_version()[0] == 3
    assert store.versions()[str(extra)][0] == 2


def test_a_rewrite_keeping_mtime_and_size_is_seen(tmp_path: Path) -> None:
    main = tmp_path / "plain_acl.yml"
    main.write_text(BASE)
    store = AclStore(main)
    store.load()
    st = main.stat()
    main.write_text(BASE.replace("firstkey", "fir2tkey"))  # same size
    os.utime(main, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime (a coarse clock)
    assert store.poll() and "fir2tkey" in store.rules.accounts


def test_admin_codes_can_be_given(tmp_path: Path) -> None:
    main = tmp_path / "plain_acl.yml"
    main.write_text(BASE)
    store = AclStore(main, admin_codes=frozenset({103}))
    store.load()
    ext = {"brokerName": "b"}
    signature.sign_request(ext, b"", "firstkey", "first-secret")
    with pytest.raises(AclDenied, match="request code=103"):
        store.check("127.0.0.1", 103, ext, b"")
    store.check("127.0.0.1", 215, ext, b"")  # not in the given set
