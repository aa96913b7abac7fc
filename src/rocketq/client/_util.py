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


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """True for a coroutine function, or an object whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


async def call_user(
    fn: Callable[..., Any], *args: Any, executor: Executor | None = None, is_async: bool | None = None
) -> Any:
    """Call a user callback: await it if it is a coroutine function, else run it in ``executor`` (a thread).

    ``is_async``: ``is_async_callable(fn)`` worked out once by a caller that calls ``fn`` per message.
    """
    if is_async if is_async is not None else is_async_callable(fn):
        return await fn(*args)
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(executor, functools.partial(fn, *args))
    if inspect.isawaitable(result):  # a sync function that returned a coroutine
        return await result
    return result
