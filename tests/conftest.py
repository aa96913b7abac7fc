"""Settings for the whole suite."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from rocketq.testing.acl import AclJavaCluster
from rocketq.testing.browser import BrowserUnavailable, start_chromium
from rocketq.testing.java import JavaUnavailable

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

# Hypothesis's default 200 ms deadline per example is a timing threshold: on a loaded 2-core machine a
# correct property failed it. Tests assert behaviour only, so no example has a deadline.
settings.register_profile("rocketq", deadline=None)
settings.load_profile("rocketq")


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """A test that runs the command line in this process (``main([...])``) installs its root handler on the
    stderr pytest captured for that test, which is closed afterwards: every later warning then printed a
    "--- Logging error ---" traceback instead of going to the next test's capture. Each test gets the root
    logger's handlers and level back as they were."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)


@pytest.fixture(scope="session")
def java_acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclJavaCluster]:
    """A Java 4.9.7 name server + broker with aclEnable=true and ``AclAccounts``' plain_acl.yml, started on
    first use and shared by the ACL tests of the rocketq client and of the C++ client."""
    cluster = AclJavaCluster(tmp_path_factory.mktemp("java-acl"))
    try:
        cluster.start(timeout=120)
    except JavaUnavailable as exc:
        pytest.fail(str(exc))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[WebDriver]:
    """The run's one headless Chromium (the web console's tests, docs/console.md), started on first use."""
    try:
        driver = start_chromium()
    except BrowserUnavailable as exc:
        pytest.fail(str(exc))
    try:
        yield driver
    finally:
        driver.quit()
