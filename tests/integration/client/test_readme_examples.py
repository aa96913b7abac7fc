"""The README's Python quick start runs as written (name server address swapped for the test cluster's)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
from pathlib import Path

from rocketq.testing import EmbeddedCluster

README = Path(__file__).resolve().parents[3] / "README.md"


def examples() -> list[tuple[str, str]]:
    return re.findall(r"```python\n# example: ([\w-]+)\n(.*?)```", README.read_text(), flags=re.S)


async def test_readme_quick_start(tmp_path: Path) -> None:
    blocks = dict(examples())
    assert set(blocks) == {"readme-send", "readme-consume"}
    async with EmbeddedCluster(tmp_path) as cluster:
        out = io.StringIO()
        for name in ("readme-send", "readme-consume"):
            code = blocks[name].replace("127.0.0.1:9876", cluster.namesrv_addr)
            with contextlib.redirect_stdout(out):
                await asyncio.wait_for(asyncio.to_thread(exec, compile(code, f"README.md:{name}", "exec"), {}), 90)
    printed = out.getvalue()
    assert "SEND_OK" in printed
    assert "['created', 'paid', 'shipped']" in printed
