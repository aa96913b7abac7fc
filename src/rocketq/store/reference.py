"""Hold/release reference counting for resources that lend out views (RocketMQ's ``ReferenceResource``).

A mapped file lends memoryviews of its mmap to readers. CPython refuses to close an mmap while any view
of it is alive (``BufferError: cannot close exported pointers exist``), so a file that is being deleted
is first made unavailable (no new holds), and its mapping is closed only when the last holder has released
it. If a holder never releases, ``shutdown`` retried after ``interval_forcibly`` drops the count and tries
anyway; the close then still waits for the views themselves to be garbage collected.
"""

from __future__ import annotations

import threading


class ReferenceResource:
    """Counts holders; ``_cleanup()`` runs once the resource is shut down and unheld."""

    __slots__ = ("_available", "_cleanup_over", "_first_shutdown_ms", "_ref_lock", "_refs")

    def __init__(self) -> None:
        self._ref_lock = threading.Lock()
        self._refs = 1  # the owner's reference, dropped by the first shutdown()
        self._available = True
        self._cleanup_over = False
        self._first_shutdown_ms = 0

    @property
    def is_available(self) -> bool:
        return self._available

    @property
    def is_cleanup_over(self) -> bool:
        return self._cleanup_over

    @property
    def ref_count(self) -> int:
        return self._refs

    def hold(self) -> bool:
        with self._ref_lock:
            if self._available and self._refs > 0:
                self._refs += 1
                return True
            return False

    def release(self) -> None:
        with self._ref_lock:
            self._refs -= 1
            if self._refs > 0:
                return
        self._try_cleanup()

    def shutdown(self, interval_forcibly_ms: int, now_ms: int) -> None:
        """Make unavailable (first call) and clean up once unheld; later calls retry, forcibly when overdue."""
        with self._ref_lock:
            first = self._available
            if first:
                self._available = False
                self._first_shutdown_ms = now_ms
            elif self._refs > 0 and now_ms - self._first_shutdown_ms >= interval_forcibly_ms:
                self._refs = 0
        if first:
            self.release()
        else:
            self._try_cleanup()

    def _try_cleanup(self) -> None:
        with self._ref_lock:
            if self._refs > 0 or self._cleanup_over or self._available:
                return
            if self._cleanup():
                self._cleanup_over = True

    def _cleanup(self) -> bool:
        """Free the resource; return False to be retried later (views still exported)."""
        return True
