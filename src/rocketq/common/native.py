"""Choosing between a compiled twin and its pure-Python twin (STYLE §3.18), in one place.

A compiled module is optional at install time (no compiler → the pure twin does the same work, slower);
``ROCKETQ_NO_EXTENSIONS=1`` forces the pure twins, as aiokafka's ``AIOKAFKA_NO_EXTENSIONS``.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def choose(pure: ModuleType, compiled_name: str) -> tuple[ModuleType, ModuleType | None]:
    """``(the twin to run, the compiled module or None if it was not built)``."""
    compiled = _built(compiled_name)
    return (pure if compiled is None or _switched_off() else compiled), compiled


def compiled_to_run(compiled_name: str) -> ModuleType | None:
    """The compiled module when it is built and not switched off, else None (its pure twin is code, not a module)."""
    compiled = _built(compiled_name)
    return None if _switched_off() else compiled


def _built(compiled_name: str) -> ModuleType | None:
    try:
        return importlib.import_module(compiled_name)
    except ImportError:
        return None


def _switched_off() -> bool:
    return bool(os.environ.get("ROCKETQ_NO_EXTENSIONS"))
