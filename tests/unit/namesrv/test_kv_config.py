"""KVConfigManager: table operations and atomic JSON persistence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketq.namesrv.kv_config import KVConfigFull, KVConfigManager


def test_put_get_delete_list(tmp_path: Path) -> None:
    kv = KVConfigManager(tmp_path / "kvConfig.json")
    assert kv.get("ns", "k") is None
    assert kv.list_namespace("ns") is None
    kv.put("ns", "k", "v")
    kv.put("ns", "k2", "v2")
    kv.put("other", "k", "x")
    assert kv.get("ns", "k") == "v"
    assert kv.list_namespace("ns") == {"k": "v", "k2": "v2"}
    kv.put("ns", "k", "v-new")
    assert kv.get("ns", "k") == "v-new"
    kv.delete("ns", "k")
    assert kv.get("ns", "k") is None
    kv.delete("ns", "missing")
    kv.delete("missing-ns", "k")
    kv.delete("ns", "k2")
    # An emptied namespace still exists (Java keeps the inner map).
    assert kv.list_namespace("ns") == {}


def test_list_is_a_copy(tmp_path: Path) -> None:
    kv = KVConfigManager(tmp_path / "kv.json")
    kv.put("ns", "k", "v")
    table = kv.list_namespace("ns")
    assert table is not None
    table["k"] = "changed"
    assert kv.get("ns", "k") == "v"


def test_persisted_in_java_format_and_reloaded(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "kvConfig.json"
    kv = KVConfigManager(path)
    kv.put("ORDER_TOPIC_CONFIG", "T1", "broker-a:4")
    assert json.loads(path.read_text()) == {"configTable": {"ORDER_TOPIC_CONFIG": {"T1": "broker-a:4"}}}
    again = KVConfigManager(path)
    again.load()
    assert again.get("ORDER_TOPIC_CONFIG", "T1") == "broker-a:4"


def test_each_write_keeps_the_previous_file_as_bak(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    kv = KVConfigManager(path)
    kv.put("ns", "a", "1")
    assert not (tmp_path / "kvConfig.json.bak").exists()
    kv.put("ns", "b", "2")
    bak = json.loads((tmp_path / "kvConfig.json.bak").read_text())
    assert bak == {"configTable": {"ns": {"a": "1"}}}
    assert not (tmp_path / "kvConfig.json.tmp").exists()


def test_load_falls_back_to_bak(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    kv = KVConfigManager(path)
    kv.put("ns", "a", "1")
    kv.put("ns", "b", "2")
    # A crash between "current → .bak" and ".tmp → current" leaves no main file.
    path.unlink()
    again = KVConfigManager(path)
    again.load()
    assert again.list_namespace("ns") == {"a": "1"}


def test_load_skips_a_corrupt_main_file(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    (tmp_path / "kvConfig.json.bak").write_text('{"configTable":{"ns":{"a":"1"}}}')
    path.write_text("{torn")
    kv = KVConfigManager(path)
    kv.load()
    assert kv.get("ns", "a") == "1"


def test_load_without_files_is_empty(tmp_path: Path) -> None:
    kv = KVConfigManager(tmp_path / "none.json")
    kv.load()
    assert kv.snapshot() == {}


def test_load_accepts_java_compact_json_and_non_string_values(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_text('{"configTable":{"ns":{"a":"1","n":5,"z":null}}}')
    kv = KVConfigManager(path)
    kv.load()
    assert kv.list_namespace("ns") == {"a": "1", "n": "5"}


def test_in_memory_manager(tmp_path: Path) -> None:
    kv = KVConfigManager(None)
    kv.load()
    kv.put("ns", "k", "v")
    assert kv.get("ns", "k") == "v"
    assert list(tmp_path.iterdir()) == []


def test_a_put_past_the_byte_bound_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    kv = KVConfigManager(path, max_bytes=20)
    kv.put("ns", "k", "v" * 10)  # 2 + 1 + 10 = 13 bytes
    assert kv.size_bytes == 13
    before = path.read_bytes()
    with pytest.raises(KVConfigFull, match="kvConfigMaxBytes=20"):
        kv.put("ns", "k2", "v" * 10)
    assert kv.get("ns", "k2") is None and kv.size_bytes == 13 and path.read_bytes() == before
    kv.put("ns", "k", "w" * 17)  # replacing counts the difference only: 2 + 1 + 17 = 20
    assert kv.size_bytes == 20
    kv.delete("ns", "k")
    assert kv.size_bytes == 2  # the emptied namespace stays, as Java keeps it
    again = KVConfigManager(path, max_bytes=20)
    again.load()
    assert again.size_bytes == 2


def test_nothing_changed_means_no_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    kv = KVConfigManager(path)
    kv.put("ns", "k", "v")
    path.unlink()
    kv.put("ns", "k", "v")
    kv.delete("ns", "missing")
    kv.delete("other", "k")
    assert not path.exists()  # each of these left the table as it was
    kv.delete("ns", "k")
    assert json.loads(path.read_text()) == {"configTable": {"ns": {}}}
