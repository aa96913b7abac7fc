"""The console's browser tests: a console cluster per session, on the run's one headless Chromium.

``browser`` (tests/conftest.py, so a test elsewhere — tests/interop/java — shares the same one): Debian's
Chromium driven by Selenium (rocketq.testing.browser). ``console_cluster``: a real
``rocketq standalone`` serving the console on an ephemeral port, with a blocking AdminClient (``.admin``) of the
same cluster to compare pages with. ``console``: the browser on that cluster's console (``open``, ``text``,
``rows``, ``fill``, ``submit``). ``ROCKETQ_CONSOLE_SCREENSHOTS=DIR``: tests that call ``shot(name)`` save the
page there (scripts/console-screenshots.py sets it to docs/console).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rocketq.testing.browser import ConsoleCluster, ConsolePage

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver


@pytest.fixture(scope="session")
def console_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleCluster]:
    cluster = ConsoleCluster(data_dir=tmp_path_factory.mktemp("console-cluster"))
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def console(browser: WebDriver, console_cluster: ConsoleCluster) -> ConsolePage:
    browser.delete_all_cookies()
    return ConsolePage(browser, console_cluster.url)


@pytest.fixture
def shot(console: ConsolePage) -> Callable[[str], None]:
    """``shot("topics")``: save the current page as DIR/topics.png when ROCKETQ_CONSOLE_SCREENSHOTS=DIR."""
    target = os.environ.get("ROCKETQ_CONSOLE_SCREENSHOTS")

    def save(name: str) -> None:
        if target:
            console.screenshot(Path(target) / f"{name}.png")

    return save
