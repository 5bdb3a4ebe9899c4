// Sums the vitest JSON reports every package wrote (.vitest-report.json) and prints the plain
// closing line CI reads: "N passed, N failed, N skipped", after the name of every test that
// did not pass (skip reasons are part of the test names).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const reports = [];
function walk(dir, depth) {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.git')) continue;
    const path = join(dir, name);
    if (name === '.vitest-report.json') reports.push(path);
    else if (depth < 3 && statSync(path).isDirectory()) walk(path, depth + 1);
  }
}
walk(root, 0);
let passed = 0;
let failed = 0;
let skipped = 0;
const notPassed = [];
for (const path of reports) {
  const report = JSON.parse(readFileSync(path, 'utf8'));
  passed += report.numPassedTests;
  failed += report.numFailedTests + suitesThatFailedToLoad(report);
  skipped += report.numPendingTests + report.numTodoTests;
  const rel = path.slice(root.length);
  for (const file of report.testResults) {
    for (const test of file.assertionResults) {
      if (test.status !== 'passed') notPassed.push(`  ${test.status}: ${test.fullName}`);
    }
    if (file.status === 'failed' && file.assertionResults.length === 0) {
      notPassed.push(`  failed to load: ${file.name.slice(root.length)}`);
    }
  }
  console.log(
    `${rel}: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${report.numPendingTests} skipped`,
  );
}
// A file that failed to load has no test results; count it as one failure so it cannot hide.
function suitesThatFailedToLoad(report) {
  return report.testResults.filter((s) => s.status === 'failed' && s.assertionResults.length === 0).length;
}
// Every skip and failure by name, so a skip can never pass for a pass.
if (notPassed.length > 0) console.log(`Not passed:\n${notPassed.join('\n')}`);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
