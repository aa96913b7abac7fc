"""``rocketq.client.lowlevel``: its surface, the import rule it serves, and ``RouteCache``."""

from __future__ import annotations

import ast
from pathlib import Path

import rocketq
import rocketq.client.lowlevel as lowlevel
from rocketq.client.lowlevel import MASTER_ID, BrokerData, QueueData, RouteCache, TopicRouteData

SRC = Path(rocketq.__file__).parent


def test_all_names_exist() -> None:
    for name in lowlevel.__all__:
        assert getattr(lowlevel, name) is not None, name
    assert len(set(lowlevel.__all__)) == len(lowlevel.__all__)


def test_no_private_client_imports_outside_the_client() -> None:
    # spark, bench, cli and testing reach the client through its public modules (rocketq.client.lowlevel).
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.is_relative_to(SRC / "client"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            offenders += [f"{path.relative_to(SRC)}: {n}" for n in names if n.startswith("rocketq.client._")]
    assert offenders == []


def route(*brokers: tuple[str, dict[int, str]]) -> TopicRouteData:
    return TopicRouteData(
        tuple(QueueData(name, 4, 4, 6) for name, _ in brokers),
        tuple(BrokerData("C", name, addrs) for name, addrs in brokers),
    )


def test_master_and_subscribe_lookups() -> None:
    cache = RouteCache()
    cache.put("T", route(("a", {0: "h:1", 1: "h:2"}), ("b", {1: "h:4"})))
    assert cache.master_addr("a") == "h:1"
    assert cache.master_addr("b") is None and cache.master_addr("nope") is None
    assert cache.subscribe_addr("a") == ("h:1", False)
    assert cache.subscribe_addr("a", 1) == ("h:2", True)
    assert cache.subscribe_addr("b", MASTER_ID) == ("h:4", True)  # any broker when not only_this_broker
    assert cache.subscribe_addr("b", MASTER_ID, only_this_broker=True) is None
    assert cache.subscribe_addr("b", 0 + 1) == ("h:4", True)
    assert cache.any_broker_addr("T") in ("h:1", "h:4")
    assert cache.any_broker_addr("U") is None
    assert sorted(cache.all_broker_addrs()) == [("a", 0, "h:1"), ("a", 1, "h:2"), ("b", 1, "h:4")]


def test_master_lookup_scoped_to_a_topic() -> None:
    cache = RouteCache()
    cache.put("T", route(("a", {0: "h:1"})))
    cache.put("U", route(("b", {0: "h:3"})))
    assert cache.master_addr("b") == "h:3"
    assert cache.master_addr("b", topic="T") is None  # T's route does not name broker b
    assert cache.master_addr("a", topic="T") == "h:1"
    assert cache.master_addr("a", topic="V") is None


def test_a_newer_route_replaces_a_brokers_addresses() -> None:
    cache = RouteCache()
    cache.put("T", route(("a", {0: "h:1", 1: "h:2"})))
    cache.put("U", route(("a", {0: "h:9"})))  # the master moved
    assert cache.master_addr("a") == "h:9" and cache.subscribe_addr("a", 1) == ("h:9", False)


def test_learning_brokers_without_remembering_the_route() -> None:
    cache = RouteCache()
    cache.learn_brokers(route(("a", {0: "h:1"})))
    assert cache.master_addr("a") == "h:1" and cache.route("T") is None
    assert cache.clean_offline_brokers() == ["a"]  # no remembered route names it
    assert cache.master_addr("a") is None


def test_clean_offline_brokers_keeps_addresses_a_route_still_names() -> None:
    cache = RouteCache()
    cache.put("T", route(("a", {0: "h:1"})))
    cache.learn_brokers(route(("a", {0: "h:1", 1: "h:2"}), ("b", {0: "h:3"})))
    assert cache.clean_offline_brokers() == ["b"]
    assert cache.broker_addr_table == {"a": {0: "h:1"}}
    cache.forget("T")
    assert cache.route("T") is None and cache.clean_offline_brokers() == ["a"]
