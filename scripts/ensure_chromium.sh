#!/usr/bin/env bash
# Make sure Debian's Chromium and its ChromeDriver are on this machine: the web-UI tests drive a real
# headless browser (tests/ui/browser.py). Debian/Ubuntu: installs the `chromium` and `chromium-driver`
# packages when either is missing (as root, e.g. in CI). Prints the two paths, browser first.
set -euo pipefail

find_both() {
    local browser driver
    browser=$(command -v chromium || command -v chromium-browser || true)
    driver=$(command -v chromedriver || true)
    [[ -z "$driver" && -x /usr/lib/chromium/chromedriver ]] && driver=/usr/lib/chromium/chromedriver
    if [[ -n "$browser" && -n "$driver" ]]; then
        echo "$browser"
        echo "$driver"
        return 0
    fi
    return 1
}

if find_both; then exit 0; fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "Chromium not found: install Debian's 'chromium' and 'chromium-driver' packages" >&2
    exit 1
fi
echo "installing Chromium (Debian packages 'chromium', 'chromium-driver') for the web-UI tests" >&2
(
    flock 9
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq chromium chromium-driver >&2
) 9>/tmp/planstack-apt.lock
find_both
