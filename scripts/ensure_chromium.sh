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
source "$(dirname "$0")/apt_install.sh"
apt_install "Chromium for the web-UI tests" chromium chromium-driver
find_both
