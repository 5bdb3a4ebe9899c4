#!/usr/bin/env bash
# The README's test command (`pnpm test`): starts or reuses the database services this machine
# can run (scripts/services.sh), runs every package's tests through turbo, and ends with the
# plain line "N passed, N failed, N skipped" summed over all packages.
#
# A service that cannot be had is skipped with a printed reason, unless it is named in
# ENGRAM_REQUIRE (e.g. ENGRAM_REQUIRE=libsql,pg,upstash,mongodb), which makes it a failure.
#
# --node=24 (or 22; `pnpm test:node24`) runs on that Node instead of the machine's own, installed
# by scripts/node-runtime.sh, and by default only core, ai-sdk (against `ai` 7, ENGRAM_AI_MAJOR=7),
# libsql and pg, without the type tests (ENGRAM_TYPE_TESTS=0: tsc runs, the same on every
# runtime); other turbo arguments (e.g. --filter=...) replace that package list. The conformance
# suite runs on Node 24 inside the libsql and pg tests; its own package (the suite's tests of
# itself on deliberately broken stores, 11 minutes) runs in the Node 20 pass only.
set -uo pipefail
cd "$(dirname "$0")/.."

node_major=""
args=()
for arg in "$@"; do
  case "$arg" in
    --node=*) node_major="${arg#--node=}" ;;
    *) args+=("$arg") ;;
  esac
done
if [ -n "$node_major" ]; then
  bin="$(bash scripts/node-runtime.sh "$node_major")" || exit 1
  export PATH="$bin:$PATH"
  export ENGRAM_AI_MAJOR="${ENGRAM_AI_MAJOR:-7}"
  # Type tests are tsc runs, the same on every runtime: the Node 20 pass has them.
  export ENGRAM_TYPE_TESTS="${ENGRAM_TYPE_TESTS:-0}"
  if [ ${#args[@]} -eq 0 ]; then
    args=(--filter=@engram/core --filter=@engram/ai-sdk --filter=@engram/libsql --filter=@engram/pg)
  fi
fi
echo "test: Node $(node --version)${ENGRAM_AI_MAJOR:+, ai $ENGRAM_AI_MAJOR}" >&2

eval "$(bash scripts/services.sh)"
env | grep -E '^ENGRAM_' | sed 's/TOKEN=.*/TOKEN=…/' | sort >&2

find . -name .vitest-report.json -not -path '*/node_modules/*' -delete
status=0
pnpm exec turbo run test --concurrency=1 --continue "${args[@]}" || status=$?
summary=$(node scripts/test-summary.mjs) || status=1
printf '%s\n' "$summary"
printf '%s\n' "$summary" | tail -n 1 | grep -qE '^[0-9]+ passed, 0 failed' || status=1
exit $status
