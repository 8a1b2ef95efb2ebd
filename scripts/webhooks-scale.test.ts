/**
 * Quota notifications across two instances sharing Redis (the counts) and PostgreSQL (the
 * outbox): 100 requests at once, split between them, cross 80% and 100% of a day quota, and the
 * receiver gets exactly one event for each crossing. An instance killed while it records a
 * crossing (the mark already in Redis, the outbox write never committed) loses nothing: the
 * other instance records it with the consumer's first request 30 s on.
 *
 * Needs PETSTORE_TEST_POSTGRES_URL and PETSTORE_TEST_REDIS_URL: `make webhooks-test`.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import postgres from 'postgres';
import { type Running, spawnServer, tokenOf, writeKeysFile } from '../test/harness.ts';
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
const CRASHED = `crashed-${process.pid}-${Date.now()}`;
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
    { name: CRASHED, plan: 'pro', limits: { perMinute: 1_000, perDay: 10 }, webhook: { url: hooks.url, secret } },
  ]);
  const args = ['--keys', keys, '--data', db.url, '--redis', REDIS];
  // One at a time first, so the migrations run once.
  a = await spawnServer({ args });
  b = await spawnServer({ args });
});

afterAll(async () => {
  await Promise.all([a, b].map((s) => s?.stop()));
  await hooks?.close();
  await db?.drop();
});

test.skipIf(!READY)(
  'two instances, 100 concurrent requests crossing 80% and 100% between them: exactly one event each',
  async () => {
    // Near the limit a request may be refused while the other instance still holds units of the
    // quota (a false refusal, told to retry when that grant's term ends, 1 s): these clients do,
    // each up to five times, as a client honouring Retry-After would.
    const statuses = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        for (let retries = 0; ; retries++) {
          const res = await fetch(`${(i % 2 ? a : b).url}/v1/pets?limit=1`, {
            headers: { Authorization: `Bearer ${tokenOf(NAME)}` },
          });
          await res.arrayBuffer();
          if (res.status !== 429 || retries >= 5) return res.status;
          expect(res.headers.get('Retry-After')).toBe('1');
          await Bun.sleep(1_000);
        }
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

test.skipIf(!READY)(
  'an instance killed while recording the 80% crossing: the other records it 30 s on; each event is delivered once',
  async () => {
    const list = (server: Running) =>
      fetch(`${server.url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${tokenOf(CRASHED)}` } });
    const sql = postgres((db as TestDatabase).url, { max: 1, onnotice: () => {} });
    const admin = (db as TestDatabase).admin;
    let crossedAt = 0;
    // The outbox locked: the crossing request's write waits, and `a` dies right then.
    await sql.begin(async (tx) => {
      await tx`LOCK TABLE webhook_outbox IN ACCESS EXCLUSIVE MODE`;
      for (let i = 0; i < 7; i++) expect((await list(a)).status).toBe(200);
      const crossing = list(a).catch(() => undefined);
      const waiting = async () =>
        (
          await admin`SELECT pid FROM pg_stat_activity
            WHERE datname = ${database} AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO webhook_outbox%'`
        ).map((r) => r.pid as number);
      const until = Date.now() + 5_000;
      while ((await waiting()).length === 0) {
        expect(Date.now()).toBeLessThan(until);
        await Bun.sleep(20);
      }
      // Redis decided the crossing before the write that now waits.
      crossedAt = Date.now();
      await a.stop('SIGKILL');
      // A crash's transaction never commits: end the dead instance's waiting write.
      for (const pid of await waiting()) await admin`SELECT pg_terminate_backend(${pid})`;
      await crossing;
    });
    const [kept] = await sql`SELECT count(*)::int AS n FROM webhook_outbox WHERE consumer = ${CRASHED}`;
    expect(kept?.n).toBe(0);
    await sql.end();
    const mine = () => hooks.got.filter((r) => r.body?.data.consumer === CRASHED);
    await Bun.sleep(crossedAt + 32_000 - Date.now());
    expect(mine()).toEqual([]);
    // The 9th of 10 crosses nothing itself, and is given the 80% once more.
    expect((await list(b)).status).toBe(200);
    const until = Date.now() + 15_000;
    while (mine().length === 0) {
      expect(Date.now()).toBeLessThan(until);
      await Bun.sleep(100);
    }
    await Bun.sleep(2_000); // no duplicate follows
    const delivered = () => mine().map((r) => [r.status, r.body?.type, r.body?.data.threshold, r.body?.data.used]);
    expect(delivered()).toEqual([[200, 'quota.threshold', 80, 9]]);
    // The 10th crosses 100%, recorded and delivered at once; its second time, 30 s on (a read of
    // the quota is a decision too), finds it in the outbox and sends nothing more.
    expect((await list(b)).status).toBe(200);
    const reached = Date.now();
    while (mine().length === 1) {
      expect(Date.now()).toBeLessThan(reached + 15_000);
      await Bun.sleep(100);
    }
    await Bun.sleep(reached + 32_000 - Date.now());
    const read = await fetch(`${b.url}/v1/rate_limit`, { headers: { Authorization: `Bearer ${tokenOf(CRASHED)}` } });
    expect(read.status).toBe(200);
    await Bun.sleep(3_000);
    expect(delivered()).toEqual([
      [200, 'quota.threshold', 80, 9],
      [200, 'quota.threshold', 100, 10],
    ]);
  },
  120_000,
);
