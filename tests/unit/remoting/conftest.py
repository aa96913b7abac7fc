"""Run every async test here on both the default asyncio loop and uvloop (the loop the CLI uses)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any


def pytest_asyncio_loop_factories(config: Any, item: Any) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    factories: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {"asyncio": asyncio.new_event_loop}
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency except on Windows
        return factories
    factories["uvloop"] = uvloop.new_event_loop
    return factories
