#!/usr/bin/env bash
# Runs the soak scenario of @engram/faults against every adapter whose service is configured.
#
#   bash scripts/faults-soak.sh           # ENGRAM_SOAK_SECONDS (default 60) per adapter
#   bash scripts/faults-soak.sh --long    # 600 s per adapter, plus the full 10,000-message
#                                         # hostile batch on MongoDB (ENGRAM_FAULTS_FULL=1)
#
# Also `pnpm --filter @engram/faults soak [--long]`. Start the services first:
# eval "$(bash scripts/services.sh)".
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
seconds="${ENGRAM_SOAK_SECONDS:-60}"
files=(test/soak.test.ts)
for arg in "$@"; do
  case "$arg" in
    --long)
      seconds=600
      export ENGRAM_FAULTS_FULL=1
      files+=(test/hostile.test.ts)
      ;;
    *)
      echo "faults-soak: unknown argument $arg (use --long)" >&2
      exit 2
      ;;
  esac
done
export ENGRAM_SOAK_SECONDS="$seconds"
echo "faults-soak: ${seconds} s per adapter" >&2
cd "$here/../faults"
exec npx vitest run "${files[@]}"
