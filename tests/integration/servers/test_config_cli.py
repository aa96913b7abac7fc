"""The server commands' configuration as an operator meets it, through the real ``rocketq`` command: ``-p``
prints the effective configuration (as ``mqbroker -p`` / ``mqnamesrv -p``), a typo gets a suggestion, the
shipped ``deploy/broker.conf`` is accepted, and brokerIP1 defaults as Java's does (issue 20, 12, 14, 19).

The ``-p`` runs are only interpreter start-up; they run side by side.
"""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from pathlib import Path

from rocketq.broker.config import BrokerConfig, read_properties
from rocketq.remoting.local_address import local_address
from rocketq.testing.process import run_process

WAIT = 60.0  # interpreter start-up on a busy 2-core machine
REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "deploy" / "broker.conf"


async def rocketq(*args: str) -> tuple[int, str, str]:
    return await run_process([sys.executable, "-m", "rocketq", "--log-level", "WARNING", *args], timeout=WAIT)


def props(out: str) -> dict[str, str]:
    lines = out.splitlines()
    assert lines and all("=" in line for line in lines), out
    return dict(line.split("=", 1) for line in lines)


async def test_print_config_typos_and_the_sample_conf(tmp_path: Path) -> None:
    conf = tmp_path / "typo.conf"
    conf.write_text("brokerName = b1\nflushDiskTyp = SYNC_FLUSH\n")
    ip_conf = tmp_path / "ip.conf"
    ip_conf.write_text("brokerIP1 = 198.51.100.7\n")
    runs = {
        "default": ("broker", "-p"),
        "one interface": ("broker", "-p", "listenHost=127.0.0.2", "listenPort=10999"),
        "given": ("broker", "-p", "brokerIP1=198.51.100.8"),
        "given in file": ("broker", "-p", "-c", str(ip_conf)),
        "standalone": ("standalone", "-p", "--dir", str(tmp_path / "data")),
        "sample": ("broker", "-p", "-c", str(SAMPLE), "-n", "127.0.0.1:9999"),
        "namesrv": ("namesrv", "-p", "--port", "9877", "serverMaxConnections=5"),
        "typo arg": ("broker", "-p", "flushDiskTyp=SYNC_FLUSH"),
        "typo file": ("broker", "-p", "-c", str(conf)),
        "namesrv typo": ("namesrv", "-p", "serverMaxConection=5"),
    }
    results = dict(zip(runs, await asyncio.gather(*(rocketq(*a) for a in runs.values())), strict=True))
    for name in ("default", "one interface", "given", "given in file", "standalone", "sample", "namesrv"):
        rc, _, err = results[name]
        assert rc == 0 and "Traceback" not in err, (name, err)

    default = props(results["default"][1])
    assert default.keys() == BrokerConfig().as_properties().keys()  # every setting, one per line
    assert default["brokerIP1"] == local_address()  # the same lookup, made here: Java's rule (unit-tested)
    assert default["listenHost"] == "0.0.0.0"
    one = props(results["one interface"][1])
    assert (one["brokerIP1"], one["listenPort"], one["haListenPort"]) == ("127.0.0.2", "10999", "11000")
    assert props(results["given"][1])["brokerIP1"] == "198.51.100.8"
    assert props(results["given in file"][1])["brokerIP1"] == "198.51.100.7"
    standalone = props(results["standalone"][1])
    assert standalone["brokerIP1"] == "127.0.0.1"  # standalone keeps loopback
    assert standalone["storePathRootDir"] == str(tmp_path / "data" / "store")

    sample = props(results["sample"][1])
    for key, value in read_properties(SAMPLE).items():  # every key of the sample is in effect as written
        assert sample[key] == (value if key != "namesrvAddr" else "127.0.0.1:9999"), key
    assert "config.ignored" not in results["sample"][2]  # no key of the sample is one rocketq ignores

    namesrv = props(results["namesrv"][1])
    assert namesrv["serverMaxConnections"] == "5" and namesrv["listenPort"] == "9877"

    for name in ("typo arg", "typo file"):
        rc, out, err = results[name]
        assert rc == 2 and out == "", (name, out)
        assert err.strip() == "rocketq broker: config 'flushDiskTyp': unknown broker configuration key — did you "\
                              "mean flushDiskType?", (name, err)  # fmt: skip
    rc, _, err = results["namesrv typo"]
    assert rc == 2 and "did you mean serverMaxConnections?" in err


async def test_broker_advertises_the_default_address(tmp_path: Path) -> None:
    # a real start: the address it prints as advertised (the one it registers, cfg.broker_addr) is the default
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketq", "--log-level", "ERROR", "broker", "-n", "127.0.0.1:1", "listenPort=0",
        "fastListenPortEnable=false",
        f"storePathRootDir={tmp_path / 'store'}", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(WAIT):
            line = (await proc.stdout.readline()).decode()
        m = re.search(r"advertised as (\S+):(\d+)", line)
        assert m, line
        assert m.group(1) == local_address()
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(WAIT):
            await proc.wait()
