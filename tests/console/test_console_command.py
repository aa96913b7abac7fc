"""``rocketq console`` as a process against a running cluster, and the bind rule of it and of standalone's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request

from rocketq.testing.browser import ConsoleCluster


def test_rocketq_console_serves_the_cluster_and_stops_cleanly(console_cluster: ConsoleCluster) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "rocketq", "--log-level", "WARNING", "console", "-n", console_cluster.namesrv_addr,
         "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.match(r"console listening on (http://127\.0\.0\.1:\d+) \(namesrv (\S+)\)", line)
        assert m is not None, line + (proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        assert m.group(2) == console_cluster.namesrv_addr
        with urllib.request.urlopen(m.group(1) + "/cluster", timeout=30) as resp:
            text = resp.read().decode()
        assert resp.status == 200 and console_cluster.broker_addr in text
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_a_console_reachable_from_other_machines_needs_login_or_insecure() -> None:
    ran = subprocess.run([sys.executable, "-m", "rocketq", "console", "-n", "127.0.0.1:1", "--host", "0.0.0.0"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert ran.returncode == 2
    assert "--insecure" in ran.stderr and "ACL login" in ran.stderr and "Traceback" not in ran.stderr
    ran = subprocess.run([sys.executable, "-m", "rocketq", "standalone", "--console-port", "0",
                          "--console-host", "0.0.0.0", "listenPort=0"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert ran.returncode == 2
    assert "--console-host" in ran.stderr and "Traceback" not in ran.stderr


def test_a_missing_name_server_is_a_usage_error() -> None:
    env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    ran = subprocess.run([sys.executable, "-m", "rocketq", "console"], capture_output=True, text=True, timeout=60,
                         env=env)  # fmt: skip
    assert ran.returncode == 2 and "name server" in ran.stderr
