#!/usr/bin/env bash
# The README's test command (`pnpm test`): starts or reuses the database services this machine
# can run (scripts/services.sh), runs every package's tests through turbo, and ends with the
# plain line "N passed, N failed, N skipped" summed over all packages.
#
# A service that cannot be had is skipped with a printed reason, unless it is named in
# ENGRAM_REQUIRE (e.g. ENGRAM_REQUIRE=libsql,pg,upstash,mongodb), which makes it a failure.
set -uo pipefail
cd "$(dirname "$0")/.."

eval "$(bash scripts/services.sh)"
env | grep -E '^ENGRAM_' | sed 's/TOKEN=.*/TOKEN=…/' | sort >&2

find . -name .vitest-report.json -not -path '*/node_modules/*' -delete
status=0
pnpm exec turbo run test --concurrency=1 --continue "$@" || status=$?
summary=$(node scripts/test-summary.mjs) || status=1
printf '%s\n' "$summary"
printf '%s\n' "$summary" | tail -n 1 | grep -qE '^[0-9]+ passed, 0 failed' || status=1
exit $status
