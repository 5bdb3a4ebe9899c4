#!/usr/bin/env bash
# Starts (or reuses) every database service the tests can run against on this machine and
# prints `export ENGRAM_…=…` lines for the caller to eval:
#
#   eval "$(bash scripts/services.sh)"
#
# The services are those of the adapters listed in adapters.json (`serviceScripts`, in order;
# ENGRAM_SERVICES overrides the list). Each service has its own script, scripts/<service>.sh,
# with the same contract: progress on stderr, exports on stdout, exit non-zero when the service
# cannot be had. A service that cannot be had is reported on stderr and left out; ENGRAM_REQUIRE
# decides whether that fails the tests. An adapter without a service script here (Oracle) is
# reported with the reason adapters.json gives, unless its variable is already set: then it is
# passed through.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
for service in ${ENGRAM_SERVICES:-$(node "$here/adapters.mjs" services)}; do
  script="$here/$service.sh"
  [ -f "$script" ] || continue
  if out="$(bash "$script")"; then
    printf '%s\n' "$out"
    eval "$out"
  else
    echo "services: $service is not available on this machine" >&2
  fi
done
[ -n "${ENGRAM_SERVICES:-}" ] && exit 0
while IFS=$'\t' read -r name var reason; do
  [ -n "$name" ] || continue
  if [ -n "${!var:-}" ]; then
    printf 'export %s=%q\n' "$var" "${!var}"
  else
    echo "services: $name is skipped: $reason" >&2
  fi
done < <(node "$here/adapters.mjs" missing)
