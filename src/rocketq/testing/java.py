"""Apache RocketMQ's own Java name server and broker, started from the Maven jars, as the reference.

``scripts/java-interop.sh`` (run by ``make test`` / ``make interop-java``) resolves the pinned jars
into a cache outside the git tree; this module only reads that cache. ``JavaCluster(dir, version="4.9")``
starts 4.9.7, ``version="5"`` starts 5.3.3 (``rocketmq-namesrv``/``rocketmq-broker`` 5.3.3, their main
classes ``NamesrvStartup``/``BrokerStartup`` as in 4.9). Both print ``... boot success ...`` on stdout
when they listen. The Java servers log their warnings to ``<dir>/namesrv.log`` / ``broker.log``:
``ROCKETMQ_HOME`` points at ``tests/interop/java/home``, whose ``conf/logback_*.xml`` the 4.9 servers
insist on reading; 5.x logs through rocketmq-logback-classic instead, which looks for the system
property ``rmq.logback.configurationFile`` and otherwise ``rmq.broker.logback.xml`` /
``rmq.namesrv.logback.xml`` in its jars (INFO into ``~/logs/rocketmqlogs``), so every server here gets
``-Drmq.logback.configurationFile=home/conf/rmq.logback.xml`` (4.9 ignores it).

ACL: ``JavaCluster(..., plain_acl=TEXT)`` starts the broker with ``aclEnable=true``. A 4.9 broker reads
its accounts from ``${ROCKETMQ_HOME}/conf/plain_acl.yml`` (and ``conf/acl/*.yml``) and polls them for
changes, so such a cluster gets a home of its own (``rocketmq_home``: a copy of the shared ``conf/`` plus
the file) instead of the shared one. Stock mqadmin signs with the account in ``${ROCKETMQ_HOME}/conf/tools.yml``
(``accessKey``/``secretKey``): ``rocketmq_home(dir, {"conf/tools.yml": ...})`` makes a home for it too.

JVM flags on this machine's JDK 17 (``server_jvm_flags``), besides a small heap: both versions start
without any. 4.9.7's ``runbroker.sh`` passes CMS and ``-XX:+UseBiasedLocking`` flags that JDK 17
rejects; starting the main classes directly skips them. But 4.9.7 unmaps a store file
(``MappedFile.clean``, when it deletes or shuts down one) by reflection on ``DirectByteBuffer``'s
``attachment``/``cleaner``, which JDK 17 refuses with ``InaccessibleObjectException`` unless
``--add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/jdk.internal.ref=ALL-UNNAMED``
(checked: ``MappedFile.clean(ByteBuffer.allocateDirect(4096))`` fails without, works with), so the 4.9
servers get those two. 5.3.3's ``runbroker.sh`` adds ``--add-exports java.base/jdk.internal.ref=ALL-UNNAMED``
on JDK 11 only; 5.3.3 unmaps through Netty's ``PlatformDependent.freeDirectBuffer``
(``Unsafe.invokeCleaner``), which JDK 17 allows as it is. The servers cannot be told which address to
bind and listen on every interface; the ports are the only thing chosen here.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from rocketq.codes import RequestCode
from rocketq.errors import ProtocolError
from rocketq.protocol.command import RemotingCommand, decode_frame, encode

JAVA_CACHE = Path(os.environ.get("ROCKETQ_JAVA_CACHE", str(Path.home() / ".cache" / "rocketq" / "java")))
REPO_ROOT = Path(__file__).resolve().parents[3]
ROCKETMQ_HOME = REPO_ROOT / "tests" / "interop" / "java" / "home"

NAMESRV_MAIN = "org.apache.rocketmq.namesrv.NamesrvStartup"
BROKER_MAIN = "org.apache.rocketmq.broker.BrokerStartup"
MQADMIN_MAIN = "org.apache.rocketmq.tools.command.MQAdminStartup"
DRIVER_MAIN = "RocketqDriver"

SERVER_HEAP = ("-Xms64m", "-Xmx256m", "-XX:MaxDirectMemorySize=256m")
TOOL_HEAP = ("-Xms32m", "-Xmx192m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


class JavaUnavailable(RuntimeError):
    """The cache scripts/java-interop.sh fills is missing (or java is not installed)."""


def classpath(version: str = "4.9") -> str:
    """The resolved jars for ``4.9`` or ``5`` (the file scripts/java-interop.sh wrote)."""
    path = JAVA_CACHE / f"classpath-{version.replace('.', '')}.txt"
    if not path.is_file() or shutil.which("java") is None:
        raise JavaUnavailable(f"{path} is missing (or no java): run scripts/java-interop.sh (make interop-java)")
    return path.read_text().strip()


def driver_classpath() -> str:
    """The 4.9 jars plus rocketq's compiled driver (tests/interop/java/src)."""
    driver = JAVA_CACHE / "driver"
    if not driver.is_dir():
        raise JavaUnavailable(f"{driver} is missing: run scripts/java-interop.sh (make interop-java)")
    return f"{driver}{os.pathsep}{classpath('4.9')}"


def java_env(home: Path | None = None) -> dict[str, str]:
    return {**os.environ, "ROCKETMQ_HOME": str(home or ROCKETMQ_HOME)}


def rocketmq_home(directory: Path, files: Mapping[str, str]) -> Path:
    """A ROCKETMQ_HOME in ``directory``: the shared ``conf/`` (logback files) plus ``files`` (relative path →
    text), e.g. ``conf/plain_acl.yml`` for a broker, ``conf/tools.yml`` for mqadmin."""
    shutil.copytree(ROCKETMQ_HOME / "conf", directory / "conf", dirs_exist_ok=True)
    for rel, text in files.items():
        target = directory / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return directory


def server_jvm_flags(version: str) -> tuple[str, ...]:
    """What a ``version`` name server or broker needs on JDK 17 beyond its heap (see the module docstring)."""
    logging = f"-Drmq.logback.configurationFile={ROCKETMQ_HOME / 'conf' / 'rmq.logback.xml'}"  # 5.x reads it
    if version.startswith("4"):
        return (logging, "--add-opens", "java.base/java.nio=ALL-UNNAMED",
                "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED")  # fmt: skip
    return (logging,)


def _free_on_all_interfaces(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def free_port_block(offsets: tuple[int, ...]) -> int:
    """A port ``p`` with every ``p + offset`` free; picked below the kernel's ephemeral range."""
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(12000, 30000)
        if all(_free_on_all_interfaces(port + off) for off in offsets):
            return port
    raise RuntimeError("no free port block found")


def _wait_for_line(proc: subprocess.Popen[bytes], log: Path, marker: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and marker in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
    raise RuntimeError(f"{log.name}: no {marker!r} (exit {proc.poll()}):\n{tail}")


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    return bytes(buf)


def _ask(addr: str, code: int) -> RemotingCommand | None:
    """One blocking request without a header to ``addr``; None when the server cannot be reached."""
    host, _, port = addr.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(encode(RemotingCommand.request(code)))
            (length,) = struct.unpack(">I", _recv_exact(sock, 4))
            return decode_frame(_recv_exact(sock, length))
    except (OSError, ProtocolError):
        return None


def name_server_lists(namesrv_addr: str, broker_addr: str) -> bool:
    """Whether the name server's cluster table holds ``broker_addr`` (one blocking GET_BROKER_CLUSTER_INFO)."""
    answer = _ask(namesrv_addr, RequestCode.GET_BROKER_CLUSTER_INFO)
    return answer is not None and answer.code == 0 and broker_addr.encode() in answer.body


def _wait_until(proc: subprocess.Popen[bytes], ready: Callable[[], bool], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if ready():
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} (exit {proc.poll()})")


@dataclass
class JavaCluster:
    """One Java name server and one Java master broker (``version`` ``4.9`` or ``5``) in ``base_dir``."""

    base_dir: Path
    version: str = "4.9"
    cluster_name: str = "JavaCluster"
    broker_name: str = "java-broker-a"
    broker_settings: dict[str, str] = field(default_factory=dict)
    broker_heap: tuple[str, ...] = ("-Xms128m", "-Xmx512m", "-XX:MaxDirectMemorySize=256m")
    plain_acl: str | None = None  # the plain_acl.yml text: the broker starts with aclEnable=true
    namesrv_port: int = 0
    broker_port: int = 0
    namesrv: subprocess.Popen[bytes] | None = None
    broker: subprocess.Popen[bytes] | None = None

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    @property
    def broker_addr(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    @property
    def home(self) -> Path:
        """The servers' ROCKETMQ_HOME: the shared one, or the cluster's own when it has a plain_acl.yml."""
        return ROCKETMQ_HOME if self.plain_acl is None else self.base_dir / "home"

    @property
    def acl_file(self) -> Path:
        """Where the broker reads (and mqadmin's ACL commands write) its accounts."""
        return self.home / "conf" / "plain_acl.yml"

    @property
    def broker_pid(self) -> int:
        assert self.broker is not None
        return self.broker.pid

    def start(self, timeout: float = 60.0) -> JavaCluster:
        cp = classpath(self.version)
        self.base_dir.mkdir(parents=True, exist_ok=True)
        if self.plain_acl is not None:
            rocketmq_home(self.home, {"conf/plain_acl.yml": self.plain_acl})
        try:
            self.namesrv_port = free_port_block((0,))
            ns_conf = self.base_dir / "namesrv.conf"
            ns_conf.write_text(f"listenPort={self.namesrv_port}\n")
            self.namesrv = self._spawn(cp, SERVER_HEAP, NAMESRV_MAIN, ns_conf, "namesrv.log")
            _wait_for_line(self.namesrv, self.base_dir / "namesrv.log", "boot success", timeout)
            # The broker also listens on port-2 (the "VIP" channel) and port+1 (HA).
            self.broker_port = free_port_block((-2, 0, 1))
            self.write_broker_conf()
            conf = self.base_dir / "broker.conf"
            self.broker = self._spawn(cp, self.broker_heap, BROKER_MAIN, conf, "broker.log")
            _wait_for_line(self.broker, self.base_dir / "broker.log", "boot success", timeout)
            # 5.x says "boot success" before its first registration reaches the name server.
            registered = partial(name_server_lists, self.namesrv_addr, self.broker_addr)
            _wait_until(self.broker, registered, f"the broker {self.broker_addr} never registered", timeout)
            # A Java broker answers GET_BROKER_RUNTIME_INFO with SYSTEM_ERROR (NoSuchElementException from
            # StoreStatsService's empty sample lists) until its first stats sample, about a second after start:
            # mqadmin's clusterList prints an empty version column and the console a refusal until then.
            _wait_until(self.broker, self._answers_runtime_info, f"the broker {self.broker_addr} never answered "
                        "GET_BROKER_RUNTIME_INFO", timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _answers_runtime_info(self) -> bool:
        answer = _ask(self.broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        # an ACL broker refuses the unsigned request (AclException) whether or not its stats have a sample: only
        # the empty-sample refusal says "not yet"
        return answer is not None and "java.util.NoSuchElementException" not in (answer.remark or "")

    def write_broker_conf(self) -> None:
        store = self.base_dir / "store"
        settings = {
            "brokerClusterName": self.cluster_name,
            "brokerName": self.broker_name,
            "brokerId": "0",
            "brokerIP1": "127.0.0.1",
            "listenPort": str(self.broker_port),
            "namesrvAddr": self.namesrv_addr,
            "storePathRootDir": str(store),
            "storePathCommitLog": str(store / "commitlog"),
            "mappedFileSizeCommitLog": str(64 * 1024 * 1024),
            "autoCreateTopicEnable": "true",
            "autoCreateSubscriptionGroup": "true",
            **({"aclEnable": "true"} if self.plain_acl is not None else {}),
            **self.broker_settings,
        }
        lines = "".join(f"{k}={v}\n" for k, v in settings.items())
        (self.base_dir / "broker.conf").write_text(lines)

    def _spawn(
        self, cp: str, heap: tuple[str, ...], main: str, conf: Path, log_name: str
    ) -> subprocess.Popen[bytes]:
        log = open(self.base_dir / log_name, "wb")  # noqa: SIM115 - the child keeps it
        try:
            return subprocess.Popen(
                ["java", *heap, *server_jvm_flags(self.version), f"-Duser.home={self.base_dir}", "-cp", cp, main,
                 "-c", str(conf)],
                stdout=log, stderr=subprocess.STDOUT, env=java_env(self.home), start_new_session=True,
            )  # fmt: skip
        finally:
            log.close()

    def stop(self) -> None:
        for proc in (self.broker, self.namesrv):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def __enter__(self) -> JavaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
