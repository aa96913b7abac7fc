"""Login in a real Chromium, against a standalone whose broker has ACL on: only an ACL admin account gets in,
its session's requests are signed with it, a form posted without a session does nothing, logout ends it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from rocketq.testing.browser import ConsoleCluster, ConsolePage

ADMIN, ADMIN_SECRET = "console-admin", "console-admin-secret"
USER, USER_SECRET = "console-user", "console-user-secret"
ACL_YAML = f"""\
globalWhiteRemoteAddresses: []
accounts:
  - accessKey: {ADMIN}
    secretKey: {ADMIN_SECRET}
    admin: true
  - accessKey: {USER}
    secretKey: {USER_SECRET}
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
"""


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleCluster]:
    cluster = ConsoleCluster(data_dir=tmp_path_factory.mktemp("console-acl"), acl_yaml=ACL_YAML,
                             access_key=ADMIN, secret_key=ADMIN_SECRET)  # fmt: skip
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def page(browser: WebDriver, acl_cluster: ConsoleCluster) -> ConsolePage:
    browser.delete_all_cookies()
    return ConsolePage(browser, acl_cluster.url)


def _log_in(page: ConsolePage, key: str, secret: str, then: str) -> None:
    page.fill({"login-access-key": key, "login-secret-key": secret})
    page.submit("login-submit", then=then)


def test_only_an_acl_admin_account_gets_in(page: ConsolePage, acl_cluster: ConsoleCluster) -> None:
    driver = page.open("/cluster")
    assert "/login" in driver.current_url
    _log_in(page, ADMIN, "wrong-secret", then="login-error")
    assert f"login refused for {ADMIN}" in page.text("login-error")
    _log_in(page, USER, USER_SECRET, then="login-error")  # a valid account, but not an admin
    assert f"login refused for {USER}" in page.text("login-error")
    _log_in(page, "nobody", "x", then="login-error")
    assert "login refused for nobody" in page.text("login-error")
    assert "/login" in driver.current_url

    _log_in(page, ADMIN, ADMIN_SECRET, then="brokers-table")
    assert driver.current_url.endswith("/cluster")  # back where the login started
    assert page.text("user") == ADMIN
    admin = acl_cluster.admin
    assert admin is not None
    assert [r[3] for r in page.rows("brokers-table")] == [b.addr for b in admin.brokers()]
    assert "rocketq" in page.rows("brokers-table")[0][4]  # the runtime info came back: the request was signed
    page.open("/ops")
    assert page.text("signed") == f"yes, as {ADMIN}"

    page.by_id("logout").click()
    page.by_id("login-form")
    page.open("/topics")
    assert "/login" in driver.current_url


def test_without_login_one_configured_account_signs_the_pages(acl_cluster: ConsoleCluster) -> None:
    """``rocketq console --access-key`` (Dashboard's accessKey setting): no login, every request signed as it."""
    env = {**os.environ, "ROCKETQ_SECRET_KEY": ADMIN_SECRET}
    proc = subprocess.Popen([sys.executable, "-m", "rocketq", "--log-level", "WARNING", "console", "-n",
                             acl_cluster.namesrv_addr, "--port", "0", "--access-key", ADMIN],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    try:
        assert proc.stdout is not None
        m = re.match(r"console listening on (\S+)", proc.stdout.readline())
        assert m is not None
        with urllib.request.urlopen(m.group(1) + "/cluster", timeout=30) as resp:
            text = resp.read().decode()
        assert "V4_9_8 protocol" in text and acl_cluster.broker_addr in text  # runtime info: a signed request
        with urllib.request.urlopen(acl_cluster.url + "/login", timeout=30) as resp:
            assert 'id="login-form"' in resp.read().decode()  # the standalone's own console still wants a login
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Traceback" not in err


def test_a_form_posted_without_a_session_does_nothing(acl_cluster: ConsoleCluster) -> None:
    body = urllib.parse.urlencode({"topic": "ConsoleAclSneaky", "writeQueueNums": "1", "readQueueNums": "1"})
    with urllib.request.urlopen(acl_cluster.url + "/topics/create", data=body.encode(), timeout=30) as resp:
        landed = resp.geturl()  # the 303 to the login page, followed
        text = resp.read().decode()
    assert "/login" in landed and 'id="login-form"' in text
    admin = acl_cluster.admin
    assert admin is not None
    assert "ConsoleAclSneaky" not in admin.topic_list()
