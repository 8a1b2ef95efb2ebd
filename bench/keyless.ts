/**
 * Memory per keyless client: what each client address without a valid key costs the server, measured
 * from outside as docs/operations.md states it. The binary takes a first wave of keyless clients (each a bad
 * token from an address of its own), then WAVES more; RSS is read after each has settled, and the
 * slope of RSS against the keyless clients sent, fitted over the readings from the first wave on, is
 * the cost of one more tracked address. The runtime's one-time growth (JIT, allocator arenas, the
 * pages of the keyless clients' table first touched) stays in the first wave. One wave's growth alone
 * is not the figure: the collector moves RSS by ±5 MiB from one reading to the next whatever the
 * table holds (five waves of 60,000 read 73.4, 71.8, 69.5, 69.0 and 73.9 MiB), which is ±80 bytes
 * over 60,000 keyless clients.
 *
 * `make bench` runs it (bench/run.ts) and reports the figure; alone, for a quick reading:
 *   node_modules/.bin/bun bench/keyless.ts [dist/petstore]    (about 50 s; prints JSON)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { flood } from './lib/measure.ts';
import type { KeylessCost } from './lib/report.ts';
import { startProduct } from './lib/servers.ts';
import { request, tokenOf, writeKeys } from './lib/setup.ts';

/** The first wave: the runtime's one-time growth happens here. */
const FIRST = 20_000;
/** Each measured wave, and how many. */
const WAVE = 60_000;
const WAVES = 4;
/** Idle time after a wave before RSS is read, so collectable garbage is not counted as kept. */
const SETTLE_MS = 3_000;

/**
 * Measures `binary` (its own temp dir, keys file and SQLite file; addresses in X-Forwarded-For
 * from loopback).
 *
 * @example
 * const { bytesPerKeylessClient } = await keylessCost('dist/petstore');
 */
export async function keylessCost(binary: string): Promise<KeylessCost> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-keyless-'));
  const { file } = writeKeys(dir);
  const args = ['--keys', file, '--data', join(dir, 'pets.db'), '--trust-proxy', '127.0.0.1'];
  const server = await startProduct([binary], args, join(dir, 'server.log'));
  try {
    await (await request(`${server.url}/v1/pets`, { token: tokenOf('bench') })).arrayBuffer();
    const settled = async () => {
      await Bun.sleep(SETTLE_MS);
      return server.rss();
    };
    const idle = await settled();
    await flood(server, 0, FIRST);
    const readings = [{ sent: FIRST, rss: await settled() }];
    const statuses: Record<number, number> = {};
    for (let wave = 0; wave < WAVES; wave++) {
      const sent = FIRST + wave * WAVE;
      for (const [status, n] of Object.entries(await flood(server, sent, WAVE))) {
        statuses[Number(status)] = (statuses[Number(status)] ?? 0) + n;
      }
      readings.push({ sent: sent + WAVE, rss: await settled() });
    }
    const mib = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
    return {
      clients: WAVES * WAVE,
      bytesPerKeylessClient: Math.round(slope(readings.map((r) => [r.sent, r.rss]))),
      rssMiB: [mib(idle), ...readings.map((r) => mib(r.rss))],
      statuses,
    };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The least-squares slope of y against x. */
function slope(points: readonly (readonly [number, number])[]): number {
  const n = points.length;
  const mx = points.reduce((sum, [x]) => sum + x, 0) / n;
  const my = points.reduce((sum, [, y]) => sum + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return num / den;
}

if (import.meta.main) {
  const binary = process.argv[2] ?? join(import.meta.dir, '../dist/petstore');
  console.log(JSON.stringify(await keylessCost(binary)));
}
