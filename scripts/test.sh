#!/usr/bin/env bash
# The README's test command (`pnpm test`): starts or reuses the database services this machine
# can run (scripts/services.sh), runs every package's tests through turbo, and ends with the
# plain line "N passed, N failed, N skipped" summed over all packages.
#
# A service that cannot be had is skipped with a printed reason, unless it is named in
# ENGRAM_REQUIRE (e.g. ENGRAM_REQUIRE=libsql,pg,upstash,mongodb), which makes it a failure.
#
# ENGRAM_TEST_BUDGET (seconds, default 3600) bounds the turbo run; a package that wrote no
# vitest report (hung, crashed, stopped) counts as a failure in the summary.
#
# --node=24 (or 22; `pnpm test:node24`) runs on that Node instead of the machine's own, installed
# by scripts/node-runtime.sh, and by default only core, ai-sdk (against `ai` 7, ENGRAM_AI_MAJOR=7),
# libsql and pg, without the type tests (ENGRAM_TYPE_TESTS=0: tsc runs, the same on every
# runtime); other turbo arguments (e.g. --filter=...) replace that package list. The conformance
# suite runs on Node 24 inside the libsql and pg tests; its own package (the suite's tests of
# itself on deliberately broken stores, about 3 minutes) runs in the Node 20 pass only.
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
# A hung test must not eat CI's whole limit in silence: past ENGRAM_TEST_BUDGET seconds (default
# an hour; every package takes about half an hour here) turbo is stopped, and the summary below
# names the packages that wrote no report.
# turbo's output is copied to a file through a process substitution, not a pipe: a process a
# test started and left running may hold the output open, and the script must not wait for it.
turbo_log="$(mktemp)"
trap 'rm -f "$turbo_log"' EXIT
timeout --kill-after=30 "${ENGRAM_TEST_BUDGET:-3600}" \
  pnpm exec turbo run test --concurrency=1 --continue "${args[@]}" > >(tee "$turbo_log") 2>&1 || status=$?
[ "$status" -ne 124 ] || echo "test: stopped after ${ENGRAM_TEST_BUDGET:-3600} s (ENGRAM_TEST_BUDGET)" >&2
turbo_status=$status
# Every package turbo was to run must have written its report: all of them without arguments,
# the ones named when only --filter=<name> arguments were given (other arguments: not checked).
expect=all names=() checked=1
for arg in ${args[@]+"${args[@]}"}; do
  case "$arg" in
    --filter=@*) names+=("${arg#--filter=}") ;;
    *) checked=0 ;;
  esac
done
if [ "$checked" -eq 0 ]; then
  expect=""
elif [ ${#names[@]} -gt 0 ]; then
  expect="$(IFS=,; echo "${names[*]}")"
fi
summary=$(node scripts/test-summary.mjs ${expect:+--expect "$expect"}) || status=1
printf '%s\n' "$summary"
clean=1
printf '%s\n' "$summary" | tail -n 1 | grep -qE '^[0-9]+ passed, 0 failed' || { clean=0; status=1; }
if [ "$turbo_status" -ne 0 ] && [ "$turbo_status" -ne 124 ] && [ "$clean" -eq 1 ]; then
  # Not a test, a hook or an unhandled error (those are in the summary): a package's test
  # script itself failed. turbo's "Failed:" line names it; ENGRAM_TEST_NOTES (a file, set by
  # .ci/run) keeps the line for the end of CI's log.
  tasks="$(sed 's/\x1b\[[0-9;]*m//g' "$turbo_log" | grep -oE '@[a-z0-9-]+/[a-z0-9-]+#test' | sort -u | paste -sd ' ')"
  note="test: turbo exited with $turbo_status although the reports show no failure (failed tasks: ${tasks:-none named})"
  echo "$note" >&2
  [ -z "${ENGRAM_TEST_NOTES:-}" ] || echo "$note" >> "$ENGRAM_TEST_NOTES"
fi
exit $status
