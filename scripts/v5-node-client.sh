#!/usr/bin/env bash
# Install Apache RocketMQ's official 5.x Node.js client (npm `rocketmq-client-nodejs@1.0.8`) into its own
# directory outside the git tree, for tests/interop/v5/nodeclient.js (run with node, one process per
# scenario). Idempotent; silent on success; installs Node.js with apt-get when it is missing and we are root.
#
#   scripts/v5-node-client.sh                 # into ~/.cache/rocketq/node5
#   ROCKETQ_NODE5_DIR=/x scripts/v5-node-client.sh
set -euo pipefail

SPEC="rocketmq-client-nodejs@1.0.8"
DIR="${ROCKETQ_NODE5_DIR:-$HOME/.cache/rocketq/node5}"
LOG="$(mktemp -t node5.XXXXXX.log)"
trap 'rm -f "$LOG"' EXIT

die() {
    echo "v5-node-client: ERROR: $*" >&2
    [ -s "$LOG" ] && { echo "---- last lines of the log ----" >&2; tail -n 40 "$LOG" >&2; }
    exit 1
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || die "node and npm are needed (apt-get install nodejs npm)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >>"$LOG" 2>&1 || die "apt-get update failed"
    apt-get install -y -q --no-install-recommends nodejs npm >>"$LOG" 2>&1 || die "apt-get install nodejs npm failed"
fi
installed="$DIR/node_modules/rocketmq-client-nodejs/package.json"
if [ -f "$installed" ] && grep -q '"version": "1.0.8"' "$installed"; then
    exit 0
fi
mkdir -p "$DIR"
cd "$DIR"
[ -f package.json ] || echo '{"name": "rocketq-node5-driver", "private": true}' >package.json
npm install --no-audit --no-fund --silent "$SPEC" >>"$LOG" 2>&1 || die "npm install $SPEC failed"
grep -q '"version": "1.0.8"' "$installed" || die "$SPEC did not install"
