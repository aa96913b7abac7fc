#!/usr/bin/env bash
# The web console's browser tests drive Debian's Chromium through chromedriver (tests/console, Selenium).
# Checks both are installed and work; installs them with apt-get when missing and this runs as root; otherwise
# fails saying what to install. Idempotent and quiet on success.
#
#   scripts/browser.sh
#   ROCKETQ_CHROMIUM=/path/chromium ROCKETQ_CHROMEDRIVER=/path/chromedriver scripts/browser.sh
set -euo pipefail

CHROMIUM="${ROCKETQ_CHROMIUM:-/usr/bin/chromium}"
CHROMEDRIVER="${ROCKETQ_CHROMEDRIVER:-/usr/bin/chromedriver}"

die() {
    echo "browser: ERROR: $*" >&2
    exit 1
}

missing() {
    [ -x "$CHROMIUM" ] && [ -x "$CHROMEDRIVER" ] && return 1
    return 0
}

if missing; then
    if [ "$(id -u)" -ne 0 ]; then
        die "$CHROMIUM or $CHROMEDRIVER is missing; install them as root: apt-get install chromium chromium-driver"
    fi
    command -v apt-get >/dev/null 2>&1 || die "$CHROMIUM or $CHROMEDRIVER is missing and apt-get is not available"
    echo "browser: installing chromium and chromium-driver with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || die "apt-get update failed"
    apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null \
        || die "apt-get install chromium chromium-driver failed"
    missing && die "apt-get installed the packages but $CHROMIUM or $CHROMEDRIVER is still missing"
fi

# Both must run (a half-installed package or a missing shared library shows here, not in the middle of a test).
"$CHROMEDRIVER" --version >/dev/null 2>&1 || die "$CHROMEDRIVER does not run: $("$CHROMEDRIVER" --version 2>&1 | tail -n 1)"
"$CHROMIUM" --headless=new --no-sandbox --disable-gpu --version >/dev/null 2>&1 \
    || die "$CHROMIUM does not run: $("$CHROMIUM" --headless=new --no-sandbox --version 2>&1 | tail -n 1)"

# chromedriver only drives the browser of its own major version.
browser_major="$("$CHROMIUM" --headless=new --no-sandbox --version 2>/dev/null | grep -oE '[0-9]+\.' | head -n 1 | tr -d .)"
driver_major="$("$CHROMEDRIVER" --version 2>/dev/null | grep -oE '[0-9]+\.' | head -n 1 | tr -d .)"
if [ -n "$browser_major" ] && [ -n "$driver_major" ] && [ "$browser_major" != "$driver_major" ]; then
    die "chromium $browser_major and chromedriver $driver_major differ: install matching packages (apt-get install chromium chromium-driver)"
fi
