// Sums the vitest JSON reports every package wrote (.vitest-report.json) and prints the plain
// closing line CI reads: "N passed, N failed, N skipped".
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
for (const path of reports) {
  const report = JSON.parse(readFileSync(path, 'utf8'));
  passed += report.numPassedTests;
  failed += report.numFailedTests + suitesThatFailedToLoad(report);
  skipped += report.numPendingTests + report.numTodoTests;
  const rel = path.slice(root.length);
  console.log(
    `${rel}: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${report.numPendingTests} skipped`,
  );
}
// A file that failed to load has no test results; count it as one failure so it cannot hide.
function suitesThatFailedToLoad(report) {
  return report.testResults.filter((s) => s.status === 'failed' && s.assertionResults.length === 0).length;
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
