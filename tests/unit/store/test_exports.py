"""The store's public surface (its imports are checked with every package's in ``tests/unit/test_layering.py``)."""

from __future__ import annotations

import rocketq.store


def test_exports() -> None:
    for name in rocketq.store.__all__:
        assert hasattr(rocketq.store, name), name
    assert sorted(rocketq.store.__all__) == sorted(set(rocketq.store.__all__))
