#!/usr/bin/env bash
# Starts (or reuses) every database service the tests can run against on this machine and
# prints `export ENGRAM_…=…` lines for the caller to eval:
#
#   eval "$(bash scripts/services.sh)"
#
# Each service has its own script, scripts/<service>.sh, with the same contract: progress on
# stderr, exports on stdout, exit non-zero when the service cannot be had. A service that cannot
# be had is reported on stderr and left out; ENGRAM_REQUIRE decides whether that fails the tests.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
for service in ${ENGRAM_SERVICES:-pg pgbouncer redis upstash mongodb}; do
  script="$here/$service.sh"
  [ -f "$script" ] || continue
  if out="$(bash "$script")"; then
    printf '%s\n' "$out"
    eval "$out"
  else
    echo "services: $service is not available on this machine" >&2
  fi
done
