"""Read a server's log as it grows: count ERROR lines and tracebacks, and group tracebacks by code site.

A traceback's *site* is its exception type and innermost frame; the ERROR line before it names the request
code and opaque when the remoting gate logged it (``request.failed code=.. opaque=..``), which lets the runner
find the frame that caused it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_ERROR = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ (ERROR|CRITICAL) (\S+) (.*)$")
_CODE_OPAQUE = re.compile(r"code=(-?\d+) opaque=(-?\d+)")
#: ERROR events that follow from an administrative request the fuzzer may legitimately send, not from a client
#: mistake: lowering maxMessageSize (UPDATE_BROKER_CONFIG) below a delayed message's size makes its re-put fail
#: when it falls due, which Java logs as an error too; raising diskMinFreeBytes above the free space makes the
#: store refuse writes (an operator's way to make a broker read-only), logged once as an error. Counted apart
#: from the other ERROR lines.
OPERATIONAL_ERRORS = ("schedule.reput_failed", "store.disk_full")
_FILE = re.compile(r'^\s+File "([^"]+)", line (\d+), in (\S+)')


@dataclass(slots=True)
class Site:
    """One traceback site: how often it was seen, its innermost frames and the first request that hit it."""

    key: str
    exception: str
    frames: list[str]
    count: int = 0
    code: int | None = None
    opaque: int | None = None
    error_line: str = ""


@dataclass(slots=True)
class LogScanner:
    path: Path
    offset: int = 0
    error_lines: int = 0
    operational_errors: int = 0
    tracebacks: int = 0
    sites: dict[str, Site] = field(default_factory=dict)
    _pending: str = ""
    _last_error: str = ""
    _frames: list[str] = field(default_factory=list)
    _in_traceback: bool = False

    def scan(self) -> list[Site]:
        """Read what was appended since the last call; returns the sites seen for the first time."""
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return []
        self.offset += len(chunk)
        text = self._pending + chunk.decode("utf-8", "replace")
        lines = text.split("\n")
        self._pending = lines.pop()  # an unfinished last line waits for the next scan
        new: list[Site] = []
        for line in lines:
            site = self._line(line)
            if site is not None:
                new.append(site)
        return new

    def _line(self, line: str) -> Site | None:
        if m := _ERROR.match(line):
            if m.group(3).startswith(OPERATIONAL_ERRORS):
                self.operational_errors += 1
                return None
            self.error_lines += 1
            self._last_error = line
            return None
        if line.startswith("Traceback (most recent call last)"):
            self.tracebacks += 1
            self._in_traceback = True
            self._frames = []
            return None
        if not self._in_traceback:
            return None
        if m := _FILE.match(line):
            self._frames.append(f"{_short(m.group(1))}:{m.group(2)} in {m.group(3)}")
            return None
        if not line or line[0].isspace() or line.startswith(("During handling", "The above exception")):
            return None
        # the exception line ends this traceback (a chained one starts again with "Traceback")
        self._in_traceback = False
        exception = line.split(":", 1)[0]
        top = self._frames[-1] if self._frames else "?"
        # the same innermost frame reached from different requests are different defects: name the entry too
        entry = next((f for f in self._frames if "rocketq/remoting/" not in f), top)
        key = f"{exception} at {top}" + (f" via {entry}" if entry != top else "")
        site = self.sites.get(key)
        first = site is None
        if site is None:
            site = self.sites[key] = Site(key, exception, self._frames[::-1][:6], error_line=self._last_error[:300])
            if m := _CODE_OPAQUE.search(self._last_error):
                site.code, site.opaque = int(m.group(1)), int(m.group(2))
            site.exception = line[:300]
        site.count += 1
        return site if first else None


def _short(path: str) -> str:
    marker = "/rocketq/"
    i = path.rfind(marker)
    return "rocketq/" + path[i + len(marker) :] if i >= 0 else path
