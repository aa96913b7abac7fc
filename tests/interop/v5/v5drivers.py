"""Run one 5.x client scenario in its own process — the Python client's pyclient.py in .venv-v5py, the Java
client's V5Driver in a small JVM — against a gRPC address; its JSON lines. Shared by tests/interop/v5."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from rocketq.testing.java import JAVA_CACHE, classpath

REPO = Path(__file__).resolve().parents[3]
VENV_PY = Path(os.environ.get("ROCKETQ_V5PY_VENV", REPO / ".venv-v5py")) / "bin" / "python"
PY_DRIVER = Path(__file__).with_name("pyclient.py")
DRIVER5 = JAVA_CACHE / "driver5"
WAIT = 120.0  # a bound on one driver's run, not a threshold


async def _run(argv: list[str], env: dict[str, str], what: str) -> list[dict[str, Any]]:
    proc = await asyncio.create_subprocess_exec(*argv, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)  # fmt: skip
    try:
        out, err = await asyncio.wait_for(proc.communicate(), WAIT)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, f"{what} exited {proc.returncode}:\n{err.decode()[-3000:]}"
    return [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]


async def python_client(home: Path, grpc_addr: str, *args: str) -> list[dict[str, Any]]:
    if not VENV_PY.exists():
        pytest.fail(f"{VENV_PY} is missing: run `make interop-v5` (scripts/v5-python-venv.sh)")
    env = {**os.environ, "HOME": str(home), "ROCKETQ_V5_WAIT": "60"}  # the client logs under ~/logs
    return await _run([str(VENV_PY), str(PY_DRIVER), grpc_addr, *args], env, f"pyclient {' '.join(args)}")


async def java_client(home: Path, grpc_addr: str, *args: str) -> list[dict[str, Any]]:
    if not (DRIVER5 / "V5Driver.class").exists():
        pytest.fail(f"{DRIVER5} has no V5Driver.class: run `make interop-java` (scripts/java-interop.sh)")
    cp = f"{DRIVER5}{os.pathsep}{classpath('5')}"
    argv = ["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", f"-Duser.home={home}", "-cp", cp,
            "V5Driver", grpc_addr, *args]  # fmt: skip
    return await _run(argv, dict(os.environ), f"V5Driver {' '.join(args)}")
