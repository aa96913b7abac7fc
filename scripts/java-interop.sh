#!/usr/bin/env bash
# Fetch Apache RocketMQ's published Java artifacts (pinned in tests/interop/java/rmq*/pom.xml)
# with Maven into a cache outside the git tree, and compile rocketq's Java driver against them.
# Idempotent and quiet on success; the second run only compares checksums.
#
#   scripts/java-interop.sh                      # cache in ~/.cache/rocketq/java
#   ROCKETQ_JAVA_CACHE=/x scripts/java-interop.sh
#
# Leaves in the cache:
#   classpath-49.txt   the 4.9 client, acl, tools (mqadmin), namesrv and broker
#   classpath-5.txt    the 5.x Java client, namesrv, broker and proxy
#   driver/            tests/interop/java/src compiled against classpath-49.txt
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JAVA_DIR="$REPO_ROOT/tests/interop/java"
CACHE="${ROCKETQ_JAVA_CACHE:-$HOME/.cache/rocketq/java}"
LOG="$(mktemp -t java-interop.XXXXXX.log)"
trap 'rm -f "$LOG"' EXIT

die() {
    echo "java-interop: ERROR: $*" >&2
    if [ -s "$LOG" ]; then
        echo "---- last lines of the log ----" >&2
        tail -n 40 "$LOG" >&2
    fi
    exit 1
}

APT_UPDATED=0
apt_install() {
    command -v apt-get >/dev/null 2>&1 || die "need $* but apt-get is not available"
    export DEBIAN_FRONTEND=noninteractive
    if [ "$APT_UPDATED" = "0" ]; then
        APT_UPDATED=1
        apt-get update -q >>"$LOG" 2>&1 || die "apt-get update failed"
    fi
    apt-get install -y -q --no-install-recommends "$@" >>"$LOG" 2>&1 || die "apt-get install $* failed"
}

command -v javac >/dev/null 2>&1 || apt_install openjdk-17-jdk-headless
command -v mvn >/dev/null 2>&1 || apt_install maven
mkdir -p "$CACHE"

# One classpath per pom; re-resolved only when the pom changed.
resolve() {
    local name="$1" pom="$JAVA_DIR/$1/pom.xml" out="$CACHE/classpath-${1#rmq}.txt"
    local sum
    sum="$(sha256sum "$pom" | cut -d' ' -f1)"
    if [ -s "$out" ] && [ "$(cat "$out.sha256" 2>/dev/null)" = "$sum" ]; then
        # The jars may have been pruned from the repository since.
        local missing=0 jar
        IFS=: read -r -a jars <"$out" || true  # no newline at the end: read says EOF
        for jar in "${jars[@]}"; do [ -f "$jar" ] || missing=1; done
        [ "$missing" = "0" ] && return 0
    fi
    (cd "$JAVA_DIR/$name" && mvn -q -B -Dmaven.repo.local="$CACHE/m2" \
        dependency:build-classpath -Dmdep.outputFile="$out") >>"$LOG" 2>&1 \
        || die "mvn could not resolve $pom"
    echo "$sum" >"$out.sha256"
}
resolve rmq49
resolve rmq5

# The driver: recompiled when any source (or the classpath) changed.
sources=()
while IFS= read -r -d '' f; do sources+=("$f"); done < <(find "$JAVA_DIR/src" -name '*.java' -print0 | sort -z)
[ "${#sources[@]}" -gt 0 ] || die "no Java sources under $JAVA_DIR/src"
sum="$(cat "${sources[@]}" "$CACHE/classpath-49.txt" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$CACHE/driver.sha256" 2>/dev/null)" != "$sum" ] || [ ! -d "$CACHE/driver" ]; then
    rm -rf "$CACHE/driver.tmp"
    mkdir -p "$CACHE/driver.tmp"
    javac -nowarn -encoding UTF-8 --release 8 -d "$CACHE/driver.tmp" \
        -cp "$(cat "$CACHE/classpath-49.txt")" "${sources[@]}" >>"$LOG" 2>&1 \
        || die "javac failed on $JAVA_DIR/src"
    rm -rf "$CACHE/driver"
    mv "$CACHE/driver.tmp" "$CACHE/driver"
    echo "$sum" >"$CACHE/driver.sha256"
fi

# The 5.x gRPC client's driver (tests/interop/v5/java), against classpath-5.txt, into driver5/.
V5_SRC="$REPO_ROOT/tests/interop/v5/java/V5Driver.java"
sum="$(cat "$V5_SRC" "$CACHE/classpath-5.txt" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$CACHE/driver5.sha256" 2>/dev/null)" != "$sum" ] || [ ! -f "$CACHE/driver5/V5Driver.class" ]; then
    rm -rf "$CACHE/driver5.tmp" "$CACHE/driver5"
    mkdir -p "$CACHE/driver5.tmp"
    javac -nowarn -encoding UTF-8 -d "$CACHE/driver5.tmp" -cp "$(cat "$CACHE/classpath-5.txt")" "$V5_SRC" >>"$LOG" 2>&1 \
        || die "javac failed on $V5_SRC"
    mv "$CACHE/driver5.tmp" "$CACHE/driver5"
    echo "$sum" >"$CACHE/driver5.sha256"
fi
