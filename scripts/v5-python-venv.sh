#!/usr/bin/env bash
# Create (or reuse) the virtualenv holding Apache RocketMQ's official 5.x Python gRPC client
# (PyPI `rocketmq-python-client==5.1.2`), used by tests/interop/v5/pyclient.py in its own processes
# (its protos and rocketq's cannot share one interpreter). Idempotent; silent on success; on failure a
# short diagnostic and the tail of the install log.
#
#   scripts/v5-python-venv.sh            # creates <repo>/.venv-v5py
#   ROCKETQ_V5PY_VENV=/x scripts/v5-python-venv.sh
set -euo pipefail

SPEC="rocketmq-python-client==5.1.2"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ROCKETQ_V5PY_VENV:-$REPO_ROOT/.venv-v5py}"
PY="$VENV/bin/python"
LOG="$(mktemp -t v5py-venv.XXXXXX.log)"
trap 'rm -f "$LOG"' EXIT

die() {
    echo "v5-python-venv: ERROR: $*" >&2
    [ -s "$LOG" ] && { echo "---- last lines of the install log ----" >&2; tail -n 40 "$LOG" >&2; }
    exit 1
}

check() {
    "$PY" - <<'PYEOF' 2>>"$LOG"
import importlib.metadata as md
from rocketmq import ClientConfiguration, Credentials, Producer, SimpleConsumer  # noqa: F401
print("ok" if md.version("rocketmq-python-client") == "5.1.2" else "wrong-version")
PYEOF
}

if [ -x "$PY" ] && [ "$(check || true)" = "ok" ]; then
    exit 0
fi
rm -rf "$VENV"
python3 -m venv "$VENV" >>"$LOG" 2>&1 || die "python3 -m venv failed"
"$PY" -m pip install --quiet --upgrade pip >>"$LOG" 2>&1 || die "pip upgrade failed"
"$PY" -m pip install --quiet "$SPEC" >>"$LOG" 2>&1 || die "pip install $SPEC failed"
[ "$(check || true)" = "ok" ] || die "$SPEC installed but does not import"
