"""The public surface: every name in ``__all__`` exists, and importing the SDK does not import the servers."""

from __future__ import annotations

import subprocess
import sys

import rocketq.client as client
import rocketq.client.sync as sync


def test_all_names_exist() -> None:
    for mod in (client, sync):
        for name in mod.__all__:
            assert getattr(mod, name) is not None, name
        assert sorted(mod.__all__) == list(mod.__all__) or mod is sync


def test_client_does_not_import_server_packages() -> None:
    code = "import sys, rocketq.client, rocketq.client.sync; print(sorted(m for m in sys.modules " \
           "if m.startswith(('rocketq.broker', 'rocketq.store', 'rocketq.namesrv'))))"  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
