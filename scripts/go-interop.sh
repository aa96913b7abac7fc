#!/usr/bin/env bash
# Build rocketq's Go interop driver (tests/interop/go: Apache RocketMQ's Go client, pinned in its go.mod)
# into a cache outside the git tree. Idempotent and quiet on success; rebuilds only when a source changed.
#
#   scripts/go-interop.sh                     # cache in ~/.cache/rocketq/go
#   ROCKETQ_GO_CACHE=/x scripts/go-interop.sh
#
# Leaves in the cache:
#   bin/gointerop   the driver
#   mod/, build/    Go's module and build caches (GOMODCACHE, GOCACHE), kept apart from the user's own
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GO_DIR="$REPO_ROOT/tests/interop/go"
CACHE="${ROCKETQ_GO_CACHE:-$HOME/.cache/rocketq/go}"
LOG="$(mktemp -t go-interop.XXXXXX.log)"
trap 'rm -f "$LOG"' EXIT

die() {
    echo "go-interop: ERROR: $*" >&2
    if [ -s "$LOG" ]; then
        echo "---- last lines of the log ----" >&2
        tail -n 40 "$LOG" >&2
    fi
    exit 1
}

# Go from PATH, else the usual tarball location, else Debian's package.
if ! command -v go >/dev/null 2>&1; then
    if [ -x /usr/local/go/bin/go ]; then
        PATH="/usr/local/go/bin:$PATH"
    else
        command -v apt-get >/dev/null 2>&1 || die "need Go but apt-get is not available"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q >>"$LOG" 2>&1 || die "apt-get update failed"
        apt-get install -y -q --no-install-recommends golang-go >>"$LOG" 2>&1 || die "apt-get install golang-go failed"
    fi
fi

export GOMODCACHE="$CACHE/mod" GOCACHE="$CACHE/build"
export GOFLAGS="-modcacherw -buildvcs=false -mod=readonly"  # modcacherw: the cache can be deleted with rm -rf
export GOTOOLCHAIN=local  # never fetch another toolchain
export CGO_ENABLED=0
mkdir -p "$CACHE/bin"

sum="$( (go version; cat "$GO_DIR/go.mod" "$GO_DIR/go.sum" "$GO_DIR"/*.go) | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$CACHE/gointerop.sha256" 2>/dev/null)" = "$sum" ] && [ -x "$CACHE/bin/gointerop" ]; then
    exit 0
fi
(cd "$GO_DIR" && go build -trimpath -o "$CACHE/bin/gointerop.tmp" .) >>"$LOG" 2>&1 \
    || die "go build failed in $GO_DIR"
mv "$CACHE/bin/gointerop.tmp" "$CACHE/bin/gointerop"
echo "$sum" >"$CACHE/gointerop.sha256"
