"""``rocketq controller`` as a process: it serves, stops on SIGTERM, and refuses bad settings in one line."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from rocketq.codes import ControllerRequestCode as Code
from rocketq.codes import ResponseCode
from rocketq.protocol import RemotingCommand
from rocketq.remoting import RemotingClient
from rocketq.testing.process import finish_process

WAIT = 60.0  # interpreter start-up on a busy 2-core machine; an upper bound, not a threshold


async def spawn(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketq", "controller", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def finish(proc: asyncio.subprocess.Process) -> tuple[int, str, str]:
    return await finish_process(proc, timeout=WAIT)


async def test_serves_and_stops_on_sigterm(tmp_path: Path) -> None:
    proc = await spawn("--port", "0", "--store", str(tmp_path / "store"), "enableElectUncleanMaster=true")
    client = RemotingClient()
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(WAIT):
            line = (await proc.stdout.readline()).decode()
        assert "rocketq controller listening on 127.0.0.1:" in line, line
        addr = line.rsplit(" ", 1)[1].strip()
        meta = await client.invoke(addr, RemotingCommand.request(Code.CONTROLLER_GET_METADATA_INFO), timeout=WAIT)
        assert meta.code == ResponseCode.SUCCESS and meta.ext_fields["controllerLeaderAddress"] == addr
        proc.send_signal(signal.SIGTERM)
        code, _, err = await finish(proc)
        assert code == 0 and "Traceback" not in err
    finally:
        await client.close()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_refusals_are_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "controller-state.json").write_text("{oops")
    cases = {
        "unknown key": (["--port", "0", "--store", str(tmp_path / "a"), "noSuchKey=1"], 2, "noSuchKey"),
        "bad bool": (["--port", "0", "--store", str(tmp_path / "b"), "enableElectUncleanMaster=yes"], 2,
                     "enableElectUncleanMaster"),
        "bad state": (["--port", "0", "--store", str(broken)], 1, "cannot read the controller state"),
        "open bind": (["--host", "0.0.0.0", "--port", "0", "--store", str(tmp_path / "c")], 2, "listenHost"),
    }  # fmt: skip
    procs = {name: await spawn(*args) for name, (args, _, _) in cases.items()}
    for name, proc in procs.items():
        code, _, err = await finish(proc)
        _, want_code, want_text = cases[name]
        assert code == want_code, (name, err)
        assert want_text in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, (name, err)
