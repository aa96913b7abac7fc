"""What the CLI tests share: running ``rocketq`` as a child process and reading what it prints (docs/cli.md's
convention)."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from typing import Any

from rocketq.testing.process import run_process

WAIT = 60.0  # one command: interpreter start-up on a loaded machine plus its requests
CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")
#: JSON members whose keys are data (property names, runtime keys, topics, broker ids), not field names
DATA_MAPS = {"properties", "runtime", "table", "subscriptions", "brokerAddrs", "filterServerTable", "config", "result"}


@dataclass
class Run:
    rc: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.rc == 0, self.err
        return json.loads(self.out)  # the whole of stdout is ONE document

    def failed(self, rc: int, *words: str) -> None:
        """Exit code ``rc``, nothing on stdout, one line on stderr naming ``words``, no traceback."""
        assert self.rc == rc, (self.rc, self.out, self.err)
        assert "Traceback" not in self.err, self.err
        assert self.out == "", self.out
        last = self.err.strip().splitlines()[-1]
        assert last.startswith(("error:", "rocketq ")), self.err
        for w in words:
            assert w in last, (w, last)


async def rocketq(env: dict[str, str], *argv: str, namesrv: str | None = None) -> Run:
    """``rocketq ARGV -n NAMESRV`` as a child process."""
    full = [*argv, "-n", namesrv] if namesrv else list(argv)
    return Run(*await run_process([sys.executable, "-m", "rocketq", *full], timeout=WAIT, env=env))


def camel_keys(doc: Any, path: str = "") -> list[str]:
    """Every field name in ``doc`` that is not camelCase (with its path)."""
    bad: list[str] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if not CAMEL.match(k):
                bad.append(f"{path}.{k}")
            if k not in DATA_MAPS:
                bad += camel_keys(v, f"{path}.{k}")
    elif isinstance(doc, list):
        for v in doc:
            bad += camel_keys(v, f"{path}[]")
    return bad


def table(text: str, *headers: str) -> list[list[str]]:
    """A text table's rows (split on 2+ spaces) after checking its header and rule."""
    lines = text.splitlines()
    assert len(lines) >= 2, text
    assert lines[0].split() == " ".join(headers).split(), lines[0]
    assert set(lines[1].replace(" ", "")) == {"-"}, lines[1]
    return [re.split(r"\s{2,}", ln.strip()) for ln in lines[2:] if ln.strip()]
