import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** How to start the server under test: `PETSTORE_CMD`, split on spaces (default: the binary). */
export function serverCommand(): string[] {
  return (process.env.PETSTORE_CMD ?? join(import.meta.dir, '../dist/petstore')).split(' ').filter(Boolean);
}

/**
 * A `petstore` at `file` (a shell script) that runs the server under test with its arguments, so
 * that a document's commands run as written; returns its folder, to put first on PATH.
 */
export function writeLauncher(file: string): string {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `#!/bin/sh\nexec ${serverCommand().join(' ')} "$@"\n`, { mode: 0o755 });
  return dirname(file);
}

/**
 * Whether the server under test runs on a Node without `node:sqlite` (before 22.13): it then
 * refuses a SQLite file at start (exit 2) and serves only with `--data :memory:` or PostgreSQL.
 */
export function serverLacksSqlite(): boolean {
  return (
    /(^|\/)node$/.test(serverCommand()[0] ?? '') &&
    spawnSync(serverCommand()[0] ?? 'node', ['-e', 'require("node:sqlite")']).status !== 0
  );
}

/**
 * The sum of the samples of a /metrics text whose line matches `line` (over all their labels).
 *
 * @example
 * metricSum(await (await fetch(`${server.url}/metrics`)).text(), /^petstore_webhook_deliveries_total\{.*outcome="dropped"/)
 */
export function metricSum(metrics: string, line: RegExp): number {
  return metrics
    .split('\n')
    .filter((l) => line.test(l))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}

export interface KeySpec {
  name: string;
  plan: string;
  limits?: { perMinute: number; perDay: number; perMonth?: number };
  ban?: { seconds: number; threshold?: number };
  /** Units an operation spends, by operationId; `false` enforce: report-only limits. */
  costs?: Record<string, number>;
  enforce?: boolean;
  /** What the key may do (`pets:read`, `pets:write`, `orders:read`, `orders:write`); all of them when absent. */
  scopes?: string[];
  /** Where quota notifications go, and the percentages noticed. */
  webhook?: { url: string; secret: string };
  thresholds?: number[];
}

export const tokenOf = (name: string) => `psk_e2e-${name}-0123456789abcdefghijklmnopqrstuv`;

/** Writes a keys file for `keys`, each admitting `tokenOf(name)`. */
export function writeKeysFile(keys: KeySpec[], dir = mkdtempSync(join(tmpdir(), 'petstore-e2e-'))): string {
  const path = join(dir, 'keys.json');
  const entries = keys.map((k) => ({ ...k, sha256: createHash('sha256').update(tokenOf(k.name)).digest('hex') }));
  writeFileSync(path, JSON.stringify({ keys: entries }), { mode: 0o600 });
  return path;
}

/**
 * One `GET /v1/pets?limit=1` with `key`'s token, its body read: the status (0 for no answer
 * within 10 s, or a reset) and how long it took.
 *
 * @example
 * const { status, ms } = await timedList(server, 'acme')
 */
export async function timedList(server: { url: string }, key: string): Promise<{ status: number; ms: number }> {
  const sent = Date.now();
  const status = await fetch(`${server.url}/v1/pets?limit=1`, {
    headers: { Authorization: `Bearer ${tokenOf(key)}` },
    signal: AbortSignal.timeout(10_000),
  })
    .then(async (res) => {
      await res.arrayBuffer();
      return res.status;
    })
    .catch(() => 0);
  return { status, ms: Date.now() - sent };
}

/** The workers the suites run the server with (`PETSTORE_WORKERS`, which the server reads too); 1 by default. */
export const WORKERS = Number(process.env.PETSTORE_WORKERS || 1);

/**
 * The store a test server starts with unless it says otherwise: in memory; a new SQLite file in
 * a temporary folder when the suites run with workers (which refuse `:memory:`).
 */
export function defaultData(): string {
  return WORKERS > 1 ? join(mkdtempSync(join(tmpdir(), 'petstore-e2e-data-')), 'pets.db') : ':memory:';
}

export interface Running {
  readonly url: string;
  readonly port: number;
  readonly child: ChildProcess;
  /** Every line the server wrote to stdout and stderr so far. */
  readonly lines: string[];
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Spawns the server under test (`serverCommand()`, a child process) on a free loopback port and
 * resolves once it logs that it listens.
 *
 * @example
 * const s = await spawnServer({ args: ['--keys', writeKeysFile([{ name: 'a', plan: 'free' }])] })
 */
export async function spawnServer({
  args = [] as string[],
  env = {} as Record<string, string>,
  /** Start under this umask (through `sh -c 'umask …; exec …'`), e.g. `'000'`. */
  umask = undefined as string | undefined,
  /** Start with these open-file limits (through `sh -c 'ulimit …; exec …'`). */
  ulimit = undefined as { soft: number; hard: number } | undefined,
  /** The working directory to start in (default: the test's). */
  cwd = undefined as string | undefined,
} = {}): Promise<Running> {
  const command = [...serverCommand(), '--port', '0', '--host', '127.0.0.1', '--log-format', 'json', ...args];
  const setup = [
    ...(umask === undefined ? [] : [`umask ${umask}`]),
    ...(ulimit === undefined ? [] : [`ulimit -Sn ${ulimit.soft}`, `ulimit -Hn ${ulimit.hard}`]),
  ];
  const [cmd, ...rest] =
    setup.length === 0 ? command : ['sh', '-c', `${setup.join('; ')}; exec "$@"`, 'sh', ...command];
  const child = spawn(cmd as string, rest, {
    env: { ...process.env, PETSTORE_DATA: defaultData(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(cwd === undefined ? {} : { cwd }),
  });
  const lines: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${lines.join('\n')}`)), 15_000);
    // A pipe hands over chunks, not lines: each stream keeps its unfinished last line until the
    // rest of it arrives, so a long log line is never seen as two broken ones.
    const reader = (stream: NodeJS.ReadableStream | null) => {
      let partial = '';
      stream?.on('end', () => {
        if (partial) lines.push(partial);
      });
      stream?.on('data', (chunk: Buffer) => {
        const parts = (partial + chunk.toString()).split('\n');
        partial = parts.pop() ?? '';
        for (const line of parts.filter(Boolean)) {
          lines.push(line);
          const m = /"address":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(line);
          if (m) {
            clearTimeout(timer);
            resolve(Number(m[1]));
          }
        }
      });
    };
    reader(child.stdout);
    reader(child.stderr);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${lines.join('\n')}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    child,
    lines,
    stop: async (signal = 'SIGTERM') => {
      child.kill(signal);
      return exited;
    },
  };
}

/** Runs the server command to completion (for --help, --version, bad flags). */
export function runCommand(args: string[], env: Record<string, string> = {}) {
  const [cmd, ...pre] = serverCommand();
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(cmd as string, [...pre, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => {
      stdout += d;
    });
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d;
    });
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The first log line of `server` that `match` accepts, parsed; waits up to `timeoutMs` for it. */
export async function waitForLine(
  server: Running,
  match: (line: string) => boolean,
  timeoutMs = 5_000,
): Promise<Record<string, unknown>> {
  for (const end = Date.now() + timeoutMs; Date.now() < end; await new Promise((r) => setTimeout(r, 20))) {
    const line = server.lines.find(match);
    if (line !== undefined) return JSON.parse(line) as Record<string, unknown>;
  }
  throw new Error(`no such log line within ${timeoutMs} ms:\n${server.lines.join('\n')}`);
}

/**
 * A keys file with an admin key (consumer `ops`, key `a1`, with `adminFlags` such as
 * `--expires 1h`) and a public key (consumer `publicConsumer`, key `publicId`, free plan), made
 * by `petstore keys add`; their tokens.
 */
export async function adminKeysFile(publicConsumer = 'acme', publicId = 'p1', ...adminFlags: string[]) {
  const file = join(mkdtempSync(join(tmpdir(), 'petstore-admin-')), 'keys.json');
  const add = (consumer: string, plan: string, id: string, ...more: string[]) =>
    runCommand(['keys', 'add', '--keys', file, '--consumer', consumer, '--plan', plan, '--id', id, ...more]);
  const admin = (await add('ops', 'business', 'a1', '--scopes', 'admin', ...adminFlags)).stdout.trim();
  const pub = (await add(publicConsumer, 'free', publicId)).stdout.trim();
  return { file, admin, pub };
}

/** The admin API's base URL that `server` logged in its `listening` line. */
export function adminUrl(server: Running): string {
  const line = server.lines.find((l) => l.includes('"msg":"listening"')) ?? '';
  return String((JSON.parse(line) as { admin: string }).admin);
}

/** A request with `token` as its bearer key; `body` sent as JSON (a string as it is). */
export async function callWithKey(url: string, token: string, method = 'GET', body?: unknown) {
  const res = await fetch(url, {
    method,
    headers: {
      Authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    json: text ? (JSON.parse(text) as Record<string, unknown>) : undefined,
  };
}

/**
 * The remaining numbers of `n` admissions in a row, sent in turn to `instances` instances on
 * one Redis: 'ok' for each that is below the same instance's previous one (from at most `n`),
 * else the number. With quota leases an instance sees what the others took at its next script
 * run, within a second, so only each instance's own countdown is exact; what is admitted is.
 *
 * @example
 * countsDown(answers, 60) // ['ok', 'ok', ...] when each instance counts down
 */
export function countsDown(answers: readonly { remaining: string | null }[], n: number, instances = 2): string[] {
  return answers.slice(0, n).map((r, i) => {
    const previous = i < instances ? n : Number(answers[i - instances]?.remaining);
    return Number(r.remaining) < previous && Number(r.remaining) >= 0 ? 'ok' : String(r.remaining);
  });
}
