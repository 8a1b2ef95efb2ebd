// A flood of 100,000+ bad tokens from as many addresses, which share the keyless clients' table,
// never makes a configured key share a quota with others, nor lose any of its own, and 20
// addresses banned for bad tokens before the flood can still use a valid key. The addresses come
// in X-Forwarded-For from loopback (--trust-proxy 127.0.0.1); all traffic stays on 127.0.0.1.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { type Running, spawnServer, tokenOf, writeKeysFile } from '../../test/harness.ts';

/** More addresses than the keyless clients' table has cells in a row (65,536). */
const FLOOD = 101_000;
const CONCURRENCY = 64;

let server: Running;
beforeAll(async () => {
  const keys = writeKeysFile(['used', 'fresh', 'fresh2'].map((name) => ({ name, plan: 'free' })));
  server = await spawnServer({ args: ['--keys', keys, '--trust-proxy', '127.0.0.1'] });
});
afterAll(async () => {
  await server.stop();
});

const banned = Array.from({ length: 20 }, (_, i) => `192.0.2.${i + 1}`);
/** Flood address number n: 10.0.0.0/8, one each. */
const address = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;

async function get(addr: string, token: string) {
  const res = await fetch(`${server.url}/v1/pets?limit=1`, {
    headers: { Authorization: `Bearer ${token}`, 'X-Forwarded-For': addr },
  });
  const body = (await res.json()) as { code?: string };
  return { status: res.status, code: body.code, remaining: res.headers.get('x-ratelimit-remaining') };
}

/** `count` requests with `token`, cycling through `addresses`, one at a time. */
async function run(token: string, addresses: string[], count: number) {
  const out = [];
  for (let i = 0; i < count; i++) out.push(await get(addresses[i % addresses.length] as string, token));
  return out;
}

const countdown = (from: number, n: number) => Array.from({ length: n }, (_, i) => String(from - i));

test(`20 banned addresses, then ${FLOOD} bad tokens from as many addresses: every key keeps its own 60 a minute`, async () => {
  for (const addr of banned) {
    const answers = await run('psk_guess-0123456789abcdefghijklmnopqrstuvwx', [addr], 120);
    expect(answers.at(-1)?.code).toBe('key_banned');
  }
  const used = await run(tokenOf('used'), ['198.51.100.1'], 10);
  expect(used.map((a) => a.remaining)).toEqual(countdown(59, 10));

  let next = 0;
  const statuses: Record<number, number> = {};
  const worker = async () => {
    while (next < FLOOD) {
      const n = next++;
      const res = await fetch(`${server.url}/v1/pets`, {
        headers: { Authorization: `Bearer psk_flood-${n}-0123456789abcdefghijklmn`, 'X-Forwarded-For': address(n) },
      });
      await res.arrayBuffer();
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  expect(Object.keys(statuses).every((s) => s === '401' || s === '429')).toBe(true);

  // Two keys never used before: 60 each, from the banned addresses, then 429.
  for (const name of ['fresh', 'fresh2']) {
    const answers = await run(tokenOf(name), banned, 61);
    expect(answers.slice(0, 60).map((a) => a.status)).toEqual(Array(60).fill(200));
    expect(answers.slice(0, 60).map((a) => a.remaining)).toEqual(countdown(59, 60));
    expect([answers[60]?.status, answers[60]?.code]).toEqual([429, 'rate_limited']);
  }
  // The key used before the flood lost none of its count: 50 left, then 429.
  const rest = await run(tokenOf('used'), ['198.51.100.1'], 51);
  expect(rest.slice(0, 50).map((a) => a.remaining)).toEqual(countdown(49, 50));
  expect(rest[50]?.status).toBe(429);
}, 120_000);
