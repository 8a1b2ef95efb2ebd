/**
 * Costs and reading the quota across two instances sharing Redis: one consumer whose createPet
 * costs 5, 100 requests sent at once and split over both instances, exact totals afterwards
 * (once the quota leases' unused units are handed back).
 *
 * Needs PETSTORE_TEST_REDIS_URL: `make keys-redis-test` (scripts/with-redis.sh starts one).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Running, spawnServer } from '../test/harness.ts';

const REDIS = process.env.PETSTORE_TEST_REDIS_URL ?? '';
if (!REDIS)
  console.warn('quota-redis.test.ts: needs PETSTORE_TEST_REDIS_URL; skipped. Run it with: make keys-redis-test');

const sha = (token: string) => createHash('sha256').update(token).digest('hex');
// Names unique to this run, so a Redis shared with other runs holds no state of these consumers.
const run = `${process.pid}-${Date.now()}`;
const MIXED = `psk_quota-mixed-${run}`;
const CREATES = `psk_quota-creates-${run}`;

let a: Running;
let b: Running;

beforeAll(async () => {
  if (!REDIS) return;
  const file = join(mkdtempSync(join(tmpdir(), 'petstore-quota-redis-')), 'keys.json');
  const consumer = (name: string, token: string, perMinute: number) => ({
    name: `${name}-${run}`,
    plan: 'pro',
    limits: { perMinute, perDay: 10_000, perMonth: 100_000 },
    costs: { createPet: 5 },
    keys: [{ sha256: sha(token) }],
  });
  const doc = { consumers: [consumer('mixed', MIXED, 300), consumer('creates', CREATES, 250)] };
  writeFileSync(file, JSON.stringify(doc), { mode: 0o600 });
  const args = ['--keys', file, '--redis', REDIS];
  [a, b] = await Promise.all([spawnServer({ args }), spawnServer({ args })]);
});

afterAll(async () => {
  await Promise.all([a, b].map((s) => s?.stop()));
});

async function send(server: Running, token: string, create: boolean) {
  const res = await fetch(`${server.url}/v1/pets${create ? '' : '?limit=1'}`, {
    method: create ? 'POST' : 'GET',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    ...(create ? { body: '{"name":"Rex","categoryId":1}' } : {}),
  });
  await res.arrayBuffer();
  return { status: res.status, retryAfter: res.headers.get('Retry-After') };
}

/**
 * `send`, as a client honouring `Retry-After: 1` does: near the limit a request may be refused
 * while the other instance still holds units of the quota (a false refusal, told to retry when
 * that grant's term ends).
 */
async function sendRetrying(server: Running, token: string, create: boolean) {
  for (let tries = 1; ; tries++) {
    const { status, retryAfter } = await send(server, token, create);
    if (status !== 429 || retryAfter !== '1' || tries === 5) return status;
    await Bun.sleep(1_000);
  }
}

async function quota(server: Running, token: string) {
  const res = await fetch(`${server.url}/v1/rate_limit`, { headers: { Authorization: `Bearer ${token}` } });
  const body = (await res.json()) as { windows: { name: string; remaining: number }[] };
  return body.windows.map((w) => [w.name, w.remaining]);
}

const SERVERS = () => [a, b] as const;

test.skipIf(!REDIS)(
  '50 creates at 5 and 50 lists at 1, at once over two instances, clients honouring Retry-After: all 300 units spent, none over; unused grants handed back',
  async () => {
    const statuses = await Promise.all(
      Array.from({ length: 100 }, (_, i) => sendRetrying(SERVERS()[i % 2] as Running, MIXED, i % 4 < 2)),
    );
    // Exactly 300 fit: a refusal while the other instance held units was a false one, and its retry got them.
    expect([statuses.filter((s) => s === 201).length, statuses.filter((s) => s === 200).length]).toEqual([50, 50]);
    const spent = 300;
    // Once the terms are over (1 s) and what was unused is handed back (0.5 s), either instance
    // reads exactly what was spent.
    await Bun.sleep(1_600);
    for (const server of SERVERS()) {
      expect(await quota(server, MIXED)).toEqual([
        ['minute', 300 - spent],
        ['day', 10_000 - spent],
        ['month', 100_000 - spent],
      ]);
    }
  },
);

test.skipIf(!REDIS)(
  '100 creates at 5 against 250 a minute, at once over two instances, clients honouring Retry-After: exactly 50 admitted, 50 refused whole',
  async () => {
    const statuses = await Promise.all(
      Array.from({ length: 100 }, (_, i) => sendRetrying(SERVERS()[i % 2] as Running, CREATES, true)),
    );
    expect([statuses.filter((s) => s === 201).length, statuses.filter((s) => s === 429).length]).toEqual([50, 50]);
    for (const server of SERVERS()) {
      expect(await quota(server, CREATES)).toEqual([
        ['minute', 0],
        ['day', 9_750],
        ['month', 99_750],
      ]);
    }
  },
);
