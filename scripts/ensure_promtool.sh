#!/usr/bin/env bash
# Make sure Prometheus's `promtool` is on this machine: the deployment tests check the alert rules and
# every dashboard query with it (tests/deploy/test_deploy_monitoring.py). Debian/Ubuntu: installs the
# `prometheus` package when promtool is missing (as root, e.g. in CI; the package's service is not
# started where policy-rc.d forbids it, and nothing here needs it). Prints promtool's path.
set -euo pipefail

if command -v promtool >/dev/null 2>&1; then command -v promtool; exit 0; fi
source "$(dirname "$0")/apt_install.sh"
apt_install "promtool for the monitoring tests" prometheus
command -v promtool
