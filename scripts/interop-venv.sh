#!/usr/bin/env bash
# Create (or reuse) the virtualenv that holds the Apache RocketMQ C++ client wheel
# (PyPI `rocketmq==0.4.4`, a ctypes wrapper around a bundled librocketmq.so) used by
# tests/interop/cppdriver.py.  Idempotent; silent on success; exits non-zero with a
# short diagnostic (and the tail of the install log) on failure.
#
#   scripts/interop-venv.sh            # creates <repo>/.venv-interop
#   ROCKETQ_INTEROP_VENV=/x scripts/interop-venv.sh
#
# Prints nothing on success.  Set ROCKETQ_INTEROP_VERBOSE=1 to see what it does.
set -euo pipefail

WHEEL_SPEC="rocketmq==0.4.4"
WHEEL_VERSION="0.4.4"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ROCKETQ_INTEROP_VENV:-$REPO_ROOT/.venv-interop}"
PY="$VENV/bin/python"
LOG="$(mktemp -t interop-venv.XXXXXX.log)"
trap 'rm -f "$LOG"' EXIT

say() { if [ "${ROCKETQ_INTEROP_VERBOSE:-0}" = "1" ]; then echo "interop-venv: $*" >&2; fi; }
die() {
    echo "interop-venv: ERROR: $*" >&2
    if [ -s "$LOG" ]; then
        echo "---- last lines of the install log ----" >&2
        tail -n 40 "$LOG" >&2
    fi
    exit 1
}

# Prints "ok" when the wheel imports (which dlopen()s librocketmq.so) in the venv.
check_import() {
    "$PY" - <<'EOF' 2>>"$LOG"
import importlib.metadata as md
import rocketmq.client  # noqa: F401  (loads librocketmq.so through ctypes)
from rocketmq.ffi import dll
assert hasattr(dll, "SendBatchMessage")
print("ok" if md.version("rocketmq") == "0.4.4" else "wrong-version " + md.version("rocketmq"))
EOF
}

case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *) die "the rocketmq 0.4.4 wheel only ships a manylinux1 x86_64 librocketmq.so (this is $(uname -sm))" ;;
esac

# Fast path: already set up.
if [ -x "$PY" ] && [ "$(check_import 2>/dev/null || true)" = "ok" ]; then
    say "already set up at $VENV"
    exit 0
fi

APT_UPDATED=0
apt_install() {
    command -v apt-get >/dev/null 2>&1 || die "need Debian packages ($*) but apt-get is not available"
    say "apt-get install $*"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -q --no-install-recommends "$@" >>"$LOG" 2>&1; then
        if [ "$APT_UPDATED" = "0" ]; then
            APT_UPDATED=1
            apt-get update -q >>"$LOG" 2>&1 || die "apt-get update failed"
            apt-get install -y -q --no-install-recommends "$@" >>"$LOG" 2>&1 || die "apt-get install $* failed"
        else
            die "apt-get install $* failed"
        fi
    fi
}

command -v python3 >/dev/null 2>&1 || apt_install python3 python3-venv

# (Re)create the venv if it is missing or broken (e.g. the base interpreter moved).
if [ ! -x "$PY" ] || ! "$PY" -c 'import sys' >/dev/null 2>&1; then
    rm -rf "$VENV"
    say "creating $VENV"
    if ! python3 -m venv "$VENV" >>"$LOG" 2>&1; then
        # Debian's system python needs python3-venv for ensurepip.
        rm -rf "$VENV"
        apt_install python3-venv
        python3 -m venv "$VENV" >>"$LOG" 2>&1 || die "python3 -m venv $VENV failed"
    fi
fi

say "installing $WHEEL_SPEC"
"$PY" -m pip install -q --disable-pip-version-check --no-input "$WHEEL_SPEC" >>"$LOG" 2>&1 \
    || die "pip install $WHEEL_SPEC failed"

status="$(check_import || true)"
if [ "$status" != "ok" ]; then
    # librocketmq.so links libstdc++.so.6, libgcc_s.so.1, libpthread/librt/libdl/libm/libc
    # (zlib is bundled in rocketmq/.libs).  On a slim image the C++ runtime may be missing.
    if grep -qE 'libstdc\+\+|libgcc_s|GLIBCXX|CXXABI' "$LOG"; then
        apt_install libstdc++6 libgcc-s1
        status="$(check_import || true)"
    fi
fi
case "$status" in
    ok) say "ready: $PY" ;;
    wrong-version*) die "$VENV has rocketmq ${status#wrong-version }, expected $WHEEL_VERSION" ;;
    *) die "'import rocketmq' fails in $VENV" ;;
esac
