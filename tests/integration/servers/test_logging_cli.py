"""Logging options: accepted after the subcommand too, a log file with rotation, JSON lines (issue 20, item 21)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.cli.logsetup import _MARK, configure_logging
from rocketq.cli.main import build_parser

WAIT = 60.0  # interpreter start-up on a busy 2-core machine


def test_the_options_go_before_or_after_the_subcommand() -> None:
    parser = build_parser()
    assert parser.parse_args(["namesrv"]).log_level == "INFO"
    assert parser.parse_args(["--log-level", "ERROR", "namesrv"]).log_level == "ERROR"  # not reset by the sub
    assert parser.parse_args(["namesrv", "--log-level", "DEBUG"]).log_level == "DEBUG"
    assert parser.parse_args(["--log-level", "ERROR", "standalone", "--log-level", "DEBUG"]).log_level == "DEBUG"
    nested = parser.parse_args(["topic", "list", "--log-format", "json", "--log-file", "x.log"])  # a sub-sub
    assert (nested.log_format, nested.log_file, nested.log_backups) == ("json", "x.log", 10)


@pytest.fixture
def restore_root_logging() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    yield
    for handler in list(root.handlers):
        if getattr(handler, _MARK, False):
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)


def test_the_log_file_rotates(tmp_path: Path, restore_root_logging: None) -> None:
    path = tmp_path / "logs" / "broker.log"  # the directory is created
    configure_logging(argparse.Namespace(log_file=str(path), log_max_bytes=600, log_backups=2,
                                         log_format="json", log_level="INFO"))  # fmt: skip
    # a logger of its own: other tests in the process may have set levels on the "rocketq" loggers
    log = logging.getLogger("test_logging_cli.rotation")
    log.setLevel(logging.NOTSET)
    for i in range(60):
        log.info("line %d %s", i, "x" * 40)
    log.debug("not at INFO")
    files = sorted(p.name for p in path.parent.iterdir())
    assert files == ["broker.log", "broker.log.1", "broker.log.2"]  # two backups kept, the oldest dropped
    for p in path.parent.iterdir():
        assert p.stat().st_size <= 600
    last = [json.loads(line) for line in path.read_text().splitlines()]
    assert last[-1]["message"] == f"line 59 {'x' * 40}" and last[-1]["level"] == "INFO"
    assert not any(doc["message"] == "not at INFO" for doc in last)


async def test_a_server_logs_json_lines_to_its_file(tmp_path: Path) -> None:
    log_file = tmp_path / "namesrv.log"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketq", "namesrv", "--host", "127.0.0.1", "--port", "0", "--home",
        str(tmp_path / "home"), "--log-level", "DEBUG", "--log-file", str(log_file), "--log-format", "json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(WAIT):
            line = (await proc.stdout.readline()).decode()
        assert line.startswith("rocketq namesrv listening on 127.0.0.1:"), line
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(WAIT):
            _, err = await proc.communicate()
    assert proc.returncode == 0
    assert err == b""  # the log went to the file, not to stderr
    docs = [json.loads(text) for text in log_file.read_text().splitlines()]
    assert {"time", "level", "logger", "message"} <= docs[0].keys()
    messages = [(d["level"], d["logger"], d["message"].split(" ")[0]) for d in docs]
    assert ("INFO", "rocketq.namesrv.server", "namesrv.started") in messages
    assert ("INFO", "rocketq.namesrv.server", "namesrv.stopped") in messages


async def test_an_unusable_log_file_is_one_line(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketq", "namesrv", "--port", "0", "--log-file", str(a_file / "x.log"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(WAIT):
        out, err = await proc.communicate()
    assert proc.returncode == 1 and out == b""
    assert err.decode().strip() == f"rocketq: cannot write the log file {a_file / 'x.log'}: Not a directory", err
