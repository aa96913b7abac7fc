"""A server that cannot start says why in one line on stderr and exits 1 — never a traceback (issue 20, item 4).

Every case runs the real ``rocketq`` command; they run side by side (each is only interpreter start-up and a
refusal), so the file costs about one start-up of wall time.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.cli.startup import StartupError, usable_directory
from rocketq.testing.process import run_process

WAIT = 60.0  # interpreter start-up on a busy 2-core machine

async def rocketq(*args: str) -> tuple[int, str, str]:
    return await run_process([sys.executable, "-m", "rocketq", *args], timeout=WAIT)


@pytest.fixture
async def taken_port() -> AsyncIterator[int]:
    blocker = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    try:
        yield blocker.sockets[0].getsockname()[1]
    finally:
        blocker.close()
        await blocker.wait_closed()


async def test_each_server_refuses_in_one_line(tmp_path: Path, taken_port: int) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    port = str(taken_port)
    local = ("listenHost=127.0.0.1", "grpcServerEnable=false")
    cases = {
        # the port already taken
        "broker port": (["broker", "-n", "127.0.0.1:1", *local, f"listenPort={port}",
                         f"storePathRootDir={tmp_path / 's1'}"], "cannot listen on 127.0.0.1:" + port),
        "standalone broker port": (["standalone", "--dir", str(tmp_path / "d1"), "--namesrv-port", "0", *local,
                                    f"listenPort={port}"], "broker: cannot listen on 127.0.0.1:" + port),
        "standalone gRPC port": (["standalone", "--dir", str(tmp_path / "d3"), "--namesrv-port", "0", *local,
                                  "listenPort=0", "grpcServerEnable=true", f"grpcServerPort={port}"],
                                 f"cannot listen on 127.0.0.1:{port}: Address already in use (another process "
                                 "listens there; stop it or choose another port (grpcServerPort))"),
        "standalone namesrv port": (["standalone", "--dir", str(tmp_path / "d2"), "--namesrv-port", port, *local,
                                     "listenPort=0"], "name server: cannot listen on 127.0.0.1:" + port),
        "namesrv port": (["namesrv", "--host", "127.0.0.1", "--port", port, "--home", str(tmp_path / "n1")],
                         "cannot listen on 127.0.0.1:" + port),
        # a store path that is a file, under a file, or under a directory that cannot be created
        "broker store is a file": (["broker", "-n", "127.0.0.1:1", *local, "listenPort=0",
                                    f"storePathRootDir={a_file}"], f"storePathRootDir {a_file} is not a directory"),
        "broker store under a file": (["broker", "-n", "127.0.0.1:1", *local, "listenPort=0",
                                       f"storePathRootDir={a_file / 'sub'}"], "cannot be created: Not a directory"),
        "standalone dir is a file": (["standalone", "--dir", str(a_file), "--namesrv-port", "0", *local,
                                      "listenPort=0"], f"--dir {a_file} is not a directory"),
        "standalone dir missing parent": (["standalone", "--dir", "/proc/no-such-dir/data", "--namesrv-port", "0",
                                           *local, "listenPort=0"], "cannot be created: No such file or directory"),
        "namesrv home under a file": (["namesrv", "--port", "0", "--home", str(a_file / "x")],
                                      "--home " + str(a_file / "x") + " cannot be created: Not a directory"),
    }  # fmt: skip
    results = await asyncio.gather(*(rocketq("--log-level", "WARNING", *args) for args, _ in cases.values()))
    for (name, (args, expected)), (rc, out, err) in zip(cases.items(), results, strict=True):
        command = args[0]
        assert rc == 1, (name, rc, out, err)
        assert "Traceback" not in err, (name, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1, (name, err)
        assert lines[0].startswith(f"rocketq {command}: "), (name, err)
        assert expected in lines[0], (name, err)
        assert "listening on" not in out, (name, out)


def test_a_directory_that_refuses_writes_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # root passes every permission check, so the refusal is simulated where the check writes its probe file
    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("rocketq.cli.startup.tempfile.TemporaryFile", refuse)
    with pytest.raises(StartupError, match=r"^storePathRootDir .* is not writable: Permission denied$"):
        usable_directory("storePathRootDir", tmp_path / "store")
