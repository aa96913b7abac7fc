"""RouteInfoManager: pure route tables driven with a fake clock (no sockets, no event loop)."""

from __future__ import annotations

from rocketq.namesrv.route_info import RegisterBrokerResult, RouteInfoManager
from rocketq.protocol.bodies import DataVersion, TopicConfig
from rocketq.protocol.route import TopicConfigSerializeWrapper


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def wrapper(counter: int, **topics: tuple[int, int, int]) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        DataVersion(timestamp=1700000000000, counter=counter),
        {name: TopicConfig(name, r, w, perm) for name, (r, w, perm) in topics.items()},
    )


def manager() -> tuple[RouteInfoManager, FakeClock]:
    clock = FakeClock()
    return RouteInfoManager(clock=clock, broker_expiry=120.0), clock


def register(
    rim: RouteInfoManager,
    name: str = "broker-a",
    addr: str = "10.0.0.1:10911",
    broker_id: int = 0,
    cluster: str = "DefaultCluster",
    wrap: TopicConfigSerializeWrapper | None = None,
    channel: object = None,
    ha: str | None = "10.0.0.1:10912",
    filter_servers: list[str] | None = None,
) -> RegisterBrokerResult:
    return rim.register_broker(cluster, addr, name, broker_id, ha, wrap, filter_servers, channel)


# ---------------------------------------------------------------------------------------- registration


def test_master_registration_creates_route() -> None:
    rim, _ = manager()
    result = register(rim, wrap=wrapper(1, T1=(4, 4, 6)))
    assert result.master_addr is None and result.ha_server_addr is None
    route = rim.pickup_topic_route_data("T1")
    assert route is not None
    assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas] == [
        ("broker-a", 4, 4, 6)
    ]
    assert [(b.cluster, b.broker_name, b.broker_addrs) for b in route.broker_datas] == [
        ("DefaultCluster", "broker-a", {0: "10.0.0.1:10911"})
    ]
    assert route.filter_server_table == {}
    assert rim.cluster_addr_table == {"DefaultCluster": {"broker-a"}}


def test_unknown_topic_has_no_route() -> None:
    rim, _ = manager()
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)))
    assert rim.pickup_topic_route_data("nope") is None


def test_a_route_handed_out_does_not_follow_later_changes() -> None:
    # Route values are frozen: the tables put new ones in place instead of changing them.
    rim, _ = manager()
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)))
    route = rim.pickup_topic_route_data("T1")
    assert route is not None
    rim.wipe_write_perm_of_broker("broker-a")
    register(rim, addr="10.0.0.2:10911", broker_id=1)
    assert route.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911"}
    assert route.queue_datas[0].perm == 6
    again = rim.pickup_topic_route_data("T1")
    assert again is not None
    assert again.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
    assert again.queue_datas[0].perm == 4


def test_topic_configs_update_only_when_the_data_version_changes() -> None:
    rim, _ = manager()
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)))
    # Same DataVersion, different content: ignored (Java's rule).
    register(rim, wrap=wrapper(1, T1=(8, 8, 6), T2=(1, 1, 6)))
    route = rim.pickup_topic_route_data("T1")
    assert route is not None and route.queue_datas[0].read_queue_nums == 4
    assert rim.pickup_topic_route_data("T2") is None
    # New DataVersion: applied.
    register(rim, wrap=wrapper(2, T1=(8, 8, 6), T2=(1, 1, 6)))
    route = rim.pickup_topic_route_data("T1")
    assert route is not None and route.queue_datas[0].read_queue_nums == 8
    assert rim.pickup_topic_route_data("T2") is not None


def test_first_registration_applies_even_with_a_known_version() -> None:
    rim, _ = manager()
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)))
    rim.unregister_broker("DefaultCluster", "10.0.0.1:10911", "broker-a", 0)
    assert rim.pickup_topic_route_data("T1") is None
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)))
    assert rim.pickup_topic_route_data("T1") is not None


def test_slave_topic_configs_are_ignored_and_slave_learns_its_master() -> None:
    rim, _ = manager()
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)), ha="10.0.0.1:10912")
    result = register(rim, addr="10.0.0.2:10911", broker_id=1, wrap=wrapper(7, T1=(9, 9, 6), T3=(1, 1, 6)))
    assert result.master_addr == "10.0.0.1:10911"
    assert result.ha_server_addr == "10.0.0.1:10912"
    assert rim.pickup_topic_route_data("T3") is None
    route = rim.pickup_topic_route_data("T1")
    assert route is not None
    assert route.queue_datas[0].read_queue_nums == 4
    assert route.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}


def test_slave_without_live_master_gets_no_master_addr() -> None:
    rim, _ = manager()
    result = register(rim, addr="10.0.0.2:10911", broker_id=1)
    assert result.master_addr is None


def test_slave_switched_to_master_keeps_one_entry_per_address() -> None:
    rim, _ = manager()
    register(rim, addr="10.0.0.2:10911", broker_id=1)
    register(rim, addr="10.0.0.2:10911", broker_id=0, wrap=wrapper(1, T1=(4, 4, 6)))
    assert rim.broker_addr_table["broker-a"].broker_addrs == {0: "10.0.0.2:10911"}


def test_two_brokers_share_a_topic() -> None:
    rim, _ = manager()
    register(rim, name="broker-b", addr="10.0.0.2:10911", wrap=wrapper(1, T1=(2, 2, 6)))
    register(rim, name="broker-a", addr="10.0.0.1:10911", wrap=wrapper(1, T1=(4, 4, 6)))
    route = rim.pickup_topic_route_data("T1")
    assert route is not None
    assert [q.broker_name for q in route.queue_datas] == ["broker-a", "broker-b"]
    assert [b.broker_name for b in route.broker_datas] == ["broker-a", "broker-b"]


def test_filter_servers() -> None:
    rim, _ = manager()
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)), filter_servers=["10.0.0.1:5000"])
    route = rim.pickup_topic_route_data("T1")
    assert route is not None and route.filter_server_table == {"10.0.0.1:10911": ("10.0.0.1:5000",)}
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)), filter_servers=[])
    route = rim.pickup_topic_route_data("T1")
    assert route is not None and route.filter_server_table == {}


def test_data_version_queries() -> None:
    rim, clock = manager()
    register(rim, wrap=wrapper(3))
    assert rim.query_broker_topic_config("10.0.0.1:10911") == DataVersion(1700000000000, 3)
    assert rim.query_broker_topic_config("nope") is None
    assert not rim.is_broker_topic_config_changed("10.0.0.1:10911", DataVersion(1700000000000, 3))
    assert rim.is_broker_topic_config_changed("10.0.0.1:10911", DataVersion(1700000000000, 4))
    assert rim.is_broker_topic_config_changed("nope", DataVersion(1700000000000, 3))
    clock.now += 100
    rim.update_broker_info_update_timestamp("10.0.0.1:10911")
    assert rim.broker_live_table["10.0.0.1:10911"].last_update == clock.now


# ------------------------------------------------------------------------------------------- removal


def test_unregister_removes_broker_cluster_and_topics() -> None:
    rim, _ = manager()
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)))
    register(rim, name="broker-b", addr="10.0.0.2:10911", wrap=wrapper(1, T1=(4, 4, 6), T2=(1, 1, 6)))
    rim.unregister_broker("DefaultCluster", "10.0.0.2:10911", "broker-b", 0)
    assert rim.pickup_topic_route_data("T2") is None
    route = rim.pickup_topic_route_data("T1")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-a"]
    rim.unregister_broker("DefaultCluster", "10.0.0.1:10911", "broker-a", 0)
    assert rim.topic_queue_table == {}
    assert rim.broker_addr_table == {}
    assert rim.cluster_addr_table == {}
    assert rim.broker_live_table == {}


def test_unregister_slave_keeps_master() -> None:
    rim, _ = manager()
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)))
    register(rim, addr="10.0.0.2:10911", broker_id=1)
    rim.unregister_broker("DefaultCluster", "10.0.0.2:10911", "broker-a", 1)
    route = rim.pickup_topic_route_data("T1")
    assert route is not None and route.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911"}


def test_expiry_after_missed_heartbeats() -> None:
    rim, clock = manager()
    chan_a, chan_b = object(), object()
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)), channel=chan_a)
    register(rim, name="broker-b", addr="10.0.0.2:10911", cluster="C2", wrap=wrapper(1, T2=(4, 4, 6)), channel=chan_b)
    clock.now += 60
    register(rim, name="broker-b", addr="10.0.0.2:10911", cluster="C2", wrap=wrapper(1, T2=(4, 4, 6)), channel=chan_b)
    clock.now += 60
    assert rim.scan_not_active_broker() == []  # exactly 120 s is not yet expired
    clock.now += 0.001
    expired = rim.scan_not_active_broker()
    assert [(e.broker_addr, e.channel) for e in expired] == [("10.0.0.1:10911", chan_a)]
    assert rim.pickup_topic_route_data("T1") is None
    assert "DefaultCluster" not in rim.cluster_addr_table
    assert rim.pickup_topic_route_data("T2") is not None
    clock.now += 120.001
    assert [e.broker_addr for e in rim.scan_not_active_broker()] == ["10.0.0.2:10911"]
    assert rim.statistics().topics == rim.statistics().brokers == rim.statistics().clusters == 0


def test_configurable_expiry() -> None:
    rim, clock = manager()
    rim.broker_expiry = 0.5
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)))
    clock.now += 0.6
    assert len(rim.scan_not_active_broker()) == 1


def test_channel_destroy_removes_the_broker_registered_over_it() -> None:
    rim, _ = manager()
    chan = object()
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)), channel=chan)
    register(rim, addr="10.0.0.2:10911", broker_id=1, channel=object())
    rim.on_channel_destroy("10.0.0.99:40000", chan)
    # The master is gone; the slave keeps the broker name, so topics stay (as in Java).
    assert rim.broker_addr_table["broker-a"].broker_addrs == {1: "10.0.0.2:10911"}
    assert "10.0.0.1:10911" not in rim.broker_live_table
    assert rim.pickup_topic_route_data("T1") is not None


def test_channel_destroy_of_the_last_address_removes_everything() -> None:
    rim, _ = manager()
    chan = object()
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)), channel=chan)
    rim.on_channel_destroy("10.0.0.99:40000", chan)
    assert rim.topic_queue_table == {} and rim.broker_addr_table == {} and rim.cluster_addr_table == {}


def test_channel_destroy_falls_back_to_the_remote_address() -> None:
    rim, _ = manager()
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)), channel=object())
    rim.on_channel_destroy("10.0.0.1:10911", object())
    assert rim.broker_addr_table == {}


def test_channel_destroy_of_an_unrelated_client_changes_nothing() -> None:
    rim, _ = manager()
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)), channel=object())
    rim.on_channel_destroy("127.0.0.1:55555", object())
    rim.on_channel_destroy(None, None)
    assert rim.pickup_topic_route_data("T1") is not None


# ---------------------------------------------------------------------------------------- admin / lists


def test_wipe_and_add_write_perm() -> None:
    rim, _ = manager()
    register(rim, wrap=wrapper(1, T1=(4, 4, 6), T2=(4, 4, 7)))
    register(rim, name="broker-b", addr="10.0.0.2:10911", wrap=wrapper(1, T1=(4, 4, 6)))
    assert rim.wipe_write_perm_of_broker("broker-a") == 2
    perms = {t: rim.topic_queue_table[t]["broker-a"].perm for t in ("T1", "T2")}
    assert perms == {"T1": 4, "T2": 5}
    assert rim.topic_queue_table["T1"]["broker-b"].perm == 6
    assert rim.add_write_perm_of_broker("broker-a") == 2
    perms = {t: rim.topic_queue_table[t]["broker-a"].perm for t in ("T1", "T2")}
    assert perms == {"T1": 6, "T2": 6}  # Java sets exactly READ|WRITE
    assert rim.wipe_write_perm_of_broker("nope") == 0


def test_delete_topic_everywhere_and_per_cluster() -> None:
    rim, _ = manager()
    register(rim, name="broker-a", addr="10.0.0.1:10911", cluster="C1", wrap=wrapper(1, T1=(4, 4, 6), T2=(1, 1, 6)))
    register(rim, name="broker-b", addr="10.0.0.2:10911", cluster="C2", wrap=wrapper(1, T1=(4, 4, 6)))
    rim.delete_topic("T1", "C1")
    route = rim.pickup_topic_route_data("T1")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-b"]
    rim.delete_topic("T1", "C2")
    assert "T1" not in rim.topic_queue_table
    rim.delete_topic("T2")
    assert rim.get_all_topic_list() == []
    rim.delete_topic("never-existed")
    rim.delete_topic("never-existed", "C9")


def test_topic_lists() -> None:
    rim, _ = manager()
    register(rim, name="broker-a", addr="10.0.0.1:10911", cluster="C1", wrap=wrapper(1, T1=(4, 4, 6), T2=(1, 1, 6)))
    register(rim, name="broker-b", addr="10.0.0.2:10911", cluster="C2", wrap=wrapper(1, T3=(4, 4, 6)))
    assert sorted(rim.get_all_topic_list()) == ["T1", "T2", "T3"]
    assert sorted(rim.get_topics_by_cluster("C1")) == ["T1", "T2"]
    assert rim.get_topics_by_cluster("C2") == ["T3"]
    assert rim.get_topics_by_cluster("nope") == []
    topics, addr = rim.get_system_topic_list()
    assert sorted(topics) == ["C1", "C2", "broker-a", "broker-b"]
    assert addr in ("10.0.0.1:10911", "10.0.0.2:10911")
    empty, none = RouteInfoManager().get_system_topic_list()
    assert (empty, none) == ([], None)


def test_unit_topic_lists() -> None:
    rim, _ = manager()
    w = wrapper(1, U=(1, 1, 6), US=(1, 1, 6), UUS=(1, 1, 6), N=(1, 1, 6))
    w.topic_config_table["U"].topic_sys_flag = 1
    w.topic_config_table["US"].topic_sys_flag = 2
    w.topic_config_table["UUS"].topic_sys_flag = 3
    register(rim, wrap=w)
    assert sorted(rim.get_unit_topics()) == ["U", "UUS"]
    assert sorted(rim.get_has_unit_sub_topic_list()) == ["US", "UUS"]
    assert rim.get_has_unit_sub_ununit_topic_list() == ["US"]


def test_registration_without_topic_wrapper() -> None:
    rim, _ = manager()
    register(rim, wrap=None)
    assert rim.broker_live_table["10.0.0.1:10911"].data_version == DataVersion()
    assert rim.topic_queue_table == {}


def test_channel_destroy_removes_every_broker_registered_over_the_channel() -> None:
    rim, _ = manager()
    chan = object()
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)), channel=chan)
    register(rim, name="broker-b", addr="10.0.0.2:10911", wrap=wrapper(1, T1=(4, 4, 6)), channel=chan)
    register(rim, name="broker-c", addr="10.0.0.3:10911", wrap=wrapper(1, T1=(4, 4, 6)), channel=object())
    rim.on_channel_destroy("10.0.0.99:40000", chan)
    assert set(rim.broker_addr_table) == {"broker-c"}
    route = rim.pickup_topic_route_data("T1")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-c"]


def test_expiry_removes_only_the_silent_broker_of_a_shared_channel() -> None:
    rim, clock = manager()
    chan = object()
    register(rim, wrap=wrapper(1, T1=(4, 4, 6)), channel=chan)
    clock.now += 100
    register(rim, name="broker-b", addr="10.0.0.2:10911", wrap=wrapper(1, T1=(4, 4, 6)), channel=chan)
    clock.now += 21
    assert [e.broker_addr for e in rim.scan_not_active_broker()] == ["10.0.0.1:10911"]
    assert set(rim.broker_addr_table) == {"broker-b"}
