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
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "PostgreSQL server binaries not found: install Debian's 'postgresql' package (apt-get install postgresql)" >&2
    exit 1
fi
echo "installing PostgreSQL (Debian package 'postgresql') for the run-store tests" >&2
(
    flock 9
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
) 9>/tmp/planstack-apt.lock
find_bin
