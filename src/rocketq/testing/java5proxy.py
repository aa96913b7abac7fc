"""Apache RocketMQ 5.3.3's gRPC proxy in local mode (the proxy and its broker in one JVM, as rocketq serves
gRPC from its broker's process) beside a Java name server: the reference for tests/interop/v5's differential.

``JavaProxyCluster(dir).start()`` gives ``namesrv_addr``, ``broker_addr`` and ``grpc_addr`` on 127.0.0.1;
``stop()`` kills both JVMs. The jars come from the cache scripts/java-interop.sh fills (classpath-5.txt).
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from rocketq.testing.java import (
    NAMESRV_MAIN,
    SERVER_HEAP,
    JavaCluster,
    _wait_for_line,
    _wait_until,
    classpath,
    free_port_block,
    java_env,
    name_server_lists,
    server_jvm_flags,
)

PROXY_MAIN = "org.apache.rocketmq.proxy.ProxyStartup"


@dataclass
class JavaProxyCluster(JavaCluster):
    version: str = "5"
    grpc_port: int = 0

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def start(self, timeout: float = 90.0) -> JavaProxyCluster:
        # without the 5.x gRPC client's jar: it carries its own io.grpc classes, and the proxy's BindableService
        # must be the one its grpc-netty loads (else a ClassCastException at start)
        cp = os.pathsep.join(j for j in classpath("5").split(os.pathsep) if "rocketmq-client-java" not in j)
        self.base_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.namesrv_port = free_port_block((0,))
            ns_conf = self.base_dir / "namesrv.conf"
            ns_conf.write_text(f"listenPort={self.namesrv_port}\n")
            self.namesrv = self._spawn(cp, SERVER_HEAP, NAMESRV_MAIN, ns_conf, "namesrv.log")
            _wait_for_line(self.namesrv, self.base_dir / "namesrv.log", "boot success", timeout)
            self.broker_port = free_port_block((-2, 0, 1))
            self.grpc_port = free_port_block((0, 1))  # the proxy's gRPC port and, next to it, its remoting port
            self.write_broker_conf()
            proxy_conf = self.base_dir / "rmq-proxy.json"
            proxy_conf.write_text(json.dumps({
                "rocketMQClusterName": self.cluster_name, "grpcServerPort": self.grpc_port,
                "remotingListenPort": self.grpc_port + 1, "namesrvAddr": self.namesrv_addr,
            }))  # fmt: skip
            log = open(self.base_dir / "proxy.log", "wb")  # noqa: SIM115 - the child keeps it
            try:
                self.broker = subprocess.Popen(
                    ["java", *self.broker_heap, *server_jvm_flags("5"), f"-Duser.home={self.base_dir}", "-cp", cp,
                     PROXY_MAIN, "-pm", "local", "-bc", str(self.base_dir / "broker.conf"), "-pc", str(proxy_conf),
                     "-n", self.namesrv_addr],
                    stdout=log, stderr=subprocess.STDOUT, env=java_env(self.home), start_new_session=True,
                )  # fmt: skip
            finally:
                log.close()
            _wait_for_line(self.broker, self.base_dir / "proxy.log", "rocketmq-proxy startup successfully", timeout)
            registered = partial(name_server_lists, self.namesrv_addr, self.broker_addr)
            _wait_until(self.broker, registered, f"the proxy's broker {self.broker_addr} never registered", timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def __enter__(self) -> JavaProxyCluster:
        return self.start()


def proxy_log(cluster: JavaProxyCluster) -> Path:
    return cluster.base_dir / "proxy.log"
