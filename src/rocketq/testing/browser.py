"""The web console's browser tests: Debian's headless Chromium driven by Selenium, and a real cluster serving
the console (``rocketq standalone --console-port 0`` as a child process).

Selenium is told where the browser and the driver are (/usr/bin/chromium, /usr/bin/chromedriver: the Debian
packages scripts/browser.sh checks), so Selenium Manager never downloads anything. Everything here is blocking
(Selenium is); the child process lives in ``rocketq.client.sync``'s background loop.
"""

from __future__ import annotations

import base64
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocketq.client import sync
from rocketq.testing.process import StandaloneProcess

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

CHROMIUM = os.environ.get("ROCKETQ_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("ROCKETQ_CHROMEDRIVER", "/usr/bin/chromedriver")
#: how long a page (or a form's redirect) may take on a loaded machine: a bound on waiting, not a threshold
PAGE_TIMEOUT = 60.0


class BrowserUnavailable(RuntimeError):
    """Chromium or chromedriver is missing (scripts/browser.sh installs them)."""


def start_chromium(width: int = 1400, height: int = 1000) -> WebDriver:
    """A headless Chromium (one per test session: it costs a second or two and ~150 MB)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise BrowserUnavailable(f"{path} is missing: run scripts/browser.sh (apt-get install chromium "
                                     "chromium-driver)")  # fmt: skip
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--disable-extensions", "--no-first-run", "--disable-background-networking",
                f"--window-size={width},{height}"):  # fmt: skip
        opts.add_argument(arg)
    driver = webdriver.Chrome(options=opts, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(PAGE_TIMEOUT)
    return driver


class ConsoleCluster:
    """A ``rocketq standalone`` serving the console, and a blocking AdminClient of the same cluster to compare
    pages with. ``settings``: broker.conf overrides; ``admin_config``: the admin's extra ClientConfig fields (an
    ACL account)."""

    def __init__(self, *settings: str, data_dir: Path | None = None, acl_yaml: str | None = None,
                 **admin_config: Any) -> None:  # fmt: skip
        self._tmp = None if data_dir is not None else tempfile.mkdtemp(prefix="rocketq-console-")
        self.data_dir = data_dir or Path(self._tmp or ".")
        self.settings: Sequence[str] = settings
        #: with it: aclEnable=true and this account file (storePathRootDir/conf/plain_acl.yml)
        self.acl_yaml = acl_yaml
        self.admin_config = admin_config
        self.process: StandaloneProcess | None = None
        self.admin: sync.AdminClient | None = None

    def start(self, timeout: float = 60.0) -> ConsoleCluster:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        settings = list(self.settings)
        if self.acl_yaml is not None:
            acl_file = self.data_dir / "store" / "conf" / "plain_acl.yml"
            acl_file.parent.mkdir(parents=True, exist_ok=True)
            acl_file.write_text(self.acl_yaml)
            settings.append("aclEnable=true")
        self.process = sync.run(StandaloneProcess.start(
            self.data_dir, "registerNameServerPeriod=1000", "clientScanIntervalMills=1000", "brokerIP1=127.0.0.1",
            *settings, timeout=timeout, console=True, log_path=self.data_dir / "standalone.log",
        ))  # fmt: skip
        from rocketq.client.config import ClientConfig

        self.admin = sync.AdminClient(config=ClientConfig(namesrv_addr=self.namesrv_addr, **self.admin_config))
        self.admin.start()
        return self

    @property
    def url(self) -> str:
        assert self.process is not None, "not started"
        return self.process.console_url

    @property
    def namesrv_addr(self) -> str:
        assert self.process is not None, "not started"
        return self.process.namesrv_addr

    @property
    def broker_addr(self) -> str:
        assert self.process is not None, "not started"
        return self.process.broker_addr

    def log(self) -> str:
        path = self.data_dir / "standalone.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.admin is not None:
            self.admin.shutdown()
            self.admin = None
        if self.process is not None:
            sync.run(self.process.stop(), timeout=60)
            self.process = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)


class ConsolePage:
    """The browser on one console: open a page, read an element by id, fill and submit a form."""

    def __init__(self, driver: WebDriver, base_url: str) -> None:
        self.driver = driver
        self.base_url = base_url

    def open(self, path: str) -> WebDriver:
        self.driver.get(self.base_url + path)
        return self.driver

    def by_id(self, element_id: str) -> WebElement:
        """The element, once it is there (after a form's redirect the next page may still be loading)."""
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        # a lookup mid-navigation may fail with any inspector error: retried until the page is there
        wait = WebDriverWait(self.driver, PAGE_TIMEOUT, ignored_exceptions=(WebDriverException,))
        return wait.until(lambda d: d.find_element(By.ID, element_id))

    def text(self, element_id: str) -> str:
        return str(self.by_id(element_id).text)

    def rows(self, table_id: str) -> list[list[str]]:
        """The body rows of a table, each a list of its cells' texts."""
        from selenium.webdriver.common.by import By

        table = self.by_id(table_id)
        return [[str(td.text) for td in tr.find_elements(By.TAG_NAME, "td")]
                for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr")]  # fmt: skip

    def fill(self, fields: dict[str, str]) -> None:
        """Type into inputs (cleared first) or choose in selects, by element id."""
        from selenium.webdriver.support.ui import Select

        for element_id, value in fields.items():
            el = self.by_id(element_id)
            if el.tag_name == "select":
                Select(el).select_by_value(value)
            else:
                el.clear()
                el.send_keys(value)

    def submit(self, button_id: str, *, then: str) -> WebElement:
        """Click a form's button and wait for the page it leads to (the element ``then`` of the new page:
        the old page's element of that id must go stale first when both pages have it)."""
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.support.ui import WebDriverWait

        marker = self.driver.find_element("tag name", "html")
        self.by_id(button_id).click()

        def gone(_: object) -> bool:
            try:
                marker.is_enabled()
            except WebDriverException:  # stale, or (mid-navigation) "node does not belong to the document"
                return True
            return False

        WebDriverWait(self.driver, PAGE_TIMEOUT).until(gone)
        return self.by_id(then)

    def screenshot(self, path: Path) -> None:
        """The whole page, beyond the window (Chromium's DevTools capture of the full layout), as a PNG."""
        metrics = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 6000), "scale": 1}
        shot = self.driver.execute_cdp_cmd(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
