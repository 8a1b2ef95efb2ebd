/**
 * Two keys of one consumer against two instances sharing Redis: one quota across keys and
 * instances. A free consumer's 30 requests on one key through instance A and 30 on its other
 * key through instance B use up its 60; the 61st is 429 on either key, through either instance.
 * The remaining numbers count down on each instance.
 *
 * Needs PETSTORE_TEST_REDIS_URL: `make keys-redis-test` (scripts/with-redis.sh starts one).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { countsDown, type Running, spawnServer } from '../test/harness.ts';

const REDIS = process.env.PETSTORE_TEST_REDIS_URL ?? '';
if (!REDIS)
  console.warn('keys-redis.test.ts: needs PETSTORE_TEST_REDIS_URL; skipped. Run it with: make keys-redis-test');

const sha = (token: string) => createHash('sha256').update(token).digest('hex');
// Tokens unique to this run, so a Redis shared with other runs holds no state of this consumer.
const run = `${process.pid}-${Date.now()}`;
const ONE = `psk_keys-redis-one-${run}`;
const TWO = `psk_keys-redis-two-${run}`;
const CONSUMER = `acme-${run}`;

let a: Running;
let b: Running;

beforeAll(async () => {
  if (!REDIS) return;
  const file = join(mkdtempSync(join(tmpdir(), 'petstore-keys-redis-')), 'keys.json');
  const doc = { consumers: [{ name: CONSUMER, plan: 'free', keys: [{ sha256: sha(ONE) }, { sha256: sha(TWO) }] }] };
  writeFileSync(file, JSON.stringify(doc), { mode: 0o600 });
  const args = ['--keys', file, '--redis', REDIS];
  [a, b] = await Promise.all([spawnServer({ args }), spawnServer({ args })]);
});

afterAll(async () => {
  await Promise.all([a, b].map((s) => s?.stop()));
});

async function get(server: Running, token: string) {
  const res = await fetch(`${server.url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return { status: res.status, remaining: res.headers.get('x-ratelimit-remaining') };
}

test.skipIf(!REDIS)(
  '30 on one key through A and 30 on the other through B use up 60; the 61st is 429 everywhere',
  async () => {
    const answers = [];
    for (let i = 0; i < 30; i++) {
      answers.push(await get(a, ONE));
      answers.push(await get(b, TWO));
    }
    expect(answers.map((a) => a.status)).toEqual(Array(60).fill(200));
    // Each instance counts down its own view of the one quota (quota leases: docs/fleet.md).
    expect(countsDown(answers, 60)).toEqual(Array(60).fill('ok'));
    for (const [server, token] of [
      [a, ONE],
      [a, TWO],
      [b, ONE],
      [b, TWO],
    ] as const) {
      expect(await get(server, token)).toEqual({ status: 429, remaining: '0' });
    }
  },
);
