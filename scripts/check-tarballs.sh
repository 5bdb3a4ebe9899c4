#!/usr/bin/env bash
# The published packages as a user on the current stack gets them: packs @engram/core,
# @engram/libsql, @engram/pg and @engram/ai-sdk (`pnpm pack`, which rewrites workspace: versions),
# installs the tarballs with npm on Node 24 into a fresh project next to `ai` 7 from the npm
# registry (and a second one next to `ai` 6), with the adapters' drivers (peer dependencies the
# user installs: `@libsql/client` and `pg` at the versions the packages are tested with), fails on any peer-dependency or engine warning or an invalid tree (`npm ls`), type-checks the
# examples/ai-sdk sources, a zod tool of your own beside the memory tools (own-tool.ts) and a
# PostgresStore against the packed .d.ts files with skipLibCheck false, then runs the
# examples/ai-sdk conversation in that project against ai 7's mock model (`main.ts --mock`,
# Node's own TypeScript type stripping) on a libSQL file, and checks the second turn answered
# from the working memory the first turn stored; on both majors it runs own-tool.ts (the zod
# tool called on the mock model, its typed output printed, the turn saved). Needs the npm
# registry, nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
ai="$(node -p "require('./packages/ai-sdk/package.json').devDependencies['ai-v7'].replace('npm:ai@', '')")"
ai6="$(node -p "require('./packages/ai-sdk/package.json').devDependencies.ai")"
zod="$(node -p "require('./packages/ai-sdk/package.json').devDependencies.zod")"
typescript="$(node -p "require('./package.json').devDependencies.typescript")"
libsql_client="$(node -p "require('./packages/libsql/package.json').devDependencies['@libsql/client']")"
pg="$(node -p "require('./packages/pg/package.json').devDependencies.pg")"
# The AI SDK's own declarations import the types of `json-schema`, which it does not depend on:
# under skipLibCheck false a user adds them (packages/ai-sdk/README.md says so).
types_json_schema=7.0.15
packages=(core libsql pg ai-sdk)

pnpm exec turbo run build --output-logs=errors-only "${packages[@]/#/--filter=@engram/}" >/dev/null
PATH="$(bash scripts/node-runtime.sh 24):$PATH"
export PATH
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for p in "${packages[@]}"; do
  (cd "packages/$p" && pnpm pack --pack-destination "$work/tarballs" >/dev/null)
done

# The published types, checked as a strict user's project checks them (`skipLibCheck: false`, the
# default libs): the example's conversation and mock model, your own zod tool beside the memory
# tools (own-tool.ts), and a PostgresStore with the `@types/pg` its package declares as an
# optional peer. (main.ts also imports @ai-sdk/openai, not installed here.)
tsconfig='{
  "compilerOptions": {
    "target": "ES2023", "module": "NodeNext", "moduleResolution": "NodeNext", "strict": true,
    "noEmit": true, "allowImportingTsExtensions": true, "verbatimModuleSyntax": true,
    "skipLibCheck": false, "types": ["node"]
  },
  "include": ["src/agent.ts", "src/mock-model.ts", "src/own-tool.ts", "src/pg.ts"]
}'

# project DIR AI: a fresh npm project in $work/DIR with the tarballs, `ai@AI`, the drivers and
# TypeScript; fails on any peer-dependency or engine warning or an invalid tree (`npm ls`), then
# type-checks the files above.
project() {
  local dir="$work/$1" version="$2"
  mkdir -p "$dir/src"
  cd "$dir"
  echo '{ "name": "engram-tarball-check", "private": true, "type": "module" }' >package.json
  local types_pg
  types_pg="$(node -p "require('$work/tarballs/pkg/package.json').peerDependencies?.['@types/pg'] ?? 'missing'" 2>/dev/null)"
  if [ "$types_pg" = missing ]; then
    echo "check-tarballs: @engram/pg does not declare the @types/pg its declarations import"
    exit 1
  fi
  echo "check-tarballs: npm install on Node $(node --version): $(cd ../tarballs && echo *.tgz) @libsql/client@$libsql_client pg@$pg ai@$version zod@$zod"
  if ! npm install --no-audit --no-fund --loglevel=warn ../tarballs/*.tgz "@libsql/client@$libsql_client" "pg@$pg" "ai@$version" "zod@$zod" >install.log 2>&1 ||
    ! npm install --no-audit --no-fund --loglevel=warn --save-dev "typescript@$typescript" @types/node@24 "@types/pg@$types_pg" "@types/json-schema@$types_json_schema" >>install.log 2>&1; then
    cat install.log
    echo "check-tarballs: npm install failed"
    exit 1
  fi
  if grep -iE 'peer|ERESOLVE|EBADENGINE|engine' install.log; then
    echo "check-tarballs: npm warned about the packages above"
    exit 1
  fi
  npm ls --all >ls.log 2>&1 || { cat ls.log; echo "check-tarballs: npm ls found an invalid tree"; exit 1; }
  cp "$root"/examples/ai-sdk/src/{agent,mock-model,main,own-tool}.ts src/
  cat >src/pg.ts <<'TS'
import { PostgresStore } from '@engram/pg';
import pg from 'pg';

export const fromUrl = new PostgresStore({ connectionString: 'postgres://localhost/engram' });
export const fromPool = new PostgresStore({ pool: new pg.Pool(), schemaName: 'memory' });
TS
  echo "$tsconfig" >tsconfig.json
  npx tsc -p tsconfig.json || { echo "check-tarballs: the sources above do not type-check against the packed packages and ai $version"; exit 1; }
}

# own-tool DIR: runs own-tool.ts (a zod tool beside the memory tools, on the mock model).
own_tool() {
  cd "$work/$1"
  node src/own-tool.ts >own-tool.log 2>&1 || { cat own-tool.log; echo "check-tarballs: own-tool.ts failed"; exit 1; }
  if ! grep -qF 'getWeather(Lisbon): sunny, 24 °C' own-tool.log || ! grep -qF 'saved: user, user, assistant, tool, assistant' own-tool.log; then
    cat own-tool.log
    echo "check-tarballs: own-tool.ts did not run the tool or save the turn"
    exit 1
  fi
}

mkdir -p "$work/tarballs/pkg" && tar -xzf "$work"/tarballs/engram-pg-*.tgz -C "$work/tarballs" package/package.json &&
  mv "$work/tarballs/package/package.json" "$work/tarballs/pkg/" && rmdir "$work/tarballs/package"

started=$SECONDS
project app "$ai"
ENGRAM_DB_URL="file:$work/app/memory.db" node src/main.ts --mock >run.log 2>&1 || { cat run.log; echo "check-tarballs: the example failed"; exit 1; }
expected='[thread-b] assistant: You live in Lisbon; this weekend you could go bouldering.'
if ! grep -qF "$expected" run.log || ! grep -qF '[thread-a] tool calls: updateWorkingMemory' run.log ||
  ! [ -s memory.db ]; then
  cat run.log
  echo "check-tarballs: the example did not remember across threads"
  exit 1
fi
own_tool app
installed="$(node -p "['@engram/core', '@engram/libsql', '@engram/pg', '@libsql/client', '@engram/ai-sdk', 'ai'].map((n) => n + '@' + require('./node_modules/' + n + '/package.json').version).join(', ')")"
echo "check-tarballs: ok — $installed on Node $(node --version) ($((SECONDS - started)) s): types checked, example remembered across threads on libSQL, own tool ran"

started=$SECONDS
project app-ai6 "$ai6"
own_tool app-ai6
echo "check-tarballs: ok — ai@$ai6 ($((SECONDS - started)) s): types checked, own tool ran"
