import socket
from pathlib import Path

import pytest

from rocketq.broker.config import BrokerConfig, parse_delay_levels, read_properties, store_ip
from rocketq.errors import ConfigError
from rocketq.remoting.limits import ServerLimits


def test_defaults_match_rocketmq() -> None:
    cfg = BrokerConfig()
    assert cfg.listenPort == 10911
    assert cfg.brokerClusterName == "DefaultCluster"
    assert cfg.flushDiskType == "ASYNC_FLUSH"
    assert cfg.maxMessageSize == 4 * 1024 * 1024
    assert cfg.fileReservedTime == 72
    assert cfg.deleteWhen == "04"
    assert cfg.diskMaxUsedSpaceRatio == 75
    assert cfg.waitTimeMillsInSendQueue == 200
    assert cfg.defaultTopicQueueNums == 8
    assert cfg.ha_port == 10912


def test_properties_file_and_overrides(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "# comment\n! another\nbrokerClusterName = MyCluster\nbrokerName=broker-x\nbrokerId:0\n"
        "listenPort 10999\nflushDiskType=SYNC_FLUSH\nsendMessageThreadPoolNums=16\n"
        "messageDelayLevel=1s 2s \\\n   3s\n"
    )
    cfg = BrokerConfig.load(conf, ["listenPort=11000", "autoCreateTopicEnable=false"], env={})
    assert cfg.brokerClusterName == "MyCluster"
    assert cfg.brokerName == "broker-x"
    assert cfg.listenPort == 11000
    assert cfg.flushDiskType == "SYNC_FLUSH"
    assert cfg.autoCreateTopicEnable is False
    assert cfg.delay_levels_ms() == [1000, 2000, 3000]
    assert cfg.extra == {"sendMessageThreadPoolNums": "16"}


def test_unknown_key_is_named() -> None:
    with pytest.raises(ConfigError) as info:
        BrokerConfig.load(None, ["brokerNmae=x"], env={})
    assert info.value.key == "brokerNmae"
    assert "brokerNmae" in str(info.value)


@pytest.mark.parametrize(
    ("item", "key"),
    [
        ("listenPort=abc", "listenPort"),
        ("autoCreateTopicEnable=yes", "autoCreateTopicEnable"),
        ("flushDiskType=SOMETIMES", "flushDiskType"),
        ("brokerRole=LEADER", "brokerRole"),
        ("deleteWhen=25", "deleteWhen"),
        ("messageDelayLevel=1x", "messageDelayLevel"),
        ("diskMaxUsedSpaceRatio=99", "diskMaxUsedSpaceRatio"),
        ("serverMaxConnections=0", "serverMaxConnections"),
        ("serverMaxPartialFrameBytes=1048576", "serverMaxPartialFrameBytes"),  # below maxFrameSize (16 MiB)
        ("serverWriteBufferLowWaterMark=8388608", "serverWriteBufferHighWaterMark"),  # low above high
        ("serverMaxWriteBufferBytes=4194304", "serverMaxWriteBufferBytes"),  # not above the high mark
        ("diskMinFreeBytes=-1", "diskMinFreeBytes"),
        ("diskCheckInterval=0", "diskCheckInterval"),
        ("commitLogCachedBytes=-2", "commitLogCachedBytes"),
        ("maxTopicQueueNums=0", "maxTopicQueueNums"),
        ("brokerPermission=-2147486982", "brokerPermission"),  # the fuzzer's: every later registration failed
        ("brokerPermission=8", "brokerPermission"),
        ("maxTopicQueueNums=2147483648", "maxTopicQueueNums"),
        ("defaultTopicQueueNums=2000", "defaultTopicQueueNums"),  # above maxTopicQueueNums (1024)
        ("maxMessageSize=" + str(2**70), "maxMessageSize"),  # every Java setting fits a long
        ("fileReservedTime=1e3", "fileReservedTime"),
    ],
)
def test_bad_values_name_the_key(item: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        BrokerConfig.load(None, [item], env={})
    assert info.value.key == key


def test_trace_topic_name_is_checked_when_trace_topic_enabled() -> None:
    cfg = BrokerConfig.load(None, ["traceTopicEnable=true"], env={})
    assert cfg.msgTraceTopicName == "RMQ_SYS_TRACE_TOPIC"
    with pytest.raises(ConfigError) as info:
        BrokerConfig.load(None, ["traceTopicEnable=true", "msgTraceTopicName=bad topic"], env={})
    assert info.value.key == "msgTraceTopicName"


def test_not_key_value() -> None:
    with pytest.raises(ConfigError):
        BrokerConfig.load(None, ["justakey"], env={})


def test_namesrv_addr_from_environment_and_argument_wins() -> None:
    assert BrokerConfig.load(None, [], env={"NAMESRV_ADDR": "1.2.3.4:9876"}).namesrvAddr == "1.2.3.4:9876"
    cfg = BrokerConfig.load(None, ["namesrvAddr=5.6.7.8:9876;9.9.9.9:9876"], env={"NAMESRV_ADDR": "1.2.3.4:9876"})
    assert cfg.namesrv_addrs() == ["5.6.7.8:9876", "9.9.9.9:9876"]


def test_namesrv_addr_environment_is_only_a_default_under_a_config_file(tmp_path: Path) -> None:
    """As Java's BrokerConfig: NAMESRV_ADDR is namesrvAddr's default, so a broker.conf that sets it wins."""
    conf = tmp_path / "broker.conf"
    conf.write_text("namesrvAddr = 5.6.7.8:9876\n")
    assert BrokerConfig.load(conf, [], env={"NAMESRV_ADDR": "1.2.3.4:9876"}).namesrvAddr == "5.6.7.8:9876"
    conf.write_text("brokerName = b\n")
    assert BrokerConfig.load(conf, [], env={"NAMESRV_ADDR": "1.2.3.4:9876"}).namesrvAddr == "1.2.3.4:9876"


def test_missing_config_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        BrokerConfig.load(tmp_path / "nope.conf", [], env={})


def test_delay_levels_default() -> None:
    levels = parse_delay_levels("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h")
    assert len(levels) == 18
    assert levels[0] == 1000 and levels[4] == 60_000 and levels[-1] == 7_200_000


def test_read_properties_separators(tmp_path: Path) -> None:
    p = tmp_path / "x.properties"
    p.write_text("a=1\nb : 2\nc 3\nd=\n")
    assert read_properties(p) == {"a": "1", "b": "2", "c": "3", "d": ""}


def test_acl_keys() -> None:
    import pytest

    from rocketq.broker.config import BrokerConfig
    from rocketq.errors import ConfigError

    cfg = BrokerConfig.from_mapping({"aclEnable": "true", "storePathRootDir": "/data/store"})
    assert cfg.aclEnable and cfg.aclStrictAdmin and cfg.aclReloadIntervalMills == 5000
    assert cfg.acl_file == "/data/store/conf/plain_acl.yml"
    assert BrokerConfig.from_mapping({"storePathRootDir": "/s", "aclFilePath": "acl/x.yml"}).acl_file == "/s/acl/x.yml"
    assert BrokerConfig.from_mapping({"aclFilePath": "/etc/plain_acl.yml"}).acl_file == "/etc/plain_acl.yml"
    assert not BrokerConfig.from_mapping({"aclEnable": "false"}).aclEnable
    with pytest.raises(ConfigError, match="aclEnable"):
        BrokerConfig.from_mapping({"aclEnable": "yes-please"})
    with pytest.raises(ConfigError, match="aclReloadIntervalMills"):
        BrokerConfig.from_mapping({"aclReloadIntervalMills": "0"})


def test_remoting_limits_are_set_by_their_keys() -> None:
    cfg = BrokerConfig.load(None, ["serverMaxConnections=50", "serverMaxPartialFrameBytes=33554432",
                                   "serverWriteBufferHighWaterMark=65536", "serverWriteBufferLowWaterMark=1024",
                                   "serverMaxWriteBufferBytes=1048576"], env={})  # fmt: skip
    limits = cfg.server_limits()
    assert (limits.max_connections, limits.max_partial_frame_bytes) == (50, 32 * 1024 * 1024)
    assert (limits.write_high_water, limits.write_low_water, limits.max_write_buffer) == (65536, 1024, 1048576)
    assert BrokerConfig().server_limits() == ServerLimits()  # the defaults are the remoting layer's


def test_replication_keys_have_java_defaults_and_are_checked() -> None:
    cfg = BrokerConfig()
    got = (cfg.brokerRole, cfg.haSendHeartbeatInterval, cfg.haHousekeepingInterval, cfg.haTransferBatchSize,
           cfg.haSlaveFallbehindMax, cfg.slaveTimeout)  # fmt: skip
    assert got == ("ASYNC_MASTER", 5000, 20000, 32768, 256 << 20, 3000)
    assert "haMasterAddress" not in cfg.as_properties()  # Java's null is left out of its properties
    slave = BrokerConfig.from_mapping({"brokerRole": "SLAVE", "brokerId": "2", "haMasterAddress": "10.0.0.1:10912"})
    assert slave.as_properties()["haMasterAddress"] == "10.0.0.1:10912"
    with pytest.raises(ConfigError, match="brokerId"):  # Java's broker exits: a slave needs an id > 0
        BrokerConfig.from_mapping({"brokerRole": "SLAVE"})
    with pytest.raises(ConfigError, match="slaveTimeout"):
        BrokerConfig.from_mapping({"slaveTimeout": "0"})


def test_the_keys_mqadmin_export_configs_reads_are_printed_and_read_back() -> None:
    """mqadmin exportConfigs copies 16 keys of GET_BROKER_CONFIG and fails on a missing one (it had no
    filterServerNums nor useTLS); the printed properties load back."""
    shown = BrokerConfig(tlsEnable=True).as_properties()
    assert (shown["filterServerNums"], shown["useTLS"]) == ("0", "true")
    again = BrokerConfig.from_mapping({"filterServerNums": "0", "useTLS": "true"})
    assert again.tlsEnable is True


def test_store_ip_resolves_a_host_name_brokerip1_once_as_java() -> None:
    """brokerIP1 may be a host name (Java resolves it into storeHost); the stored address is then an IP."""
    asked: list[str] = []

    def resolve(name: str) -> str:
        asked.append(name)
        return "10.0.0.7"

    assert store_ip("10.1.2.3", resolve) == "10.1.2.3"
    assert store_ip("::1", resolve) == "::1"
    assert asked == []  # an address is not looked up
    assert store_ip("broker", resolve) == "10.0.0.7"
    assert asked == ["broker"]
    assert store_ip("localhost") in ("127.0.0.1", "::1")

    def fail(name: str) -> str:
        raise socket.gaierror(-2, "Name or service not known")

    with pytest.raises(ConfigError, match=r"brokerIP1.*does not resolve"):
        store_ip("no-such-host.invalid", fail)


def test_commit_log_cached_bytes_reaches_the_store() -> None:
    from rocketq.broker.config_views import store_config_from

    assert store_config_from(BrokerConfig()).commit_log_cached_bytes == -1  # the in-memory boundary
    assert store_config_from(BrokerConfig(commitLogCachedBytes=1 << 29)).commit_log_cached_bytes == 1 << 29
