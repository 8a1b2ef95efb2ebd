/**
 * Memory per stranger: what each client address without a valid key costs the server, measured
 * from outside as the README states it. The binary takes a first wave of strangers (each a bad
 * token from an address of its own), then a second; RSS is read after each has settled, and the
 * second wave's growth divided by its count is the cost of one more tracked address, with the
 * runtime's one-time growth (JIT, allocator arenas, the pages of the strangers' table first
 * touched) left in the first wave.
 *
 * `make bench` runs it (bench/run.ts) and reports the figure; alone, for a quick reading:
 *   node_modules/.bin/bun bench/strangers.ts [dist/petstore]    (about 30 s; prints JSON)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { flood } from './lib/measure.ts';
import type { StrangerCost } from './lib/report.ts';
import { startProduct } from './lib/servers.ts';
import { request, tokenOf, writeKeys } from './lib/setup.ts';

/** The first wave: the runtime's one-time growth happens here. */
const FIRST = 20_000;
/** The measured wave. */
const SECOND = 60_000;
/** Idle time after a wave before RSS is read, so collectable garbage is not counted as kept. */
const SETTLE_MS = 3_000;

/**
 * Measures `binary` (its own temp dir, keys file and SQLite file; addresses in X-Forwarded-For
 * from loopback).
 *
 * @example
 * const { bytesPerStranger } = await strangerCost('dist/petstore');
 */
export async function strangerCost(binary: string): Promise<StrangerCost> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-strangers-'));
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
    const first = await settled();
    const statuses = await flood(server, FIRST, SECOND);
    const second = await settled();
    const mib = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
    return {
      strangers: SECOND,
      bytesPerStranger: Math.round((second - first) / SECOND),
      rssMiB: [mib(idle), mib(first), mib(second)],
      statuses,
    };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const binary = process.argv[2] ?? join(import.meta.dir, '../dist/petstore');
  console.log(JSON.stringify(await strangerCost(binary)));
}
