// `make contract-selftest`: proves `make contract-test` can fail. For each mutation, a fresh
// server sits behind contract/mutating-proxy.mjs, which breaks its responses in one way, and
// each tool run against the proxy must fail, with the failure that mutation should cause
// (matched in the tool's output). The control run ("none") goes through the same proxy and
// must pass, so the failures come from the mutations and not from the proxy. Each tool's output
// is kept in reports/selftest/MUTATION.TOOL.log.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPORTS, ROOT, runDredd, runSchemathesis, startTarget, type ToolRun } from './runner.ts';

type Tool = 'dredd' | 'schemathesis' | 'schemathesis-429';

interface Case {
  readonly mutation: string;
  /** For each tool to run: the text its output must contain (a failure message), or `pass`. */
  readonly expect: Partial<Record<Tool, RegExp | 'pass'>>;
}

const CASES: Case[] = [
  { mutation: 'none', expect: { dredd: 'pass', schemathesis: 'pass', 'schemathesis-429': 'pass' } },
  {
    mutation: 'created-as-200',
    expect: {
      dredd: /Expected status code '201', but got '200'/,
      schemathesis: /ST103 Undocumented status code\s+Received: 200/,
    },
  },
  {
    mutation: 'drop-id',
    expect: { dredd: /Missing required property: id/, schemathesis: /"id" is a required property/ },
  },
  {
    mutation: 'status-off-enum',
    expect: { dredd: /No enum match for: "lost"/, schemathesis: /"lost" is not one of/ },
  },
  {
    mutation: 'error-as-text',
    expect: {
      dredd: /At '\/content-type' No enum match for: "text\/plain/,
      schemathesis: /ST105 Undocumented Content-Type\s+Received: text\/plain/,
    },
  },
  {
    mutation: 'drop-ratelimit-remaining',
    expect: {
      dredd: /Missing required property: x-ratelimit-remaining/,
      schemathesis: /ST107 Missing required response headers[\s\S]*?`X-RateLimit-Remaining`/,
    },
  },
  {
    mutation: 'drop-retry-after',
    expect: {
      dredd: /Missing required property: retry-after/,
      'schemathesis-429': /ST107 Missing required response headers[\s\S]*?`Retry-After`/,
    },
  },
  {
    mutation: 'drop-location',
    expect: {
      dredd: /Missing required property: location/,
      schemathesis: /ST107 Missing required response headers[\s\S]*?`Location`/,
    },
  },
  {
    mutation: 'sunset-moved',
    expect: {
      dredd: /Sunset: "[^"]+" is not "Thu, 05 Dec 2030 00:00:00 GMT"/,
      schemathesis: /Response header does not conform to the schema\s+"Thu, 05 Dec 2030 00:00:00 GMT" was expected/,
    },
  },
];

/**
 * Each tool as the self-test runs it: only the phases a mutation needs, to stay fast. Schemathesis
 * keeps its stateful phase: the order operations reach real orders only through placeOrder's links,
 * and without them every made-up order id is a 404 that fails the run as missing test data.
 */
const TOOLS: Record<Tool, (origin: string) => Promise<ToolRun>> = {
  dredd: (origin) => runDredd({ origin, echo: false }),
  schemathesis: (origin) =>
    runSchemathesis({
      origin,
      key: 'contract',
      phases: 'examples,coverage,stateful',
      maxExamples: '5',
      config: 'contract/schemathesis.toml',
      echo: false,
    }),
  'schemathesis-429': (origin) =>
    runSchemathesis({
      origin,
      key: 'fuzzLimited',
      phases: 'examples',
      maxExamples: '5',
      config: 'contract/schemathesis-limited.toml',
      echo: false,
    }),
};

/** Starts the proxy under Node and resolves with its URL once it listens. */
function startProxy(upstream: string, mutation: string) {
  const child = spawn(
    'node',
    [join(ROOT, 'contract/mutating-proxy.mjs'), '--upstream', upstream, '--mutation', mutation],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise<{ url: string; stop: () => void }>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      const m = /listening (\S+)/.exec(String(chunk));
      if (m?.[1]) resolve({ url: m[1], stop: () => child.kill() });
    });
    child.on('exit', (code) => reject(new Error(`mutating proxy exited with ${code}`)));
  });
}

const LOGS = join(REPORTS, 'selftest');
mkdirSync(LOGS, { recursive: true });
let passed = 0;
let failed = 0;
const started = Date.now();
for (const { mutation, expect } of CASES) {
  const server = await startTarget();
  const proxy = await startProxy(server.url, mutation);
  try {
    for (const [tool, want] of Object.entries(expect) as [Tool, RegExp | 'pass'][]) {
      const { code, output } = await TOOLS[tool](proxy.url);
      writeFileSync(join(LOGS, `${mutation}.${tool}.log`), output);
      const ok = want === 'pass' ? code === 0 : code !== 0 && want.test(output);
      const verdict = want === 'pass' ? 'passes' : `fails (${code !== 0 ? 'exit 1' : 'exit 0'}, ${want})`;
      process.stdout.write(`${ok ? 'ok  ' : 'FAIL'}  ${mutation.padEnd(25)} ${tool.padEnd(17)} ${verdict}\n`);
      if (ok) passed++;
      else {
        failed++;
        process.stdout.write(`${output.split('\n').slice(-60).join('\n')}\n`);
      }
    }
  } finally {
    proxy.stop();
    await server.stop();
  }
}
process.stdout.write(`took ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
process.stdout.write(`contract-selftest: ${passed} passed, ${failed} failed\n`);
process.exit(failed ? 1 : 0);
