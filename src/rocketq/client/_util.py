"""Small helpers shared by producers and consumers."""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any


def now_ms() -> int:
    return time.time_ns() // 1_000_000


async def call_user(fn: Callable[..., Any], *args: Any, executor: Executor | None = None) -> Any:
    """Call a user callback: await it if it is a coroutine function, else run it in ``executor`` (a thread)."""
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None)):  # noqa: B004
        return await fn(*args)
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(executor, functools.partial(fn, *args))
    if inspect.isawaitable(result):  # a sync function that returned a coroutine
        return await result
    return result
