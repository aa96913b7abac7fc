"""The thread dump a consumer's running info carries when asked (GET_CONSUMER_RUNNING_INFO with
``jstackEnable``; Java fills ``jstack`` from ``Thread.getAllStackTraces``): here every thread's stack and every
asyncio task's, in the same "one header line, indented frames" shape."""

from __future__ import annotations

import asyncio
import io
import sys
import threading
import traceback


def _frames(lines: list[str]) -> str:
    return "".join(f"    {line.strip()}\n" for block in lines for line in block.splitlines() if line.strip())


def dump() -> str:
    out: list[str] = []
    frames = sys._current_frames()
    for t in threading.enumerate():
        frame = frames.get(t.ident or -1)
        out.append(f"Thread: {t.name} (daemon={t.daemon})\n")
        if frame is not None:
            out.append(_frames(traceback.format_stack(frame)))
    try:
        tasks = asyncio.all_tasks()
    except RuntimeError:  # no running loop in this thread
        tasks = set()
    for task in sorted(tasks, key=lambda t: t.get_name()):
        out.append(f"Task: {task.get_name()} (done={task.done()})\n")
        buf = io.StringIO()
        task.print_stack(file=buf)
        out.append(_frames(buf.getvalue().splitlines()[1:]))  # without print_stack's own header line
    return "".join(out)
