"""Broker configuration with RocketMQ's own ``broker.conf`` property names.

Sources, later winning: defaults (``NAMESRV_ADDR`` from the environment is namesrvAddr's default, as in Java's
``BrokerConfig``), a Java-properties file (``-c broker.conf``), then ``key=value`` arguments. An unknown key or a
value of the wrong type raises ``ConfigError`` naming the key. Java keys that tune things rocketq does not have
(thread-pool sizes, Netty options) are accepted and ignored with a warning, so that an existing broker.conf still
starts.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import os
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketq.broker.ha_access import HAPeerPolicy
from rocketq.common.properties import parse_properties
from rocketq.common.settings import key_values
from rocketq.common.suggest import did_you_mean
from rocketq.errors import ConfigError
from rocketq.protocol.header_codec import INT32_MAX, INT64_MAX, INT64_MIN
from rocketq.protocol.topics import topic_name_error
from rocketq.remoting.limits import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_PARTIAL_FRAME_BYTES,
    DEFAULT_MAX_WRITE_BUFFER,
    DEFAULT_WRITE_HIGH_WATER,
    DEFAULT_WRITE_LOW_WATER,
    LIMIT_KEYS,
    ServerLimits,
)
from rocketq.remoting.local_address import local_address
from rocketq.remoting.server import binds_every_interface
from rocketq.remoting.tls import ClientTls, ServerTls, TlsMode

log = logging.getLogger("rocketq.broker.config")

DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

# Java broker keys that have no counterpart here; accepted so real broker.conf files load.
IGNORED_JAVA_KEYS = frozenset(
    {
        "sendMessageThreadPoolNums", "pullMessageThreadPoolNums", "queryMessageThreadPoolNums",
        "adminBrokerThreadPoolNums", "clientManageThreadPoolNums", "consumerManageThreadPoolNums",
        "heartbeatThreadPoolNums", "endTransactionThreadPoolNums", "processReplyMessageThreadPoolNums",
        "useEpollNativeSelector", "serverWorkerThreads", "serverCallbackExecutorThreads", "serverSelectorThreads",
        "serverOnewaySemaphoreValue", "serverAsyncSemaphoreValue", "serverSocketSndBufSize", "serverSocketRcvBufSize",
        "serverPooledByteBufAllocatorEnable", "transientStorePoolEnable", "transientStorePoolSize",
        "useReentrantLockWhenPutMessage", "warmMapedFileEnable", "osPageCacheBusyTimeOutMills",
        "storePathConsumeQueue", "storePathIndex", "storePathCommitLog", "isEnableBatchPush",
        "fetchNamesrvAddrByAddressServer", "rocketmqHome", "waitTimeMillsInPullQueue",
        "waitTimeMillsInHeartbeatQueue", "waitTimeMillsInTransactionQueue", "sendThreadPoolQueueCapacity",
        "pullThreadPoolQueueCapacity", "messageIndexEnable",
        "messageIndexSafe", "cleanFileForciblyEnable", "brokerFastFailureEnable",
        "filterServerNums",  # no filter servers (GET_BROKER_CONFIG prints 0 for Java's tools)
    }
)  # fmt: skip


# Java's TLS system properties (TlsSystemConfig), accepted under their own names in broker.conf
TLS_KEY_ALIASES = {
    "tls.server.mode": "tlsServerMode",
    "tls.server.certPath": "tlsServerCertPath",
    "tls.server.keyPath": "tlsServerKeyPath",
    "tls.server.trustCertPath": "tlsServerTrustCertPath",
    "tls.server.need.client.auth": "tlsServerNeedClientAuth",
    "tls.enable": "tlsEnable",
    "useTLS": "tlsEnable",  # BrokerConfig's own name for it (what GET_BROKER_CONFIG prints)
    "tls.client.trustCertPath": "tlsClientTrustCertPath",
    "tls.client.authServer": "tlsClientAuthServer",
}

# Security settings that must never be ignored: ``true`` is refused (fail closed) until the feature exists.
FAIL_CLOSED_KEYS: dict[str, str] = {}

#: the ACL account file when ``aclFilePath`` is not set, under ``storePathRootDir`` (Java:
#: ``$ROCKETMQ_HOME/conf/plain_acl.yml``, system property ``rocketmq.acl.plain.file``)
DEFAULT_ACL_FILE = "conf/plain_acl.yml"


#: the metricsExporterType values rocketq serves (Java 5.1 also has OTLP_GRPC and LOG)
METRICS_EXPORTER_TYPES = ("DISABLE", "PROM")


@dataclass
class BrokerConfig:
    """Every field is settable by its camelCase name (the name in Java's BrokerConfig/MessageStoreConfig)."""

    brokerClusterName: str = "DefaultCluster"
    brokerName: str = "broker-a"
    brokerId: int = 0
    brokerIP1: str = "127.0.0.1"
    brokerIP2: str = ""
    listenHost: str = "0.0.0.0"  # rocketq: address to bind (Java binds every interface)
    # rocketq: serve on a non-loopback listenHost without ACL (refused otherwise; rocketq.remoting.exposure)
    allowInsecureBind: bool = False
    listenPort: int = 10911
    fastListenPortEnable: bool = True  # rocketq: also serve the VIP port listenPort - 2
    haListenPort: int = 0  # 0 = listenPort + 1 (reserved for replication)
    namesrvAddr: str = ""
    storePathRootDir: str = str(Path.home() / "store")
    brokerRole: str = "ASYNC_MASTER"
    flushDiskType: str = "ASYNC_FLUSH"
    brokerPermission: int = 6
    # Java 5.1's keys: PROM serves /metrics (docs/metrics.md); DISABLE (the default) serves nothing. The host is
    # loopback by default (rocketq; Java: brokerIP1, which "" still means); any other needs aclEnable or
    # allowInsecureBind, as listenHost does. Port 0: any free one (tests)
    metricsExporterType: str = "DISABLE"
    metricsPromExporterPort: int = 5557
    metricsPromExporterHost: str = "127.0.0.1"
    # the RocketMQ 5.x gRPC endpoint in the broker's process (docs/grpc.md; Java's proxy names): off by default,
    # on listenHost:grpcServerPort (0: any free port). enableTopicMessageTypeCheck: told to 5.x producers
    grpcServerEnable: bool = False
    grpcServerPort: int = 8081
    enableTopicMessageTypeCheck: bool = True
    autoCreateTopicEnable: bool = True
    autoCreateSubscriptionGroup: bool = True
    defaultTopicQueueNums: int = 8
    # rocketq: the most queues a topic (or a group's retry topic) may have; Java has no bound (docs/reliability.md)
    maxTopicQueueNums: int = 1024
    clusterTopicEnable: bool = True
    brokerTopicEnable: bool = True
    traceTopicEnable: bool = False  # create msgTraceTopicName at start-up (clients with enableMsgTrace write it)
    msgTraceTopicName: str = "RMQ_SYS_TRACE_TOPIC"
    traceOn: bool = True
    regionId: str = "DefaultRegion"
    messageDelayLevel: str = DEFAULT_DELAY_LEVELS
    maxMessageSize: int = 4 * 1024 * 1024
    mappedFileSizeCommitLog: int = 1024 * 1024 * 1024
    mappedFileSizeConsumeQueue: int = 300_000 * 20
    flushIntervalCommitLog: int = 500
    flushCommitLogLeastPages: int = 4
    flushCommitLogThoroughInterval: int = 10_000
    syncFlushTimeout: int = 5_000
    # replication (Java's MessageStoreConfig names; docs/replication.md)
    haMasterAddress: str = ""  # a slave's static master HA address (else learned from the name server)
    haSendHeartbeatInterval: int = 5_000
    haHousekeepingInterval: int = 20_000
    haTransferBatchSize: int = 32 * 1024
    haSlaveFallbehindMax: int = 256 * 1024 * 1024
    slaveTimeout: int = 3_000  # SYNC_MASTER's wait for a slave's ack (4.9.3+)
    haReconnectInterval: int = 5_000  # rocketq: a slave's pause before connecting again (Java hard-codes 5 s)
    # rocketq: HA peers besides loopback (ACL address patterns, ';'-separated); empty = loopback only
    haAllowedAddresses: str = ""
    # 5.x controller mode (Java's BrokerConfig / MessageStoreConfig names; docs/replication.md)
    enableControllerMode: bool = False
    controllerAddr: str = ""  # ';'-separated controller addresses
    brokerHeartbeatInterval: int = 1_000
    syncBrokerMetadataPeriod: int = 5_000
    checkSyncStateSetPeriod: int = 5_000
    haMaxTimeSlaveNotCatchup: int = 15_000
    controllerHeartBeatTimeoutMills: int = 10_000
    brokerElectionPriority: int = 2_147_483_647
    # a send (SYNC_MASTER) and a consumer wait for the whole in-sync set; Java's default is false (no wait, the
    # master alone confirms), ours true: an acknowledged message survives a failover (docs/replication.md)
    allAckInSyncStateSet: bool = True
    fileReservedTime: int = 72
    deleteWhen: str = "04"
    diskMaxUsedSpaceRatio: int = 75
    # rocketq: writes are refused while less than this is free on the store's partitions (see docs/reliability.md)
    diskMinFreeBytes: int = 256 * 1024 * 1024
    diskCheckInterval: int = 500  # rocketq: ms between free-space readings (also read at each commit-log roll)
    maxHashSlotNum: int = 5_000_000
    maxIndexNum: int = 20_000_000
    checkCRCOnRecover: bool = True
    maxTransferCountOnMessageInMemory: int = 32
    maxTransferBytesOnMessageInMemory: int = 256 * 1024
    waitTimeMillsInSendQueue: int = 200
    sendQueueCapacity: int = 10_000  # rocketq: pending sends beyond this are refused with SYSTEM_BUSY
    registerNameServerPeriod: int = 30_000
    longPollingEnable: bool = True
    shortPollingTimeMills: int = 1_000
    clientChannelExpiredTimeMills: int = 120_000  # rocketq: Java hard-codes 120 s
    clientScanIntervalMills: int = 10_000  # rocketq: Java hard-codes 10 s
    consumerOffsetPersistIntervalMills: int = 5_000  # Java: flushConsumerOffsetInterval
    enablePropertyFilter: bool = False
    # POP (RocketMQ 5): revive queues in rmq_sys_REVIVE_LOG_<cluster>, the revive loop's longest sleep (ms; a
    # checkpoint due earlier wakes it), and the most pops parked in long polling at once (then POLLING_FULL)
    reviveQueueNum: int = 8
    reviveInterval: int = 1000
    popPollingMapSize: int = 100000
    filterSupportRetry: bool = False
    rejectTransactionMessage: bool = False
    storeReplyMessageEnable: bool = True  # request-reply: also store replies (in <cluster>_REPLY_TOPIC)
    transactionTimeOut: int = 6_000
    transactionCheckMax: int = 15
    transactionCheckInterval: int = 60_000
    offsetCheckInSlave: bool = False
    # reads from a slave (docs/replication.md): PULL answers suggest the group's brokerId (or, when the pull lags by
    # more than accessMessageInMemoryMaxRatio % of RAM, its whichBrokerWhenConsumeSlowly) instead of the master
    slaveReadEnable: bool = False
    accessMessageInMemoryMaxRatio: int = 40
    # rocketq: flushed commit log kept in the page cache behind the write position; older pages are evicted so the
    # page warmer reuses them (docs/store.md). -1: accessMessageInMemoryMaxRatio % of RAM; 0: never evict
    commitLogCachedBytes: int = -1
    # rocketq: SlaveSynchronize's period (Java: a fixed 10 s, first run 3 s after start)
    slaveSyncIntervalMills: int = 10_000
    # rocketq: the timer check interval; a delay level whose next message cannot be read is retried after it
    scheduleIntervalMills: int = 100
    lockMaxLiveTimeMills: int = 60_000  # rocketq: Java's rocketmq.broker.rebalance.lockMaxLiveTime
    maxFrameSize: int = 16 * 1024 * 1024
    # rocketq: remoting limits (docs/reliability.md) — connections over the maximum are closed at accept; when
    # unfinished frames of all connections hold more bytes, the longest-stalled holders are closed; a client whose
    # unsent answers pass the high water mark is not read until they drain under the low one, and closed beyond
    # the hard cap
    serverMaxConnections: int = DEFAULT_MAX_CONNECTIONS
    serverMaxPartialFrameBytes: int = DEFAULT_MAX_PARTIAL_FRAME_BYTES
    serverWriteBufferHighWaterMark: int = DEFAULT_WRITE_HIGH_WATER
    serverWriteBufferLowWaterMark: int = DEFAULT_WRITE_LOW_WATER
    serverMaxWriteBufferBytes: int = DEFAULT_MAX_WRITE_BUFFER
    # rocketq: after a request, keep polling the sockets up to this long (adaptive, 0 = off) instead of sleeping
    busyPollMaxMicros: int = 200
    # plain ACL (docs/security.md): AK/SK signatures and per-account permissions on every request
    aclEnable: bool = False
    # rocketq: the account file (Java: system property rocketmq.acl.plain.file); relative to storePathRootDir,
    # empty = conf/plain_acl.yml there; every *.yml/*.yaml under the acl/ directory beside it is read too
    aclFilePath: str = ""
    aclReloadIntervalMills: int = 5_000  # rocketq: how often the ACL files are checked for changes (Java: 5 s)
    # rocketq: also keep for admin accounts the codes that read or change what is not the caller's own (every
    # group's offsets, the broker config, the ACL accounts, offset resets; docs/security.md); false = Java's five
    aclStrictAdmin: bool = True
    # rocketq: batch sends, offset queries and queue locks are checked against the account's topic and group
    # permissions too (Java checks only the key and signature of these); false = as Java
    aclStrictResources: bool = True
    # TLS on the remoting ports (rocketq.remoting.tls; Java's tls.server.* names are accepted too). Java defaults
    # to permissive with a generated test certificate; rocketq has none, so it defaults to disabled.
    tlsServerMode: str = "disabled"
    tlsServerCertPath: str = ""
    tlsServerKeyPath: str = ""
    tlsServerTrustCertPath: str = ""
    tlsServerNeedClientAuth: str = "none"
    # the broker's own connections (registration with the name servers): Java's tls.enable and tls.client.*
    tlsEnable: bool = False
    tlsClientTrustCertPath: str = ""
    tlsClientAuthServer: bool = True  # rocketq: verify the name server's certificate (Java's default: false)
    # rocketq: the account the broker signs its name-server requests with (a protected name server;
    # docs/security.md). Java 5's broker has these keys for its outbound requests; Java 4.9's never signs.
    accessKey: str = ""
    secretKey: str = ""
    extra: dict[str, str] = field(default_factory=dict, repr=False)  # ignored Java keys, for GET_BROKER_CONFIG

    # ------------------------------------------------------------------------------------- derived

    @property
    def controller_addrs(self) -> list[str]:
        return [a.strip() for a in self.controllerAddr.split(";") if a.strip()]

    @property
    def metrics_on(self) -> bool:
        return self.metricsExporterType.upper() == "PROM"

    @property
    def metrics_host(self) -> str:
        """Where /metrics listens: ``metricsPromExporterHost``, or brokerIP1 when it is empty (Java's rule)."""
        return self.metricsPromExporterHost or self.brokerIP1

    @property
    def broker_addr(self) -> str:
        return f"{self.brokerIP1}:{self.listenPort}"

    @property
    def ha_port(self) -> int:
        return self.haListenPort or self.listenPort + 1

    @property
    def acl_file(self) -> str:
        """The main ACL file, absolute."""
        path = Path(self.aclFilePath or DEFAULT_ACL_FILE)
        return str(path if path.is_absolute() else Path(self.storePathRootDir) / path)

    def server_limits(self) -> ServerLimits:
        return ServerLimits(
            max_connections=self.serverMaxConnections,
            max_partial_frame_bytes=self.serverMaxPartialFrameBytes,
            write_high_water=self.serverWriteBufferHighWaterMark,
            write_low_water=self.serverWriteBufferLowWaterMark,
            max_write_buffer=self.serverMaxWriteBufferBytes,
        )

    def server_tls(self) -> ServerTls:
        return ServerTls(
            TlsMode.parse(self.tlsServerMode), self.tlsServerCertPath, self.tlsServerKeyPath,
            trust_cert_path=self.tlsServerTrustCertPath, need_client_auth=self.tlsServerNeedClientAuth,
        )  # fmt: skip

    def client_tls(self) -> ClientTls | None:
        """TLS for the broker's own connections (None: plain TCP)."""
        if not self.tlsEnable:
            return None
        return ClientTls(trust_cert_path=self.tlsClientTrustCertPath, verify=self.tlsClientAuthServer)

    def namesrv_addrs(self) -> list[str]:
        return [a.strip() for a in self.namesrvAddr.split(";") if a.strip()]

    def delay_levels_ms(self) -> list[int]:
        return parse_delay_levels(self.messageDelayLevel)

    def as_properties(self) -> dict[str, str]:
        """Every key with the value in effect (GET_BROKER_CONFIG): an unset HA port or second IP shows what is
        used instead (listenPort + 1, brokerIP1), as Java shows the values its start-up filled in."""
        out = {}
        for f in dataclasses.fields(self):
            if f.name == "extra":
                continue
            v = getattr(self, f.name)
            out[f.name] = ("true" if v else "false") if isinstance(v, bool) else str(v)
        if self.secretKey:  # GET_BROKER_CONFIG must not hand the secret to whoever asks
            out["secretKey"] = "******"
        out["haListenPort"] = str(self.ha_port)
        out["brokerIP2"] = self.brokerIP2 or self.brokerIP1
        if not self.haMasterAddress:  # Java's null: its properties leave the key out
            del out["haMasterAddress"]
        # Java BrokerConfig fields mqadmin exportConfigs reads (a missing one is its NullPointerException): no
        # filter servers here; useTLS is Java's name for the broker's own TLS switch (tls.enable)
        out["filterServerNums"] = "0"
        out["useTLS"] = "true" if self.tlsEnable else "false"
        out.update(self.extra)
        return out

    # -------------------------------------------------------------------------------------- build

    @classmethod
    def load(
        cls,
        conf_file: str | os.PathLike[str] | None = None,
        overrides: Iterable[str] = (),
        env: Mapping[str, str] | None = None,
        base: Mapping[str, str] | None = None,
    ) -> BrokerConfig:
        values: dict[str, str] = dict(base or {})
        if conf_file is not None:
            values.update(read_properties(Path(conf_file)))
        env = os.environ if env is None else env
        if env.get("NAMESRV_ADDR") and "namesrvAddr" not in values:
            values["namesrvAddr"] = env["NAMESRV_ADDR"]
        values.update(key_values(overrides))
        return cls.from_mapping(values)

    @classmethod
    def from_mapping(cls, values: Mapping[str, str]) -> BrokerConfig:
        cfg = cls()
        types = {f.name: f.type for f in dataclasses.fields(cls) if f.name != "extra"}
        for key, raw in values.items():
            key = TLS_KEY_ALIASES.get(key, key)
            if key in FAIL_CLOSED_KEYS:
                _refuse_unless_off(key, raw)
                cfg.extra[key] = raw
                continue
            if key in IGNORED_JAVA_KEYS:
                log.warning("config.ignored key=%s (no effect in rocketq)", key)
                cfg.extra[key] = raw
                continue
            kind = types.get(key)
            if kind is None:
                hint = did_you_mean(key, [*types, *IGNORED_JAVA_KEYS, *FAIL_CLOSED_KEYS])
                raise ConfigError(key, f"unknown broker configuration key{hint}")
            setattr(cfg, key, convert_value(key, raw, kind))
        cfg.validate()
        return cfg

    def validate(self) -> None:
        if self.brokerRole not in ("ASYNC_MASTER", "SYNC_MASTER", "SLAVE"):
            raise ConfigError("brokerRole", f"must be ASYNC_MASTER, SYNC_MASTER or SLAVE, not {self.brokerRole!r}")
        if self.brokerRole == "SLAVE" and self.brokerId <= 0:
            raise ConfigError("brokerId", f"a SLAVE needs a brokerId > 0, not {self.brokerId}")
        for key in ("haSendHeartbeatInterval", "haHousekeepingInterval", "haTransferBatchSize", "slaveTimeout",
                    "haReconnectInterval", "slaveSyncIntervalMills", "brokerHeartbeatInterval",
                    "syncBrokerMetadataPeriod", "checkSyncStateSetPeriod", "haMaxTimeSlaveNotCatchup",
                    "controllerHeartBeatTimeoutMills"):  # fmt: skip
            if getattr(self, key) <= 0:
                raise ConfigError(key, f"must be > 0, not {getattr(self, key)}")
        try:
            HAPeerPolicy.parse(self.haAllowedAddresses)
        except ValueError as exc:
            raise ConfigError("haAllowedAddresses", str(exc)) from None
        if self.enableControllerMode and not self.controller_addrs:
            raise ConfigError("controllerAddr", "enableControllerMode=true needs at least one controller address")
        if self.flushDiskType not in ("ASYNC_FLUSH", "SYNC_FLUSH"):
            raise ConfigError("flushDiskType", f"must be ASYNC_FLUSH or SYNC_FLUSH, not {self.flushDiskType!r}")
        if not 0 <= self.listenPort < 65536:
            raise ConfigError("listenPort", f"{self.listenPort} is not a port number")
        if self.fastListenPortEnable and 0 < self.listenPort < 3:
            raise ConfigError("listenPort", "must be >= 3 when fastListenPortEnable (VIP port = listenPort - 2)")
        if not 0 <= self.accessMessageInMemoryMaxRatio <= 100:
            raise ConfigError("accessMessageInMemoryMaxRatio", "must be between 0 and 100")
        if not 10 <= self.diskMaxUsedSpaceRatio <= 95:
            raise ConfigError("diskMaxUsedSpaceRatio", "must be between 10 and 95")
        if self.diskMinFreeBytes < 0:
            raise ConfigError("diskMinFreeBytes", "must be >= 0")
        if self.commitLogCachedBytes < -1:
            raise ConfigError("commitLogCachedBytes", "must be -1 (the in-memory boundary), 0 (never evict) or bytes")
        if not 10 <= self.diskCheckInterval <= 60_000:
            raise ConfigError("diskCheckInterval", "must be between 10 and 60000 ms")
        if not 0 <= self.busyPollMaxMicros <= 100_000:
            raise ConfigError("busyPollMaxMicros", "must be between 0 (off) and 100000")
        if self.maxMessageSize <= 0:
            raise ConfigError("maxMessageSize", "must be positive")
        if self.metricsExporterType.upper() not in METRICS_EXPORTER_TYPES:
            raise ConfigError(
                "metricsExporterType",
                f"{self.metricsExporterType!r}: rocketq serves Prometheus (PROM) or nothing (DISABLE); OTLP_GRPC "
                "and LOG are Java 5's OpenTelemetry exporters",
            )
        if not 0 <= self.grpcServerPort <= 65535:
            raise ConfigError("grpcServerPort", f"{self.grpcServerPort} is not a TCP port")
        if not 0 <= self.metricsPromExporterPort <= 65535:
            raise ConfigError("metricsPromExporterPort", f"{self.metricsPromExporterPort} is not a TCP port")
        if not 0 <= self.brokerPermission <= 7:  # PermName's bits: read 4, write 2, inherit 1 (Java 5's isValid)
            raise ConfigError("brokerPermission", f"{self.brokerPermission} is not a permission (0 to 7)")
        for problem, why in self.server_limits().problems(self.maxFrameSize):
            raise ConfigError(LIMIT_KEYS[problem], why)
        if not 10 <= self.aclReloadIntervalMills <= 3_600_000:
            raise ConfigError("aclReloadIntervalMills", "must be between 10 and 3600000 ms")
        if self.traceTopicEnable and (err := topic_name_error(self.msgTraceTopicName)):
            raise ConfigError("msgTraceTopicName", err)
        if not 1 <= self.maxTopicQueueNums <= INT32_MAX:
            raise ConfigError("maxTopicQueueNums", f"must be between 1 and {INT32_MAX}")
        if not 0 < self.defaultTopicQueueNums <= self.maxTopicQueueNums:
            raise ConfigError("defaultTopicQueueNums", "must be positive and at most maxTopicQueueNums")
        for hour in self.deleteWhen.split(";"):
            if not hour.strip().isdigit() or not 0 <= int(hour) <= 23:
                raise ConfigError("deleteWhen", f"{self.deleteWhen!r} is not a ';'-separated list of hours 00-23")
        if bool(self.accessKey) != bool(self.secretKey):
            raise ConfigError("secretKey" if self.accessKey else "accessKey", "accessKey and secretKey go together")
        self.server_tls()  # a TLS mode or client-auth value it does not know (the files are read at start)
        try:
            self.delay_levels_ms()
        except ValueError as exc:
            raise ConfigError("messageDelayLevel", str(exc)) from None


def default_broker_ip(listen_host: str, lookup: Callable[[], str] = local_address) -> str:
    """``brokerIP1`` when none is configured: the address the broker is bound to when it is bound to one, else
    (every interface) Java's default, the first non-loopback address (``RemotingUtil.getLocalAddress``) — so
    that clients on other machines are not handed a loopback route. ``rocketq standalone`` keeps 127.0.0.1."""
    if listen_host and not binds_every_interface(listen_host):
        return listen_host
    return lookup()


def _resolve(name: str) -> str:
    infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    return str(next((i for i in infos if i[0] == socket.AF_INET), infos[0])[4][0])


def store_ip(broker_ip: str, resolve: Callable[[str], str] = _resolve) -> str:
    """The address stamped into stored messages (storeHost: the record's STOREHOST, the offset message id) for
    ``brokerIP1``. Java builds storeHost as an InetSocketAddress, which resolves a host name once at start-up, so
    brokerIP1 may be a name (a compose service, a Kubernetes pod's DNS name); the name itself is still what the
    broker registers, and clients resolve it. IPv4 first, as Java prefers it."""
    try:
        return str(ipaddress.ip_address(broker_ip))
    except ValueError:
        pass
    try:
        return resolve(broker_ip)
    except (OSError, UnicodeError) as exc:  # socket.gaierror is an OSError; an over-long label a UnicodeError
        raise ConfigError("brokerIP1", f"{broker_ip!r} is not an IP address and does not resolve ({exc})") from None


def gives_key(key: str, conf_file: str | os.PathLike[str] | None, overrides: Iterable[str]) -> bool:
    """Whether ``key`` is set by the config file or a ``key=value`` argument (not left to its default)."""
    if any(item.partition("=")[0].strip() == key for item in overrides):
        return True
    return conf_file is not None and key in read_properties(Path(conf_file))


def _refuse_unless_off(key: str, raw: str) -> None:
    """A security setting rocketq cannot honour yet stops start-up instead of serving without it."""
    if convert_value(key, raw, bool):
        raise ConfigError(key, FAIL_CLOSED_KEYS[key])


def convert_value(key: str, raw: str, kind: Any) -> Any:
    """``raw`` as the field type ``kind`` (bool, int or str); ConfigError names ``key`` otherwise."""
    raw = raw.strip()
    if kind in (bool, "bool"):
        low = raw.lower()
        if low in ("true", "false"):
            return low == "true"
        raise ConfigError(key, f"expected true or false, got {raw!r}")
    if kind in (int, "int"):
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(key, f"expected an integer, got {raw[:40]!r}") from None
        if not INT64_MIN <= value <= INT64_MAX:  # every Java setting is an int or a long
            raise ConfigError(key, f"{raw[:40]!r} is out of range for a 64-bit long")
        return value
    return raw


_UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(text: str) -> list[int]:
    """``"1s 5s 1m"`` → ``[1000, 5000, 60000]`` (ms per level, level 1 first)."""
    levels = []
    for item in text.split():
        unit = _UNITS.get(item[-1:])
        if unit is None or not item[:-1].isdigit():
            raise ValueError(f"bad delay level {item!r} (expected a number followed by s, m, h or d)")
        levels.append(int(item[:-1]) * unit)
    if not levels:
        raise ValueError("no delay levels")
    return levels


def read_properties(path: Path) -> dict[str, str]:
    """A Java .properties file: ``key=value`` or ``key: value``, ``#``/``!`` comments, ``\\`` continuations."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read config file: {exc}") from None
    return parse_properties(text)
