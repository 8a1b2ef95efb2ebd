/** What the bench and the profiler share: pinning, API keys, the scenarios, a seeded product. */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MILLION } from './million.ts';
import type { ServerName } from './report.ts';
import { type Running, startProduct } from './servers.ts';
import type { Load } from './wrk.ts';

/**
 * Server on CPU 1, wrk on CPU 0 (one thread: two wrk threads time-sliced on one core add
 * scheduler delays of milliseconds to the measured latency). Unpinned, the server and wrk fight
 * over both cores and rounds vary by ±20%. Without taskset: unpinned, 2 wrk threads.
 */
export const PINNED = hasTaskset();
export const SERVER_CPU = PINNED ? ['taskset', '-c', '1'] : [];
export const WRK = { threads: PINNED ? 1 : 2, connections: 64, prefix: PINNED ? ['taskset', '-c', '0'] : [] };
/** 90,000 addresses in all (< the limiter's 100,000 subjects): at 60k req/s each is seen ~40 times a minute (< 60). */
export const ADDRESS_POOL = 90_000 / WRK.threads;
export const SEED_PETS = 100;

export const tokenOf = (name: string) => `psk_bench-${name}-0123456789abcdefghijklmnopqrstuvwxyz`;
export const KEYS = [
  { name: 'bench', plan: 'enterprise', limits: { perMinute: 1_000_000_000, perDay: 1_000_000_000 } },
  // Always refused and never banned: the 429 path.
  {
    name: 'exhausted',
    plan: 'enterprise',
    limits: { perMinute: 1, perDay: 1 },
    ban: { threshold: 1_000_000_000, seconds: 1 },
  },
];
export const BAD_TOKEN = 'psk_bench-nobody-0123456789abcdefghijklmnopqrstuvwxyz';
export const LIST = '/v1/pets?limit=20';

export interface Scenario {
  id: string;
  label: string;
  expect: number;
  load: Load;
  servers: ServerName[];
  /**
   * What the product builds serve: their own file of SEED_PETS pets (the default), or the shared
   * file of MILLION pets that no scenario writes (lib/million.ts), with the SQLite floor beside them,
   * or their own seeded files with consumers whose webhooks go to two receivers (lib/hooks.ts),
   * or their own seeded files, some exporting traces to a receiver (lib/traces.ts),
   * or PostgreSQL databases of their own, with the product alone on SQLite beside them (lib/fleet-reads.ts),
   * or their own seeded files, one of the two on a Redis (lib/fleet.ts),
   * or the product on SQLite and on PostgreSQL, both with `--metrics` (lib/mixed.ts), or their
   * own seeded files, started with --workers 1 and 2 (lib/workers.ts).
   */
  data?: 'million' | 'hooks' | 'traces' | 'postgres' | 'fleet' | 'mixed' | 'workers';
  /** Neither the servers nor wrk pinned to a core: the workers scenarios, where the cores are the point. */
  unpinned?: boolean;
  /** Rounds of this scenario, when it needs more than BENCH_ROUNDS (1 with BENCH_QUICK). */
  rounds?: number;
  /**
   * With the base build: the servers measured beside it, at the same time on the server core, a
   * pair at a time, for the comparison with the base (default: the product). The host moves a
   * figure by a quarter from one round to the next; two servers side by side share what it does.
   */
  paired?: ServerName[];
  /** Seconds of load a server takes before its rounds, where it needs more than BENCH_WARMUP. */
  warmup?: Partial<Record<ServerName, number>>;
  /** Seconds of each round, where a scenario needs fewer than BENCH_SECONDS (each uses something up). */
  seconds?: number;
  /**
   * Before each wrk run, outside the measured CPU: reads or makes on `server` what the run works
   * on; returns more environment for wrk's script. `dir` is the bench's temp dir.
   */
  prepare?: (server: Running, name: ServerName, dir: string) => Promise<Record<string, string>>;
  /** Whether each round reads the server's `/metrics` before and after it (`Round.counts`). */
  metrics?: boolean;
}
/** Without BENCH_BASE, 'base' is dropped from every list. */
const ALL: ServerName[] = ['petstore', 'base', 'bare', 'hono', 'express'];
export const SCENARIOS: Scenario[] = [
  // The Hono floor only here: it answers every request alike, so one scenario says what Hono costs.
  { id: 'list', label: `GET ${LIST}`, expect: 200, servers: [...ALL, 'floor'], load: get(LIST, tokenOf('bench')) },
  { id: 'get', label: 'GET /v1/pets/{id}', expect: 200, servers: ALL, load: get('/v1/pets/7', tokenOf('bench')) },
  { id: '429', label: '429: exhausted key', expect: 429, servers: ALL, load: get(LIST, tokenOf('exhausted')) },
  {
    id: '401',
    label: '401: bad token',
    expect: 401,
    servers: ALL,
    load: { ...get(LIST, BAD_TOKEN), addresses: ADDRESS_POOL },
  },
  {
    id: 'post',
    label: 'POST /v1/pets (durable)',
    expect: 201,
    servers: ['petstore', 'base', 'bare'],
    load: {
      method: 'POST',
      path: '/v1/pets',
      token: tokenOf('bench'),
      addresses: 0,
      body: '{"name":"Rex","categoryId":1}',
    },
  },
  // Reads no memo can answer: a random page or pet of a million at every request. Against the
  // runtime's floor for the same read (sqlite-floor.ts) rather than bare, which replays bytes.
  {
    id: 'page-1m',
    label: 'GET /v1/pets?limit=20&cursor={random} (1M pets)',
    expect: 200,
    servers: ['petstore', 'base', 'sqlite'],
    data: 'million',
    load: { ...get('/v1/pets?limit=20&cursor={cursor}', tokenOf('bench')), random: MILLION },
  },
  {
    id: 'get-1m',
    label: 'GET /v1/pets/{random id} (1M pets)',
    expect: 200,
    servers: ['petstore', 'base', 'sqlite'],
    data: 'million',
    load: { ...get('/v1/pets/{id}', tokenOf('bench')), random: MILLION },
  },
];

function get(path: string, token: string): Load {
  return { method: 'GET', path, token, addresses: 0 };
}

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-c', '1', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** `keys` as the keys file `name` in `dir`, each with the SHA-256 of its bench token; returns it and the entries. */
export function writeKeysFile<K extends { name: string }>(dir: string, name: string, keys: readonly K[]) {
  const entries = keys.map((k) => ({ ...k, sha256: createHash('sha256').update(tokenOf(k.name)).digest('hex') }));
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify({ keys: entries }));
  return { file, entries };
}

/** The keys file every product build is started with; returns it and the entries (with their SHA-256). */
export function writeKeys(dir: string) {
  return writeKeysFile(dir, 'keys.json', KEYS);
}

/** fetch with a bearer token. */
export async function request(url: string, init: RequestInit & { token: string }): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set('Authorization', `Bearer ${init.token}`);
  return fetch(url, { ...init, headers });
}

/**
 * Starts the product (`cmd`: a binary, or a runtime and the source) on `data`, pinned like every
 * server under test, with nothing seeded (the shared million-pet file, which no scenario writes);
 * its log is `<name>.log` in `dir`. `extra`: more arguments for the product.
 *
 * @example
 * const [server, log] = await startOn([BINARY], dir, 'petstore', keysFile, await millionFile([BINARY], keysFile));
 */
export async function startOn(
  cmd: string[],
  dir: string,
  name: string,
  keysFile: string,
  data: string,
  extra: readonly string[] = [],
  pinned = true,
): Promise<[Running, string]> {
  const logFile = join(dir, `${name}.log`);
  const args = ['--keys', keysFile, '--data', data, '--trust-proxy', '127.0.0.1', ...extra];
  return [await startProduct([...(pinned ? SERVER_CPU : []), ...cmd], args, logFile), logFile];
}

/**
 * Starts the product (`cmd`: a binary, or a runtime and the source) on its own data file and log
 * in `dir`, pinned like every server under test, with SEED_PETS pets seeded; returns it and its log.
 * `extra`: more arguments for the product.
 *
 * @example
 * const [server, log] = await startSeeded([BINARY], dir, 'petstore', writeKeys(dir));
 */
export async function startSeeded(
  cmd: string[],
  dir: string,
  name: string,
  keysFile: string,
  extra: readonly string[] = [],
  pinned = true,
): Promise<[Running, string]> {
  const [server, logFile] = await startOn(cmd, dir, name, keysFile, join(dir, `${name}.db`), extra, pinned);
  for (let i = 0; i < SEED_PETS; i++) {
    const res = await request(`${server.url}/v1/pets`, {
      method: 'POST',
      token: tokenOf('bench'),
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: `Pet ${i + 1}`, categoryId: 1 + (i % 5) }),
    });
    if (res.status !== 201) throw new Error(`seeding ${name}: POST answered ${res.status}: ${await res.text()}`);
  }
  return [server, logFile];
}
