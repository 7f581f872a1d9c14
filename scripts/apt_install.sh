#!/usr/bin/env bash
# `apt_install WHY PACKAGE...`: install Debian packages for a test prerequisite, once at a time on this
# machine (flock on /tmp/planstack-apt.lock), as root only; sourced by scripts/ensure_*.sh.

apt_install() {
    local why=$1
    shift
    if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
        echo "$why not found: install Debian's package(s) $* (apt-get install $*)" >&2
        return 1
    fi
    echo "installing $why (Debian package(s) $*)" >&2
    (
        flock 9
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq "$@" >&2
    ) 9>/tmp/planstack-apt.lock
}
