// Checks the files CI and users run but no test imports: the GitHub workflows and
// docker-compose.yml parse as YAML, and every `pnpm <script>` and `bash <file>` they (and
// .ci/run) call exists; and that everything wired per adapter agrees with adapters.json (the
// one list of adapters): each package and its driver peer dependency, the changesets fixed
// group, CI's adapter matrix and services, docker-compose.yml, the service scripts, each
// package's descriptor (`./descriptor`, naming the adapter and package), the inspector's adapter
// list, the faults restart servers and the bench targets. Prints one line per check; exits
// non-zero when any is broken.
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
checkAdapters();
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

/** Everything wired per adapter agrees with adapters.json. */
function checkAdapters() {
  const read = (file) => readFileSync(`${root}${file}`, 'utf8');
  const { adapters } = JSON.parse(read('adapters.json'));
  const fixed = JSON.parse(read('.changeset/config.json')).fixed.flat();
  const ci = parse(read('.github/workflows/ci.yml'));
  const job = ci.jobs.adapter;
  const composeServices = Object.keys(parse(read('docker-compose.yml')).services ?? {});
  const servers = read('faults/src/servers.ts');
  const inspector = read('packages/inspector/src/adapters.ts');
  const inspectorPkg = JSON.parse(read('packages/inspector/package.json'));
  const listed = [...inspector.matchAll(/^\s*'(@engram\/[\w-]+)',$/gm)].map((m) => m[1]);
  check(
    JSON.stringify(listed) === JSON.stringify(adapters.map((a) => a.package)),
    'inspector: ADAPTER_PACKAGES (packages/inspector/src/adapters.ts) lists the packages of adapters.json, in order',
  );
  check(
    /fromJSON\(needs\.adapters\.outputs\.names\)/.test(String(job.strategy.matrix.adapter)),
    'ci.yml: the adapter matrix is read from adapters.json',
  );
  for (const a of adapters) {
    const dir = `packages/${a.name}`;
    const pkg = existsSync(`${root}${dir}/package.json`) ? JSON.parse(read(`${dir}/package.json`)) : {};
    check(pkg.name === a.package, `adapters.json ${a.name}: ${dir} is ${a.package}`);
    check(
      Boolean(
        pkg.peerDependencies?.[a.driver] && pkg.devDependencies?.[a.driver] && !pkg.dependencies?.[a.driver],
      ),
      `adapters.json ${a.name}: ${a.driver} is a peer dependency, pinned in devDependencies`,
    );
    check(fixed.includes(a.package), `.changeset/config.json: ${a.package} is in the fixed group`);
    for (const script of a.serviceScripts ?? []) {
      check(
        existsSync(`${root}scripts/${script}.sh`),
        `adapters.json ${a.name}: scripts/${script}.sh exists`,
      );
    }
    check(
      Boolean(a.embedded) || (a.serviceScripts ?? []).length > 0 || Boolean(a.noServiceScript),
      `adapters.json ${a.name}: a service script, or the reason there is none`,
    );
    for (const service of a.compose ?? []) {
      check(composeServices.includes(service), `docker-compose.yml: service ${service} (${a.name})`);
    }
    if (!a.embedded) {
      check(Boolean(job.env?.[a.envVar]), `ci.yml: the adapter job sets ${a.envVar}`);
      const images = Object.values(job.services ?? {}).map((service) => String(service.image));
      check(
        images.some((image) => image.includes(`matrix.adapter == '${a.name}'`)),
        `ci.yml: the adapter job starts a service for ${a.name}`,
      );
    }
    const descriptor = existsSync(`${root}${dir}/src/descriptor.ts`) ? read(`${dir}/src/descriptor.ts`) : '';
    check(
      pkg.exports?.['./descriptor']?.source === './src/descriptor.ts' &&
        descriptor.includes(`name: '${a.name}'`) &&
        descriptor.includes(`package: '${a.package}'`),
      `${a.package}: exports ./descriptor naming ${a.name} and ${a.package}`,
    );
    check(
      Boolean(inspectorPkg.peerDependencies?.[a.package]) &&
        inspectorPkg.peerDependenciesMeta?.[a.package]?.optional === true,
      `inspector: ${a.package} is an optional peer dependency`,
    );
    for (const server of a.dedicatedServers ?? []) {
      check(
        new RegExp(`^\\s*${server}: async`, 'm').test(servers),
        `faults: ${a.name}'s dedicated server ${server} is in DEDICATED_SERVERS (faults/src/servers.ts)`,
      );
    }
    check(
      Boolean(a.dedicatedServers?.length) || Boolean(a.noDedicatedServer),
      `adapters.json ${a.name}: dedicated servers for the restart scenario, or the reason there are none`,
    );
    const bench = existsSync(`${root}bench/src/adapters/${a.name}.ts`)
      ? read(`bench/src/adapters/${a.name}.ts`)
      : '';
    check(
      /^export const target: BenchTarget = \{/m.test(bench),
      `bench: ${a.name} is a target (bench/src/adapters/${a.name}.ts exports target)`,
    );
  }
}

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
