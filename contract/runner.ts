// What `make contract-test` and `make contract-selftest` share: the server under test with its
// keys, and one function per tool run. Each run returns the tool's exit code and its output.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type KeySpec, type Running, spawnServer, tokenOf, writeKeysFile } from '../test/harness.ts';

export const ROOT = join(import.meta.dir, '..');
export const CONTRACT = join(ROOT, 'contract/openapi.yaml');
export const ADMIN_CONTRACT = join(ROOT, 'contract/admin.openapi.yaml');
export const REPORTS = join(ROOT, 'reports');
const DREDD = join(ROOT, 'contract/node_modules/.bin/dredd');
const SCHEMATHESIS = join(ROOT, '.venv/bin/schemathesis');

/**
 * The keys of the server under test. `contract` is enterprise with limits no run reaches, so
 * 429s come only where they are provoked. `dredd-limited` has a quota of one request a minute:
 * the Dredd hooks use it up, so it gets `rate_limited` and then `key_banned`. `fuzz-limited`
 * admits five requests a minute and is never banned, so Schemathesis' short second run sees
 * `rate_limited` 429s (and their headers) on every operation.
 */
export const KEYS = {
  contract: { name: 'contract', plan: 'enterprise', limits: { perMinute: 1_000_000_000, perDay: 1_000_000_000 } },
  dreddLimited: { name: 'dredd-limited', plan: 'free', limits: { perMinute: 1, perDay: 1_000 } },
  // Scoped keys: Dredd's 403 transactions send the one without the operation's scope.
  dreddReadOnly: {
    name: 'dredd-read-only',
    plan: 'free',
    limits: { perMinute: 1_000, perDay: 1_000 },
    scopes: ['pets:read'],
  },
  dreddWriteOnly: {
    name: 'dredd-write-only',
    plan: 'free',
    limits: { perMinute: 1_000, perDay: 1_000 },
    scopes: ['pets:write'],
  },
  // The admin API's key (--admin-port): the scope admin, alone.
  admin: {
    name: 'contract-admin',
    plan: 'enterprise',
    limits: { perMinute: 1_000_000_000, perDay: 1_000_000_000 },
    scopes: ['admin'],
  },
  fuzzLimited: {
    name: 'fuzz-limited',
    plan: 'free',
    limits: { perMinute: 5, perDay: 1_000 },
    ban: { seconds: 60, threshold: 1_000_000_000 },
  },
} satisfies Record<string, KeySpec>;

export const token = (key: keyof typeof KEYS) => tokenOf(KEYS[key].name);

/** Seed and examples per operation: fixed by default so a run can be repeated exactly. */
export const SEED = process.env.CONTRACT_SEED || '20261122';
export const EXAMPLES = process.env.CONTRACT_EXAMPLES || '1000';

export interface ToolRun {
  readonly code: number;
  readonly output: string;
}

/**
 * Starts the built binary with the contract keys on a free port, in memory, with the
 * experimental operations (`--experimental`: the contract documents them all), and waits until
 * `/healthz` answers 200.
 */
export async function startTarget(): Promise<Running> {
  const keysFile = writeKeysFile(Object.values(KEYS));
  const server = await spawnServer({
    args: ['--keys', keysFile, '--data', ':memory:', '--admin-port', '0', '--experimental'],
  });
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${server.url}/healthz`).catch(() => undefined);
    if (res?.status === 200) return server;
    await Bun.sleep(50);
  }
  await server.stop();
  throw new Error(`${server.url}/healthz never answered 200`);
}

/** The admin API's base URL of a server `startTarget` started (its `listening` line names it). */
export function adminBase(server: Running): string {
  const line = server.lines.find((l) => l.includes('"msg":"listening"')) ?? '{}';
  return String((JSON.parse(line) as { admin?: string }).admin);
}

/** Runs a command, echoing its output when `echo` is set; resolves with exit code and output. */
export function run(cmd: string, args: string[], { env = {}, echo = true } = {}): Promise<ToolRun> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const take = (chunk: Buffer) => {
      output += chunk;
      if (echo) process.stdout.write(chunk);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', (err) => {
      output += String(err);
    });
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

export interface DreddOptions {
  /** Origin of the server (or proxy); `/v1` is appended. */
  origin: string;
  /** Where the JUnit-style XML goes, relative to the repository. */
  report?: string;
  echo?: boolean;
}

/** Dredd over every documented response, with the hooks in contract/dredd-hooks.cjs. */
export function runDredd({ origin, report, echo }: DreddOptions): Promise<ToolRun> {
  const args = [CONTRACT, `${origin}/v1`, '--hookfiles', join(ROOT, 'contract/dredd-hooks.cjs'), '--loglevel', 'error'];
  if (report) args.push('--reporter', 'xunit', '--output', report);
  return run(DREDD, args, {
    echo,
    // NODE_NO_WARNINGS hides a deprecation notice from Dredd's old logger, nothing of ours.
    env: {
      CONTRACT_TOKEN: token('contract'),
      CONTRACT_LIMITED_TOKEN: token('dreddLimited'),
      CONTRACT_READ_ONLY_TOKEN: token('dreddReadOnly'),
      CONTRACT_WRITE_ONLY_TOKEN: token('dreddWriteOnly'),
      NODE_NO_WARNINGS: '1',
    },
  });
}

export interface SchemathesisOptions {
  origin: string;
  key: keyof typeof KEYS;
  phases: string;
  maxExamples: string;
  report?: string;
  /** Config file with the warning policy (see contract/schemathesis*.toml). */
  config: string;
  echo?: boolean;
  /** The contract and the base URL its paths are under: the public API's (`origin` + /v1) by default. */
  contract?: string;
  base?: string;
  /** Checks left out of `all`, with the reason beside the call. */
  excludeChecks?: string;
}

/** Schemathesis with every check, the given phases and the fixed seed. */
export function runSchemathesis(o: SchemathesisOptions): Promise<ToolRun> {
  const args = [
    '--config-file',
    join(ROOT, o.config),
    'run',
    o.contract ?? CONTRACT,
    '--url',
    o.base ?? `${o.origin}/v1`,
    '--header',
    `Authorization: Bearer ${token(o.key)}`,
    '--checks',
    'all',
    '--phases',
    o.phases,
    '--max-examples',
    o.maxExamples,
    '--seed',
    SEED,
    // No example database: with one, failures of earlier runs are replayed and a fixed seed
    // no longer means a repeatable run.
    '--generation-database',
    'none',
    '--no-color',
  ];
  if (o.excludeChecks) args.push('--exclude-checks', o.excludeChecks);
  if (o.report) args.push('--report', 'junit', '--report-junit-path', o.report);
  return run(SCHEMATHESIS, args, { echo: o.echo });
}

export function ensureReports(): void {
  mkdirSync(REPORTS, { recursive: true });
}
