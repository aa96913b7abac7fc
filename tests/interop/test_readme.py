"""The README followed top to bottom, as a new user would: every code block, in order, run or explicitly skipped.

Each fenced block of README.md must match exactly one entry of ``STEPS``, which either runs it against real
``rocketq`` processes or names why a test machine cannot; the one-off entries in README order, while shell
blocks of ``rocketq`` commands that print and exit may appear anywhere. The commands run as written, from
the repository root, with three substitutions only: ports become ephemeral (CI runs other things on 9876 and
10911), ``./data`` becomes a temporary directory, and the name server address (and ``NAMESRV_ADDR``, for
commands without ``-n``) follows. Python snippets run as
files (``python snippet.py``), the C++ wheel's in ``.venv-interop``; a ``print(...)  # value`` comment in a
snippet is the output the README promises, and is checked. Between the C++ snippet and the pieces, the README
points at ``examples/cpp_quickstart.py``: it runs there, on the topic the snippet already wrote to.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import signal
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cppharness import INTEROP_PY, REPO  # type: ignore[import-not-found]

from rocketq.client import AdminClient
from rocketq.testing.process import run_process

README = REPO / "README.md"
TIMEOUT = 120.0  # per command; generous for a contended 2-core machine, never reached when things work


@dataclass
class Block:
    line: int  # 1-based line of the opening fence
    lang: str
    text: str

    def __str__(self) -> str:
        first = self.text.strip().splitlines()[0] if self.text.strip() else ""
        return f"README.md:{self.line} ```{self.lang} {first[:70]!r}"


def readme_blocks() -> list[Block]:
    blocks = []
    lines = README.read_text().splitlines(keepends=True)
    i = 0
    while i < len(lines):
        if m := re.match(r"```(\w*)\s*$", lines[i]):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            blocks.append(Block(i + 1, m.group(1), "".join(lines[i + 1 : end])))
            i = end
        i += 1
    return blocks


# -- processes -------------------------------------------------------------------------------------------


@dataclass
class Server:
    """A long-running ``rocketq`` child; its stdout lines are collected as they arrive."""

    proc: asyncio.subprocess.Process
    log: Path  # its stderr: a file, so that a chatty log never fills a pipe nobody reads
    stdout: list[str] = field(default_factory=list)

    async def wait_for_line(self, pattern: str) -> re.Match[str]:
        assert self.proc.stdout is not None
        async with asyncio.timeout(TIMEOUT):
            while True:
                for line in self.stdout:
                    if m := re.search(pattern, line):
                        return m
                raw = await self.proc.stdout.readline()
                if not raw:
                    rc = await self.proc.wait()
                    err = self.log.read_text()[-2000:]
                    raise AssertionError(f"exited with {rc} before printing {pattern!r}: {err}")
                self.stdout.append(raw.decode())

    async def stop(self) -> tuple[int, str]:
        """SIGTERM; the exit code and stderr (the log)."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(TIMEOUT):
            rc = await self.proc.wait()
        return rc, self.log.read_text()


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    env["PYTHONPATH"] = str(REPO / "src")
    return env


async def run(argv: list[str], env: dict[str, str] | None = None) -> str:
    rc, out, err = await run_process(argv, timeout=TIMEOUT, env=env or _env(), cwd=REPO)
    assert rc == 0, f"{argv[1:]} exited {rc}:\n{out[-3000:]}{err[-3000:]}"
    return out


# -- the user's session ----------------------------------------------------------------------------------


class Session:
    """What a reader has at hand while following the README: the servers started so far and a scratch dir."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.servers: list[Server] = []
        self.namesrv_addr = ""
        self.standalone: Server | None = None

    def argv(self, command: str) -> list[str]:
        """A README command line as this test runs it (see the module docstring for the substitutions)."""
        words = shlex.split(command, comments=True)
        assert words[0] in ("rocketq", ".venv/bin/rocketq"), command
        out = [sys.executable, "-m", "rocketq"]
        for i, word in enumerate(words[1:], 1):
            if words[i - 1] == "--port" or word.startswith("listenPort="):
                word = re.sub(r"\d+$", "0", word)
            word = word.replace("127.0.0.1:9876", self.namesrv_addr or "127.0.0.1:9876")
            out.append(re.sub(r"^(\w+=)?\./data\b", lambda m: (m.group(1) or "") + str(self.tmp / "data"), word))
        return out

    async def start(self, argv: list[str]) -> Server:
        log = self.tmp / f"server{len(self.servers)}.log"
        with log.open("wb") as err:  # the child keeps its own copy
            proc = await asyncio.create_subprocess_exec(
                *argv, cwd=REPO, env=_env(), stdout=asyncio.subprocess.PIPE, stderr=err
            )
        server = Server(proc, log)
        self.servers.append(server)
        return server

    async def close(self) -> None:
        for server in self.servers:
            if server.proc.returncode is None:
                server.proc.kill()
                await server.proc.wait()


def promised_outputs(code: str) -> list[str]:
    """``print(...)  # value`` lines: the value the README says is printed."""
    return [m.group(1).strip() for m in re.finditer(r"^\s*print\(.*\)\s+#\s*(.+)$", code, flags=re.M)]


async def run_snippet(s: Session, block: Block, python: str, env: dict[str, str] | None = None) -> str:
    code = block.text.replace("127.0.0.1:9876", s.namesrv_addr)
    path = s.tmp / f"readme_{block.line}.py"
    path.write_text(code)
    out = await run([python, str(path)], env)
    for value in promised_outputs(block.text):
        assert value in out, f"{block}: the README promises {value!r}; printed:\n{out[-2000:]}"
    return out


# -- the steps, in README order ---------------------------------------------------------------------------


async def standalone(s: Session, block: Block) -> None:
    m = re.search(r"(?:\.venv/bin/)?rocketq standalone[^#\n]*", block.text)
    assert m, block
    argv = s.argv(m.group(0))
    at = argv.index("standalone") + 1  # options before the README's key=value arguments (argparse wants them so)
    argv[at:at] = ["--namesrv-port", "0"]
    argv += [] if any(a.startswith("listenPort=") for a in argv) else ["listenPort=0"]
    argv += [] if any(a.startswith("grpcServerPort=") for a in argv) else ["grpcServerPort=0"]
    s.standalone = await s.start(argv)
    port = (await s.standalone.wait_for_line(r"name server listening on \S*:(\d+)")).group(1)
    await s.standalone.wait_for_line(r"broker \S+ listening on ")
    if "grpcServerEnable=false" not in argv:  # standalone serves the 5.x clients' endpoint too
        await s.standalone.wait_for_line(r"gRPC \(RocketMQ 5.x clients\) listening on ")
    s.namesrv_addr = f"127.0.0.1:{port}"


async def standalone_output(s: Session, block: Block) -> None:
    """The lines the README shows, equal to the standalone's up to ports and the store directory."""
    assert s.standalone is not None

    def shape(line: str) -> str:
        line = line.replace(str(s.tmp) + "/", "")
        return re.sub(r":\d+\b", ":PORT", line.strip())

    printed = [shape(line) for line in s.standalone.stdout]
    for line in block.text.strip().splitlines():
        assert shape(line) in printed, f"{block}: README shows {line!r}; standalone printed {printed}"
    # "... this machine only" (the text before the block): loopback, so no warning about an open port
    log = s.standalone.log.read_text()
    assert "insecure_bind" not in log, log[-2000:]


async def readme_send(s: Session, block: Block) -> None:
    out = await run_snippet(s, block, sys.executable)
    assert "SEND_OK" in out, out


async def readme_consume(s: Session, block: Block) -> None:
    await run_snippet(s, block, sys.executable)


def _interop_env(s: Session) -> dict[str, str]:
    if not INTEROP_PY.exists():
        pytest.fail(f"{INTEROP_PY} is missing: run `make interop-venv` (make test does it)")
    home = s.tmp / "cpp-home"  # the C++ client writes its logs under $HOME
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "PATH": "/usr/bin:/bin"}


async def cpp_snippet(s: Session, block: Block) -> None:
    out = await run_snippet(s, block, str(INTEROP_PY), _interop_env(s))
    # The README's next line: examples/cpp_quickstart.py, on the TopicTest the snippet has just written to.
    out = await run([str(INTEROP_PY), str(REPO / "examples" / "cpp_quickstart.py"), s.namesrv_addr], _interop_env(s))
    assert out.count("SendResult status=OK ") == 100, out[-2000:]
    assert "received 100 of 100" in out, out[-2000:]
    assert "body=Hello RocketMQ 99" in out and "tags=TagA" in out


async def pieces(s: Session, block: Block) -> None:
    """``rocketq namesrv`` then ``rocketq broker``, each as written, the broker registering with that name server."""
    assert s.standalone is not None
    rc, log = await s.standalone.stop()  # the reader stops `make run` first: a clean exit on SIGTERM
    assert rc == 0, log[-2000:]
    assert (s.tmp / "data" / "store" / "commitlog").is_dir()
    lines = [line for line in block.text.splitlines() if line.strip() and not line.startswith("#")]
    commands = [line for line in lines if line.split()[0] in ("rocketq", ".venv/bin/rocketq")]
    # Besides the two commands, only an activation line (this test's interpreter is that venv's already).
    assert all(_activation(line) for line in lines if line not in commands), lines
    assert [shlex.split(c)[1] for c in commands] == ["namesrv", "broker"], commands
    s.namesrv_addr = ""
    namesrv = await s.start(s.argv(commands[0]))
    port = (await namesrv.wait_for_line(r"listening on \S*:(\d+)")).group(1)
    s.namesrv_addr = f"127.0.0.1:{port}"
    words = shlex.split(commands[1], comments=True)
    if "-c" in words:  # a fresh clone must hold the file the README names
        conf = words[words.index("-c") + 1]
        assert (REPO / conf).is_file(), f"{block}: `-c {conf}`: no such file in the repository"
    broker = await s.start(s.argv(commands[1]))
    name = (await broker.wait_for_line(r"broker (\S+) listening on ")).group(1)
    async with AdminClient(namesrv_addr=s.namesrv_addr) as admin:  # registration follows the listening line
        async with asyncio.timeout(TIMEOUT):
            while name not in {b.broker_name for b in await admin.brokers()}:
                await asyncio.sleep(0.1)
    # They keep running for the blocks after this one; the test stops them at its end.


async def replication(s: Session, block: Block) -> None:
    """A name server with the embedded controller and two brokers in controller mode, as written; ``ha status``
    then shows the group with its master and its slave in the in-sync set (the election takes a moment)."""
    lines = [line for line in block.text.splitlines() if line.strip() and not line.startswith("#")]
    words = [shlex.split(line, comments=True) for line in lines]
    assert [w[1] for w in words] == ["namesrv", "broker", "broker", "ha"], lines
    namesrv = await s.start(s.argv(lines[0]))
    port = (await namesrv.wait_for_line(r"listening on \S*:(\d+)")).group(1)
    s.namesrv_addr = f"127.0.0.1:{port}"
    for line in lines[1:3]:
        broker = await s.start(s.argv(line))
        await broker.wait_for_line(r"broker (\S+) listening on ")
    env = _env()
    env["NAMESRV_ADDR"] = s.namesrv_addr
    async with asyncio.timeout(TIMEOUT):
        while True:
            out = await run(s.argv(lines[3]), env)
            rows = [line.split() for line in out.splitlines() if line.startswith("broker-r ")]
            if sorted(row[3] for row in rows) == ["SLAVE", "SYNC_MASTER"] and all(row[-1] == "yes" for row in rows):
                break
            await asyncio.sleep(0.2)


SERVER_COMMANDS = {"namesrv", "broker", "standalone"}
ONE_SHOT_FLAGS = {"-p", "--printConfigItem", "-h", "--help"}  # a server command that prints and exits


def _activation(line: str) -> bool:
    return re.match(r"(source|\.) \S*\.venv/bin/activate\b", line) is not None


def is_cli_block(block: Block) -> bool:
    """A shell block of rocketq commands that each print and exit (no server started)."""
    lines = [line for line in block.text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    commands = [shlex.split(line, comments=True) for line in lines if not _activation(line)]
    return block.lang in ("sh", "bash", "shell", "console") and bool(commands) and all(
        words[0] in ("rocketq", ".venv/bin/rocketq")
        and not (SERVER_COMMANDS & set(words) and not ONE_SHOT_FLAGS & set(words))
        for words in commands
    )


async def cli_commands(s: Session, block: Block) -> None:
    """Each command as written, against the servers the README has started so far; each must exit 0."""
    env = _env()
    if s.namesrv_addr:
        env["NAMESRV_ADDR"] = s.namesrv_addr  # where the README's default 127.0.0.1:9876 is, in this test
    for line in block.text.splitlines():
        if line.strip() and not line.lstrip().startswith("#") and not _activation(line):
            await run(s.argv(line), env)


Step = Callable[[Session, Block], Coroutine[Any, Any, None]]

@dataclass(frozen=True)
class Entry:
    """A kind of README block: how to recognise it, and the step that runs it or why it is not run."""

    name: str
    pattern: str | Callable[[Block], bool]  # a regex searched in the block's text (multi-line), or a predicate
    step: Step | None
    reason: str = ""  # why not run, when step is None
    repeatable: bool = False  # may match any number of blocks, anywhere (else exactly one, in STEPS order)

    def matches(self, block: Block) -> bool:
        if callable(self.pattern):
            return self.pattern(block)
        return re.search(self.pattern, block.text, flags=re.M) is not None


STEPS: list[Entry] = [
    Entry("set-up", r"^make run\b.*\nmake test\b", None,
          "`make run` creates .venv and installs rocketq (this test already runs in it; its `rocketq standalone` is "
          "the next block's alternative, run there); `make test` is the suite this test is part of"),
    Entry("quick start: make run", r"rocketq standalone", standalone),
    Entry("quick start: what it prints", r"^name server listening on", standalone_output),
    Entry("readme-send", r"^# example: readme-send", readme_send),
    Entry("readme-consume", r"^# example: readme-consume", readme_consume),
    Entry("C++ wheel snippet, then examples/cpp_quickstart.py", r"^from rocketmq\.client import", cpp_snippet),
    Entry("run the pieces separately", r"rocketq namesrv\b(?!.*enableController).*\n.*rocketq broker\b", pieces),
    Entry("replication with automatic failover", r"rocketq namesrv\b.*enableControllerInNamesrv=true", replication),
    Entry("Spark", r"spark\.read", None,
          "fragments, not a program: they need a `spark` session and write to /ckpt and read /backups; the same "
          "calls run against a broker in tests/spark (test_batch_read, test_stream, test_sink, test_store_reader)"),
    Entry("rocketq commands that print and exit", is_cli_block, cli_commands, repeatable=True),
]


def classify(blocks: list[Block]) -> list[tuple[Block, Entry]]:
    out = []
    for block in blocks:
        matches = [entry for entry in STEPS if entry.matches(block)]
        assert len(matches) == 1, f"{block} matches {[m.name for m in matches]}: give it one entry in STEPS"
        out.append((block, matches[0]))
    names = [entry.name for _, entry in out if not entry.repeatable]
    expected = [entry.name for entry in STEPS if not entry.repeatable]
    assert names == expected, f"README blocks are, in order, {names}; STEPS expects {expected}"
    return out


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    s = Session(tmp_path)
    try:
        yield s
    finally:
        await s.close()


def test_every_readme_block_is_run_or_skipped_with_a_reason() -> None:
    for block, entry in classify(readme_blocks()):
        assert entry.step is not None or entry.reason, block


async def test_the_readme_in_order(session: Session) -> None:
    for block, entry in classify(readme_blocks()):
        if entry.step is not None:
            await entry.step(session, block)
    for server in reversed(session.servers):  # what the reader leaves running stops cleanly on SIGTERM
        if server.proc.returncode is None:
            rc, log = await server.stop()
            assert rc == 0, log[-2000:]
