#!/usr/bin/env bash
# Make sure PostgreSQL's server binaries (initdb, postgres) are on this machine: the run-store tests
# start their own throw-away server from them (tests/postgres.py). Debian/Ubuntu: installs the
# `postgresql` package when initdb is missing (as root, e.g. in CI). Prints the bin folder.
set -euo pipefail

find_bin() {
    if command -v initdb >/dev/null 2>&1; then dirname "$(readlink -f "$(command -v initdb)")"; return 0; fi
    local found
    found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [[ -n "$found" && -x "$found/initdb" ]]; then echo "$found"; return 0; fi
    return 1
}

if find_bin; then exit 0; fi
source "$(dirname "$0")/apt_install.sh"
apt_install "PostgreSQL for the run-store tests" postgresql
find_bin
