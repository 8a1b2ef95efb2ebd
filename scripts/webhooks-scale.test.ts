/**
 * Quota notifications across two instances sharing Redis (the counts) and PostgreSQL (the
 * outbox): 100 requests at once, split between them, cross 80% and 100% of a day quota, and the
 * receiver gets exactly one event for each crossing.
 *
 * Needs PETSTORE_TEST_POSTGRES_URL and PETSTORE_TEST_REDIS_URL: `make webhooks-test`.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { type Running, startServer, tokenOf, writeKeysFile } from '../test/harness.ts';
import { freshDatabase, type TestDatabase } from '../test/postgres.ts';
import { newSecret, type Receiver, startReceiver } from '../test/webhook-receiver.ts';

const PG_SERVER = process.env.PETSTORE_TEST_POSTGRES_URL ?? '';
const REDIS = process.env.PETSTORE_TEST_REDIS_URL ?? '';
const READY = Boolean(PG_SERVER && REDIS);
if (!READY) {
  console.warn(
    'webhooks-scale.test.ts: needs PETSTORE_TEST_POSTGRES_URL and PETSTORE_TEST_REDIS_URL; skipped. Run it with: make webhooks-test',
  );
}

// Unique to this run: a Redis shared with other runs holds no state of this consumer.
const NAME = `fleet-${process.pid}-${Date.now()}`;
const secret = newSecret();
const database = `petstore_webhooks_${process.pid}`;
let db: TestDatabase | undefined;
let hooks: Receiver;
let a: Running;
let b: Running;

beforeAll(async () => {
  if (!READY) return;
  db = await freshDatabase(PG_SERVER, database);
  hooks = await startReceiver(secret);
  const keys = writeKeysFile([
    { name: NAME, plan: 'pro', limits: { perMinute: 1_000, perDay: 100 }, webhook: { url: hooks.url, secret } },
  ]);
  const args = ['--keys', keys, '--data', db.url, '--redis', REDIS];
  // One at a time first, so the migrations run once.
  a = await startServer({ args });
  b = await startServer({ args });
});

afterAll(async () => {
  await Promise.all([a, b].map((s) => s?.stop()));
  await hooks?.close();
  await db?.drop();
});

test.skipIf(!READY)(
  'two instances, 100 concurrent requests crossing 80% and 100% between them: exactly one event each',
  async () => {
    const statuses = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const res = await fetch(`${(i % 2 ? a : b).url}/v1/pets?limit=1`, {
          headers: { Authorization: `Bearer ${tokenOf(NAME)}` },
        });
        await res.arrayBuffer();
        return res.status;
      }),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(100);
    await hooks.waitFor(2, 15_000);
    await new Promise((r) => setTimeout(r, 3_000)); // no duplicate follows
    // Two workers deliver: the order between instances is not promised, each event's uniqueness is.
    const got = [...hooks.got].sort((x, y) => Number(x.body?.data.threshold) - Number(y.body?.data.threshold));
    expect(got.map((r) => [r.status, r.body?.type, r.body?.data.threshold])).toEqual([
      [200, 'quota.threshold', 80],
      [200, 'quota.threshold', 100],
    ]);
    expect(got.map((r) => r.body?.data)).toEqual([
      expect.objectContaining({ consumer: NAME, window: 'day', limit: 100, used: 80 }),
      expect.objectContaining({ consumer: NAME, window: 'day', limit: 100, used: 100 }),
    ]);
  },
  60_000,
);
