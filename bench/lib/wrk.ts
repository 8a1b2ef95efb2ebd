/** Runs wrk with `bench/wrk/scenario.lua` and reads the JSON line its done() prints. */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const SCRIPTS = join(import.meta.dir, '../wrk');

export interface Load {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly token: string;
  /** Distinct X-Forwarded-For addresses per wrk thread; 0 sends none. */
  readonly addresses: number;
  readonly body?: string;
  /** The wrk script in bench/wrk/ (default `scenario.lua`); `mixed.lua` takes the token alone. */
  readonly script?: string;
  /** More environment for the script (wrk/mixed.lua's BENCH_MIX). */
  readonly env?: Readonly<Record<string, string>>;
  /** > 0: `{id}` and `{cursor}` in `path` become random ids up to this, a new draw for each request of a pool of 65,536 per wrk thread (wrk/scenario.lua). */
  readonly random?: number;
}

export interface WrkOptions {
  readonly seconds: number;
  readonly threads: number;
  readonly connections: number;
  /** Command words before `wrk`, e.g. `taskset -c 0`. */
  readonly prefix?: readonly string[];
}

export interface WrkResult {
  readonly requests: number;
  readonly durationUs: number;
  readonly p50Us: number;
  readonly p90Us: number;
  readonly p99Us: number;
  readonly maxUs: number;
  /** Responses with status >= 400. */
  readonly statusErrors: number;
  readonly socketErrors: number;
  /** Requests per second. */
  readonly rps: number;
  /** wrk/mixed.lua: writes sent as a list, having nothing left to work on. */
  readonly fallbacks?: number;
}

/**
 * One wrk run against `url`.
 *
 * @example
 * await runWrk('http://127.0.0.1:8080', load, { seconds: 5, threads: 2, connections: 64 })
 */
export async function runWrk(
  url: string,
  load: Load,
  { seconds, threads, connections, prefix = [] }: WrkOptions,
  env: Readonly<Record<string, string>> = {},
): Promise<WrkResult> {
  const script = load.script ?? 'scenario.lua';
  const scriptArgs = script === 'scenario.lua' ? [load.method, load.path, load.token, load.body ?? ''] : [load.token];
  const [file, ...args] = [
    ...prefix,
    'wrk',
    `-t${threads}`,
    `-c${connections}`,
    `-d${seconds}s`,
    '--timeout',
    '10s',
    '-s',
    join(SCRIPTS, script),
    url,
    '--',
    ...scriptArgs,
  ];
  const child = spawn(file as string, args, {
    env: {
      ...process.env,
      BENCH_ADDRESSES: String(load.addresses),
      BENCH_RANDOM: String(load.random ?? 0),
      ...load.env,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d;
  });
  child.stderr.on('data', (d: Buffer) => {
    err += d;
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const line = out.split('\n').findLast((l) => l.startsWith('{"requests"'));
  if (code !== 0 || !line) throw new Error(`wrk failed (exit ${code}):\n${out}\n${err}`);
  const r = JSON.parse(line) as Omit<WrkResult, 'rps'>;
  return { ...r, rps: r.requests / (r.durationUs / 1e6) };
}
