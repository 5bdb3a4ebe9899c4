#!/usr/bin/env bash
# The README's first command (`npm run quickstart`): installs pnpm and the workspace when they
# are missing, then runs examples/quickstart.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v pnpm >/dev/null 2>&1; then
  echo "quickstart: installing pnpm 12.4.2" >&2
  npm install -g pnpm@12.4.2 >/dev/null
fi
pnpm install --frozen-lockfile --reporter=silent
pnpm --silent --filter @engram/example-quickstart start
