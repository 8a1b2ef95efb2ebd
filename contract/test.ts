// `make contract-test`: proves the built binary matches contract/openapi.yaml. Starts
// dist/petstore on a free port (in memory, with the keys of contract/runner.ts), runs Dredd and
// two Schemathesis runs against it, stops it, and exits 1 if any of them found anything.
// Reports: reports/dredd.xml, reports/schemathesis.xml, reports/schemathesis-429.xml,
// reports/schemathesis-admin.xml (JUnit), and each tool's whole output beside them (.log). A
// run that passes prints its count line; one that fails prints its whole output.
//
// CONTRACT_SEED and CONTRACT_EXAMPLES change Schemathesis' seed and examples per operation.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import {
  ADMIN_CONTRACT,
  adminBase,
  EXAMPLES,
  ensureReports,
  REPORTS,
  runDredd,
  runSchemathesis,
  SEED,
  startTarget,
  type ToolRun,
} from './runner.ts';

/** Examples per operation of the 429 run: every answer is a 429 there, so few are enough. */
const LIMITED_EXAMPLES = '10';
/** Examples per admin operation: each change rewrites the keys file (fsynced), so fewer than the API's. */
const ADMIN_EXAMPLES = '100';

ensureReports();
const server = await startTarget();
const started = Date.now();
const results: Array<[string, ToolRun, number]> = [];
/** The line of a tool's output that counts its cases: Dredd's `complete: …`, Schemathesis' `… generated, …`. */
const countLine = (output: string) =>
  stripVTControlCharacters(output)
    .split('\n')
    .map((l) => l.trim())
    .find((l) => /^complete: \d+ passing/.test(l) || /^\d+ generated, /.test(l)) ?? '';
const step = async (name: string, log: string, go: (echo: false) => Promise<ToolRun>) => {
  process.stdout.write(`=== ${name}\n`);
  const t0 = Date.now();
  const run = await go(false);
  writeFileSync(join(REPORTS, log), run.output);
  results.push([name, run, Date.now() - t0]);
  process.stdout.write(run.code === 0 ? `${countLine(run.output)}\n\n` : `${run.output}\n`);
};

try {
  await step('Dredd: every documented response', 'dredd.log', (echo) =>
    runDredd({ origin: server.url, report: 'reports/dredd.xml', echo }),
  );
  await step(`Schemathesis: all checks and phases (seed ${SEED}, ${EXAMPLES} examples)`, 'schemathesis.log', (echo) =>
    runSchemathesis({
      echo,
      origin: server.url,
      key: 'contract',
      phases: 'examples,coverage,fuzzing,stateful',
      maxExamples: EXAMPLES,
      report: 'reports/schemathesis.xml',
      config: 'contract/schemathesis.toml',
    }),
  );
  await step('Schemathesis: a key over its quota (429 and its headers)', 'schemathesis-429.log', (echo) =>
    runSchemathesis({
      echo,
      origin: server.url,
      key: 'fuzzLimited',
      phases: 'examples,coverage,fuzzing',
      maxExamples: LIMITED_EXAMPLES,
      report: 'reports/schemathesis-429.xml',
      config: 'contract/schemathesis-limited.toml',
    }),
  );
  await step(
    'Schemathesis: the admin API (contract/admin.openapi.yaml, --admin-port)',
    'schemathesis-admin.log',
    (echo) =>
      runSchemathesis({
        echo,
        origin: server.url,
        key: 'admin',
        phases: 'examples,coverage,fuzzing',
        maxExamples: ADMIN_EXAMPLES,
        report: 'reports/schemathesis-admin.xml',
        config: 'contract/schemathesis.toml',
        contract: ADMIN_CONTRACT,
        base: adminBase(server),
        // A 400 for a body the schema allows is right here where a rule spans fields or the
        // stored consumer, which JSON Schema cannot state: a key's notBefore before its expiresAt,
        // an enterprise consumer's limits after a PATCH. Those 400s are tested in
        // src/admin/admin-operations.test.ts; every other check runs.
        excludeChecks: 'positive_data_acceptance',
      }),
  );
} finally {
  await server.stop();
}

process.stdout.write('=== contract-test summary\n');
for (const [name, { code }, ms] of results) {
  process.stdout.write(`${code === 0 ? 'ok  ' : 'FAIL'}  ${name} (${(ms / 1000).toFixed(1)} s)\n`);
}
const failed = results.filter(([, r]) => r.code !== 0).length;
process.stdout.write(`took ${((Date.now() - started) / 1000).toFixed(1)} s; reports in reports/\n`);
process.stdout.write(`contract-test: ${results.length - failed} passed, ${failed} failed\n`);
process.exit(failed ? 1 : 0);
