#!/usr/bin/env bash
# Builds every published package and checks it the way a consumer would see it:
# publint (package.json and exports) and @arethetypeswrong/cli (types resolve for ESM users).
set -euo pipefail
cd "$(dirname "$0")/.."
pnpm build >/dev/null
status=0
for dir in packages/* conformance; do
  [ -f "$dir/package.json" ] || continue
  if node -e "process.exit(require('./$dir/package.json').private ? 0 : 1)"; then continue; fi
  name=$(node -p "require('./$dir/package.json').name")
  echo "== $name"
  (cd "$dir" && pnpm exec publint --strict --level warning) || status=1
  (cd "$dir" && pnpm exec attw --pack . --profile esm-only --format table-flipped) || status=1
done
exit $status
