#!/usr/bin/env bash
# The published packages as a user on the current stack gets them: packs @engram/core,
# @engram/libsql and @engram/ai-sdk (`pnpm pack`, which rewrites workspace: versions), installs
# the tarballs with npm on Node 24 into a fresh project next to `ai` 7 from the npm registry,
# with the adapter's driver (a peer dependency the user installs: `@libsql/client` at the version
# the package is tested with), fails on any peer-dependency or engine warning or an invalid tree (`npm ls`), type-checks the
# examples/ai-sdk sources against the packed .d.ts files and ai 7's types, then runs the
# examples/ai-sdk conversation in that project against ai 7's mock model (`main.ts --mock`,
# Node's own TypeScript type stripping) on a libSQL file, and checks the second turn answered
# from the working memory the first turn stored. Needs the npm registry, nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
ai="$(node -p "require('./packages/ai-sdk/package.json').devDependencies['ai-v7'].replace('npm:ai@', '')")"
zod="$(node -p "require('./packages/ai-sdk/package.json').devDependencies.zod")"
typescript="$(node -p "require('./package.json').devDependencies.typescript")"
libsql_client="$(node -p "require('./packages/libsql/package.json').devDependencies['@libsql/client']")"
packages=(core libsql ai-sdk)

pnpm exec turbo run build --output-logs=errors-only "${packages[@]/#/--filter=@engram/}" >/dev/null
PATH="$(bash scripts/node-runtime.sh 24):$PATH"
export PATH
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for p in "${packages[@]}"; do
  (cd "packages/$p" && pnpm pack --pack-destination "$work/tarballs" >/dev/null)
done

mkdir -p "$work/app/src"
cd "$work/app"
echo '{ "name": "engram-tarball-check", "private": true, "type": "module" }' >package.json
echo "check-tarballs: npm install on Node $(node --version): $(cd ../tarballs && echo *.tgz) @libsql/client@$libsql_client ai@$ai zod@$zod"
if ! npm install --no-audit --no-fund --loglevel=warn ../tarballs/*.tgz "@libsql/client@$libsql_client" "ai@$ai" "zod@$zod" >install.log 2>&1 ||
  ! npm install --no-audit --no-fund --loglevel=warn --save-dev "typescript@$typescript" @types/node@24 >>install.log 2>&1; then
  cat install.log
  echo "check-tarballs: npm install failed"
  exit 1
fi
if grep -iE 'peer|ERESOLVE|EBADENGINE|engine' install.log; then
  echo "check-tarballs: npm warned about the packages above"
  exit 1
fi
npm ls --all >ls.log 2>&1 || { cat ls.log; echo "check-tarballs: npm ls found an invalid tree"; exit 1; }

cp "$root"/examples/ai-sdk/src/{agent,mock-model,main}.ts src/
# The published types against ai 7's: the example's conversation and mock model (main.ts also
# imports @ai-sdk/openai, not installed here) must type-check with the packed .d.ts files.
cat >tsconfig.json <<'JSON'
{
  "compilerOptions": {
    "target": "ES2023", "module": "NodeNext", "moduleResolution": "NodeNext", "strict": true,
    "noEmit": true, "allowImportingTsExtensions": true, "verbatimModuleSyntax": true,
    "skipLibCheck": true, "types": ["node"]
  },
  "include": ["src/agent.ts", "src/mock-model.ts"]
}
JSON
npx tsc -p tsconfig.json || { echo "check-tarballs: the example does not type-check against the packed packages and ai 7"; exit 1; }
ENGRAM_DB_URL="file:$work/app/memory.db" node src/main.ts --mock >run.log 2>&1 || { cat run.log; echo "check-tarballs: the example failed"; exit 1; }
expected='[thread-b] assistant: You live in Lisbon; this weekend you could go bouldering.'
if ! grep -qF "$expected" run.log || ! grep -qF '[thread-a] tool calls: updateWorkingMemory' run.log ||
  ! [ -s memory.db ]; then
  cat run.log
  echo "check-tarballs: the example did not remember across threads"
  exit 1
fi
installed="$(node -p "['@engram/core', '@engram/libsql', '@libsql/client', '@engram/ai-sdk', 'ai'].map((n) => n + '@' + require('./node_modules/' + n + '/package.json').version).join(', ')")"
echo "check-tarballs: ok — $installed on Node $(node --version), example remembered across threads on libSQL"
