"""rocketq.testing's promises: the package docstring's example runs, and the pytest plugin works as shipped.

The plugin is checked the way a user meets it: a pytest run in a separate directory that finds it through a
``pytest11`` entry point built from pyproject.toml's own table (the suite's interpreter may have been installed
before the entry point existed), then with autoloading off and ``-p``, then with both.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import rocketq.testing
from rocketq.testing import pytest_plugin

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = "rocketq.testing.pytest_plugin"


def literal_blocks(doc: str) -> list[str]:
    """The reStructuredText literal blocks (after a line ending in ``::``) of a docstring, dedented."""
    blocks = re.findall(r"::\n\n((?:(?: {4}.*)?\n)+)", doc + "\n")
    return [textwrap.dedent(b).strip() + "\n" for b in blocks]


async def test_the_package_docstring_example_runs(tmp_path: Path) -> None:
    doc = rocketq.testing.__doc__
    assert doc is not None
    example = literal_blocks(doc)[0]
    assert "namesrv_addr=cluster.namesrv_addr" in example
    # The example is a coroutine body: run it as one, with the names it expects from a test.
    body = textwrap.indent(example, "    ")
    scope: dict[str, Any] = {}
    exec(compile(f"async def example(tmp_path):\n{body}\n    return result\n", "rocketq.testing", "exec"), scope)
    result = await asyncio.wait_for(scope["example"](tmp_path), 60)
    assert result.status.name == "SEND_OK"


def _entry_points() -> dict[str, str]:
    table: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    return table


def test_pyproject_registers_the_plugin_under_its_module_name() -> None:
    assert _entry_points() == {PLUGIN: PLUGIN}


USER_TESTS = '''
import asyncio

import pytest

from rocketq.client import Message
from rocketq.client import Producer as AsyncProducer
from rocketq.client.sync import AdminClient

{doc_example}


@pytest.mark.asyncio
async def test_async_client(rocketq_cluster):
    async with AsyncProducer("pg-async", namesrv_addr=rocketq_cluster.namesrv_addr) as producer:
        assert (await producer.send(Message("Orders", b"hello"))).status.name == "SEND_OK"


@pytest.mark.rocketq_cluster(brokers=2, autoCreateTopicEnable=False)
def test_marker_settings(rocketq_cluster):
    assert len(rocketq_cluster.cluster.brokers) == 2
    assert rocketq_cluster.cluster.broker.config.autoCreateTopicEnable is False
    with AdminClient(namesrv_addr=rocketq_cluster.namesrv_addr) as admin:
        assert len(admin.brokers()) == 2


def test_each_test_gets_its_own_cluster(rocketq_cluster, tmp_path):
    assert str(rocketq_cluster.cluster.base_dir).startswith(str(tmp_path))


@pytest.mark.rocketq_cluster("positional")
def test_positional_marker_arguments_are_refused(rocketq_cluster):
    pass
'''


def _run_pytest(tmp_path: Path, *args: str, autoload: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "site"), str(ROOT / "src")])
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "asyncio_mode=strict",
         "-o", "asyncio_default_fixture_loop_scope=function",
         "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_user.py"), *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip


def test_a_user_suite_gets_the_fixture(tmp_path: Path) -> None:
    # A distribution whose only content is pyproject's pytest11 entry point, as pip would install it.
    dist = tmp_path / "site" / "rocketq_plugin_probe-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rocketq-plugin-probe\nVersion: 0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in _entry_points().items())
    (dist / "entry_points.txt").write_text(f"[pytest11]\n{lines}")
    assert pytest_plugin.__doc__ is not None
    doc_example = literal_blocks(pytest_plugin.__doc__)[0]
    (tmp_path / "test_user.py").write_text(USER_TESTS.format(doc_example=doc_example))

    auto = _run_pytest(tmp_path, "-rA", autoload=True)
    summary = auto.stdout.strip().splitlines()[-1] if auto.stdout.strip() else auto.stderr
    assert re.search(r"\b4 passed\b", summary) and re.search(r"\b1 error\b", summary), auto.stdout + auto.stderr
    assert "takes keyword arguments only" in auto.stdout
    assert "PASSED test_user.py::test_send" in auto.stdout  # the plugin docstring's own example

    # Autoload off: -p names it; autoload on plus -p: loaded once, no "already registered" error.
    explicit = _run_pytest(tmp_path, "-p", PLUGIN, "-k", "test_send or test_marker_settings", autoload=False)
    assert explicit.returncode == 0 and "2 passed" in explicit.stdout, explicit.stdout + explicit.stderr
    both = _run_pytest(tmp_path, "-p", PLUGIN, "-k", "test_send", autoload=True)
    assert both.returncode == 0 and "1 passed" in both.stdout, both.stdout + both.stderr
    # And it can be turned off.
    off = _run_pytest(tmp_path, "-p", f"no:{PLUGIN}", "-k", "test_send", autoload=True)
    assert off.returncode != 0 and "fixture 'rocketq_cluster' not found" in off.stdout, off.stdout + off.stderr
