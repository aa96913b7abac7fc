"""``protocol``'s place in the layering (STYLE §2): only codes, errors, common and itself; no I/O modules."""

from __future__ import annotations

import ast
from pathlib import Path

import rocketq.protocol

PROTOCOL_DIR = Path(rocketq.protocol.__file__).parent
ALLOWED_ROCKETQ = ("rocketq.protocol", "rocketq.codes", "rocketq.errors", "rocketq.common")
FORBIDDEN = ("asyncio", "socket", "ssl", "mmap")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_protocol_imports_only_allowed_packages() -> None:
    for path in PROTOCOL_DIR.glob("*.py"):
        for name in _imports(path):
            if name.startswith("rocketq"):
                assert name.startswith(ALLOWED_ROCKETQ), f"{path.name} imports {name}"
            assert name.split(".")[0] not in FORBIDDEN, f"{path.name} imports {name}"
