// The node:test reporter e2e TestNodeClientSuite reads: one line per
// top-level test, "PASS name", "FAIL name" or "SKIP name", a failure's
// error indented under it, and a summary line "N passed, N failed".
export default async function* reporter(source) {
  let passed = 0;
  let failed = 0;
  for await (const {type, data} of source) {
    if ((type !== 'test:pass' && type !== 'test:fail') || data.nesting !== 0) {
      continue;
    }
    if (data.skip !== undefined || data.todo !== undefined) {
      yield `SKIP ${data.name}\n`;
    } else if (type === 'test:pass') {
      passed++;
      yield `PASS ${data.name}\n`;
    } else {
      failed++;
      const err = data.details?.error;
      const msg = String(err?.cause?.stack ?? err?.cause ?? err?.message ?? err).replaceAll('\n', '\n    ');
      yield `FAIL ${data.name}\n    ${msg}\n`;
    }
  }
  yield `nodesuite: ${passed} passed, ${failed} failed\n`;
}
