#!/usr/bin/env bash
# The browser tests drive Debian's chromium; install it when it is missing (root, apt).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
echo "ensure-chromium: /usr/bin/chromium is missing; installing Debian's chromium" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y chromium >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y chromium >/dev/null; }
/usr/bin/chromium --version >&2
