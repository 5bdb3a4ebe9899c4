// Sums the vitest JSON reports every package wrote (.vitest-report.json) and prints the plain
// closing line CI reads: "N passed, N failed, N skipped", after the name of every test that
// did not pass (skip reasons are part of the test names). Failures outside any test count too,
// one each, so the line agrees with vitest's exit code: a file that did not load, a file whose
// hook (beforeAll, afterAll) failed, and an unhandled error (`unhandledErrors`, written by the
// reporter in vitest.shared.ts).
//
//   node scripts/test-summary.mjs                  the reports in the repository
//   node scripts/test-summary.mjs --save DIR       copies them into DIR (before a second pass
//                                                  deletes them); prints nothing else
//   node scripts/test-summary.mjs --combine DIR… [--failed=STEP…]
//                                                  sums saved passes; a pass whose folder holds
//                                                  no report counts as one failure, and so does
//                                                  each CI step named failed (lint, typecheck, …;
//                                                  a pass's folder name: only if its reports show
//                                                  no failure), so the closing line agrees with
//                                                  CI's exit code
//   node scripts/test-summary.mjs --expect NAMES    as the first form; each package named (comma-
//                                                  separated, or `all`: every workspace package
//                                                  with a test script) that wrote no report (it
//                                                  hung, crashed or never ran) counts as one failure
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const [mode, ...args] = process.argv.slice(2);

function walk(dir, depth, reports) {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.git')) continue;
    const path = join(dir, name);
    if (name === '.vitest-report.json') reports.push(path);
    else if (depth < 3 && statSync(path).isDirectory()) walk(path, depth + 1, reports);
  }
  return reports;
}

// A file that failed with no failed test: it did not load (no test results), or a hook of its
// own (beforeAll, afterAll) failed after its tests passed.
const failedOutsideTests = (file) =>
  file.status === 'failed' && !file.assertionResults.some((test) => test.status === 'failed');

/** Sums reports given as [label, path]; prints one line per report unless quiet. */
function sum(reports, quiet) {
  const total = { passed: 0, failed: 0, skipped: 0, failures: [] };
  const notPassed = [];
  for (const [label, path] of reports) {
    const report = JSON.parse(readFileSync(path, 'utf8'));
    total.passed += report.numPassedTests;
    const unhandled = report.unhandledErrors ?? [];
    const failed =
      report.numFailedTests + report.testResults.filter(failedOutsideTests).length + unhandled.length;
    total.failed += failed;
    total.skipped += report.numPendingTests + report.numTodoTests;
    for (const file of report.testResults) {
      for (const test of file.assertionResults) {
        if (test.status !== 'passed') notPassed.push(`  ${test.status}: ${test.fullName}`);
        if (test.status === 'failed') total.failures.push(`${label}: ${test.fullName}`);
      }
      if (failedOutsideTests(file)) {
        const what = file.assertionResults.length === 0 ? 'failed to load' : 'failed in a hook';
        const name = file.name.slice(root.length);
        notPassed.push(`  ${what}: ${name}: ${file.message}`);
        total.failures.push(`${label}: ${what} ${name}: ${file.message}`);
      }
    }
    for (const error of unhandled) {
      notPassed.push(`  unhandled error: ${error}`);
      total.failures.push(`${label}: unhandled error: ${error.split('\n')[0]}`);
    }
    if (!quiet) {
      console.log(
        `${label}: ${report.numPassedTests} passed, ${failed} failed, ${report.numPendingTests} skipped`,
      );
    }
  }
  // Every skip and failure by name, so a skip can never pass for a pass.
  if (!quiet && notPassed.length > 0) console.log(`Not passed:\n${notPassed.join('\n')}`);
  return total;
}

const line = (t) => `${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped`;
const inRepo = () => walk(root, 0, []).map((path) => [path.slice(root.length), path]);

if (mode === '--save') {
  const [dir] = args;
  if (!dir) throw new Error('--save needs a folder');
  const reports = inRepo();
  if (reports.length > 0) mkdirSync(dir, { recursive: true });
  for (const [label, path] of reports) copyFileSync(path, join(dir, `${label.replaceAll('/', '__')}`));
} else if (mode === '--combine') {
  const total = { passed: 0, failed: 0, skipped: 0 };
  const failures = [];
  const steps = args.filter((arg) => arg.startsWith('--failed=')).map((arg) => arg.slice('--failed='.length));
  for (const dir of args.filter((arg) => !arg.startsWith('--failed='))) {
    const files = existsSync(dir) ? readdirSync(dir) : [];
    const pass = sum(
      files.map((name) => [name, join(dir, name)]),
      true,
    );
    if (files.length === 0) pass.failed += 1;
    console.log(
      `${dir}: ${line(pass)}${files.length === 0 ? ' (no test report: the pass did not run)' : ''}`,
    );
    total.passed += pass.passed;
    total.failed += pass.failed;
    total.skipped += pass.skipped;
    failures.push(...pass.failures.map((name) => `  ${dir}/${name}`));
    const step = steps.indexOf(basename(dir));
    if (step >= 0) {
      steps.splice(step, 1);
      if (pass.failed === 0) {
        total.failed += 1;
        failures.push(`  ${dir}: the pass exited with an error although its reports show no failure`);
      }
    }
  }
  for (const step of steps) failures.push(`  step failed: ${step}`);
  total.failed += steps.length;
  // The failures again, last, so a log cut to its tail still names them.
  if (failures.length > 0) console.log(`Failed:\n${failures.join('\n')}`);
  console.log(line(total));
} else {
  const reports = inRepo();
  const total = sum(reports, false);
  if (mode === '--expect') {
    const missing = expected(args[0] ?? 'all').filter(
      (dir) => !reports.some(([label]) => label === `${dir}/.vitest-report.json`),
    );
    for (const dir of missing) console.log(`no test report: ${dir} (its run hung, crashed or did not start)`);
    total.failed += missing.length;
  }
  console.log(line(total));
}

/** The folders of the workspace packages named (or of all with a test script). */
function expected(names) {
  const wanted = names === 'all' ? undefined : new Set(names.split(','));
  const dirs = [];
  for (const parent of ['packages', 'examples', '.']) {
    for (const name of readdirSync(join(root, parent))) {
      const file = join(root, parent, name, 'package.json');
      if (name === 'node_modules' || !existsSync(file)) continue;
      const pkg = JSON.parse(readFileSync(file, 'utf8'));
      if (!pkg.scripts?.test || !(wanted ? wanted.has(pkg.name) : true)) continue;
      dirs.push(parent === '.' ? name : `${parent}/${name}`);
    }
  }
  return dirs;
}
