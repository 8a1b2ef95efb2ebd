/**
 * A flood of distinct bad tokens from distinct client addresses leaves memory bounded: the
 * limiter counts addresses without a valid key in a table of fixed size (docs/operations.md, "Memory,
 * and keyless clients in a fixed table"), so a second wave of as many new addresses adds next to nothing.
 *
 * The addresses come in X-Forwarded-For from loopback (`--trust-proxy 127.0.0.1`), from the
 * documentation prefix 2001:db8::/32; all traffic stays on 127.0.0.1. Reads the server's RSS from
 * /proc (Linux). Part of `make soak` (about 30 s); FLOOD_REQUESTS changes the wave size.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { type Running, spawnServer, writeKeysFile } from '../test/harness.ts';

const WAVE = Number(process.env.FLOOD_REQUESTS || 100_000);
const CONCURRENCY = 64;
const MB = 1024 * 1024;

let server: Running;
beforeAll(async () => {
  const keys = writeKeysFile([{ name: 'acme', plan: 'free' }]);
  server = await spawnServer({ args: ['--keys', keys, '--trust-proxy', '127.0.0.1'] });
});
afterAll(async () => {
  await server.stop();
});

function rss(): number {
  const status = readFileSync(`/proc/${server.child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) * 1024;
}

/** Address number `n` in 2001:db8::/32, each in a /56 of its own (IPv6 clients are counted by their /56). */
const address = (n: number) => `2001:db8:${(n >>> 8).toString(16)}:${((n & 0xff) << 8).toString(16)}::1`;

/** Sends `count` requests, each with a fresh bad token from a fresh address; returns the statuses seen. */
async function wave(from: number, count: number): Promise<Record<number, number>> {
  const statuses: Record<number, number> = {};
  let next = from;
  const worker = async () => {
    while (next < from + count) {
      const n = next++;
      const res = await fetch(`${server.url}/v1/pets`, {
        headers: { Authorization: `Bearer psk_flood-${n}-${n * 7919}`, 'X-Forwarded-For': address(n) },
      });
      await res.arrayBuffer();
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return statuses;
}

test(`${WAVE} bad tokens from ${WAVE} addresses, three times: all 401, and memory stays where the first wave left it`, async () => {
  // Warm up without touching the limiter, so the first wave fills its table exactly.
  for (let i = 0; i < 2_000; i++) await (await fetch(`${server.url}/healthz`)).arrayBuffer();
  const before = rss();
  const t0 = Date.now();
  const waves = [];
  for (let w = 0; w < 3; w++) {
    const statuses = await wave(w * WAVE, WAVE);
    waves.push({ statuses, rssMB: Number((rss() / MB).toFixed(1)) });
  }
  const seconds = (Date.now() - t0) / 1000;
  process.stdout.write(
    `flood: ${JSON.stringify({ requests: 3 * WAVE, seconds: Number(seconds.toFixed(1)), rssBeforeMB: Number((before / MB).toFixed(1)), waves })}\n`,
  );

  // Every guess is checked and refused with 401: one request per address, far below what
  // saturates the keyless clients' table (docs/operations.md), so nobody is refused for the others' traffic.
  for (const w of waves) expect(w.statuses).toEqual({ 401: WAVE });
  // The table's pages are touched in the first wave, with what the runtime keeps of 100,000
  // requests: at most 3 KB each. After that nothing grows.
  const first = (waves[0]?.rssMB ?? 0) * MB;
  expect(first - before).toBeLessThan((WAVE / 100_000) * 300 * MB);
  for (const w of waves.slice(1)) expect(w.rssMB * MB - first).toBeLessThan(60 * MB);
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
}, 300_000);
