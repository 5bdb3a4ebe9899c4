// Checks the files CI and users run but no test imports: the GitHub workflows and
// docker-compose.yml parse as YAML, and every `pnpm <script>` and `bash <file>` they (and
// .ci/run) call exists. Prints one line per check; exits non-zero on the first broken one.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';

const root = new URL('..', import.meta.url).pathname;
const rootScripts = JSON.parse(readFileSync(`${root}package.json`, 'utf8')).scripts;
const builtins = new Set(['install', 'exec', 'turbo', 'changeset', 'add', 'build', 'test']);
let failed = false;
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failed = true;
};

const files = ['.github/workflows/ci.yml', '.github/workflows/release.yml', 'docker-compose.yml', '.ci/run'];
for (const file of files) {
  const text = readFileSync(`${root}${file}`, 'utf8');
  if (file.endsWith('.yml')) check(parsesAsYaml(text), `${file} parses as YAML`);
  for (const [, script] of text.matchAll(/\bpnpm (?:run )?([a-z][\w:-]*)/g)) {
    if (builtins.has(script)) continue;
    check(Boolean(rootScripts[script]), `${file}: pnpm ${script} is a root script`);
  }
  for (const [, path] of text.matchAll(/\bbash ((?:scripts|\.ci)\/[\w./-]+)/g)) {
    check(existsSync(`${root}${path}`), `${file}: ${path} exists`);
  }
}
for (const [name, command] of Object.entries(rootScripts)) {
  for (const [, path] of command.matchAll(/\bbash ((?:scripts|\.ci)\/[\w./-]+)/g)) {
    check(existsSync(`${root}${path}`), `package.json script ${name}: ${path} exists`);
  }
}
const compose = composeValidator();
if (compose) {
  let ok = true;
  try {
    execFileSync(compose[0], [...compose.slice(1), 'config', '-q'], { cwd: root, stdio: 'pipe' });
  } catch {
    ok = false;
  }
  check(ok, `docker-compose.yml accepted by \`${compose.join(' ')} config\``);
} else {
  console.log('skip docker-compose.yml: no compose client here to validate it beyond YAML');
}
process.exit(failed ? 1 : 0);

function parsesAsYaml(text) {
  try {
    parse(text);
    return true;
  } catch {
    return false;
  }
}

function composeValidator() {
  for (const candidate of [['docker', 'compose'], ['docker-compose']]) {
    try {
      execFileSync(candidate[0], [...candidate.slice(1), 'version'], { stdio: 'pipe' });
      return candidate;
    } catch {}
  }
  return null;
}
