"""The store's place in the layering (STYLE §2): only protocol, common, errors and the stdlib; a small surface."""

from __future__ import annotations

import ast
from pathlib import Path

import rocketq.store

STORE_DIR = Path(rocketq.store.__file__).parent
ALLOWED_ROCKETQ = ("rocketq.store", "rocketq.protocol", "rocketq.common", "rocketq.errors")
FORBIDDEN = ("asyncio", "socket", "ssl")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_store_imports_only_allowed_packages() -> None:
    for path in STORE_DIR.glob("*.py"):
        for name in _imports(path):
            if name.startswith("rocketq"):
                assert name.startswith(ALLOWED_ROCKETQ), f"{path.name} imports {name}"
            assert name.split(".")[0] not in FORBIDDEN, f"{path.name} imports {name}"


def test_exports() -> None:
    for name in rocketq.store.__all__:
        assert hasattr(rocketq.store, name), name
    assert sorted(rocketq.store.__all__) == sorted(set(rocketq.store.__all__))
