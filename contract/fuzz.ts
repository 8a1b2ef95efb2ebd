// `make fuzz`: Schemathesis against the built binary with many more examples than `make
// contract-test` and a fresh random seed each run, every check and phase. Starts the server
// the way contract-test does (contract/runner.ts), prints the seed so a failure can be
// replayed, and ends with "fuzz: N passed, N failed" (N = test cases Schemathesis ran).
//
// FUZZ_SEED replays a run; FUZZ_EXAMPLES sets examples per operation (default 2,000).
// Report: reports/fuzz.xml (JUnit).
import { randomInt } from 'node:crypto';

const seed = process.env.FUZZ_SEED || String(randomInt(1, 2 ** 31));
const examples = process.env.FUZZ_EXAMPLES || '2000';
// runner.ts reads its seed from the environment when it is loaded.
process.env.CONTRACT_SEED = seed;
const { ensureReports, runSchemathesis, startTarget } = await import('./runner.ts');

ensureReports();
process.stdout.write(`fuzz: seed ${seed} (replay with FUZZ_SEED=${seed}), ${examples} examples per operation\n`);
const server = await startTarget();
const started = Date.now();
let run: Awaited<ReturnType<typeof runSchemathesis>>;
try {
  run = await runSchemathesis({
    origin: server.url,
    key: 'contract',
    phases: 'examples,coverage,fuzzing,stateful',
    maxExamples: examples,
    report: 'reports/fuzz.xml',
    config: 'contract/schemathesis.toml',
  });
} finally {
  await server.stop();
}
const alive = server.child.exitCode === 0;
const served = server.lines.filter((l) => l.includes('"msg":"request"'));
const fivexx = served.filter((l) => /"status":5\d\d/.test(l)).length;

// Schemathesis 4 ends with e.g. "Test cases:  12345 generated, 12345 passed".
const cases = /(\d+) generated/.exec(run.output)?.[1] ?? '?';
const failed = run.code === 0 && alive && fivexx === 0 ? 0 : 1;
process.stdout.write(
  `\nfuzz: seed ${seed}, ${cases} test cases, ${served.length} requests served, ${fivexx} answered 5xx, ` +
    `server exited ${server.child.exitCode}, ${((Date.now() - started) / 1000).toFixed(0)} s\n`,
);
process.stdout.write(`fuzz: ${failed ? 0 : 1} passed, ${failed} failed\n`);
process.exit(failed);
