"""Which pages of a file are in the page cache (mincore(2)), for tests of page-cache recycling."""

from __future__ import annotations

import ctypes
import mmap
import os

__all__ = ["cached_pages"]


def cached_pages(path: str) -> list[bool]:
    """One flag per 4 KiB page of ``path``: in the page cache or not. The mapping made to ask touches nothing."""
    size = os.path.getsize(path)
    if size == 0:
        return []
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    vec = ctypes.create_string_buffer((size + mmap.PAGESIZE - 1) // mmap.PAGESIZE)
    with open(path, "r+b") as f:
        mm = mmap.mmap(f.fileno(), size)  # writable only because ctypes takes no read-only buffer
        view = (ctypes.c_char * size).from_buffer(mm)
        try:
            if libc.mincore(ctypes.addressof(view), size, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore {path}: {os.strerror(ctypes.get_errno())}")
        finally:
            del view  # the export into the mapping must go before it closes
            mm.close()
    return [bool(b & 1) for b in vec.raw]
