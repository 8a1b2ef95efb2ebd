/**
 * Several instances behind one load balancer: two (and a third in fail-closed mode) of the built
 * binary share one PostgreSQL database (pets, idempotency keys) and one Redis (limits, bans).
 * The test plays the balancer, alternating requests between the instances:
 * - a free key gets exactly 60 admissions per minute across the pair, and 60 again a minute later;
 * - a pet created through one instance is read through the other, and a retry with the same
 *   Idempotency-Key through the other gets the same pet;
 * - Redis stopped mid-run: fail-open instances keep answering with their own local limits and
 *   log it once; the fail-closed one answers 503; all go back to shared limits once Redis is back.
 *
 * Needs PETSTORE_TEST_POSTGRES_URL, PETSTORE_TEST_REDIS_URL and PETSTORE_TEST_REDIS_DIR:
 * `make scale-out-test` (scripts/with-postgres.sh and scripts/with-redis.sh start both).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { countsDown, type Running, spawnServer, tokenOf, writeKeysFile } from '../test/harness.ts';
import { freshDatabase, type TestDatabase } from '../test/postgres.ts';

const PG_SERVER = process.env.PETSTORE_TEST_POSTGRES_URL ?? '';
const REDIS = process.env.PETSTORE_TEST_REDIS_URL ?? '';
const REDIS_DIR = process.env.PETSTORE_TEST_REDIS_DIR ?? '';
const READY = Boolean(PG_SERVER && REDIS && REDIS_DIR);
if (!READY) {
  console.warn(
    'scale-out.test.ts: needs PETSTORE_TEST_POSTGRES_URL, PETSTORE_TEST_REDIS_URL and PETSTORE_TEST_REDIS_DIR; ' +
      'skipped. Run it with: make scale-out-test',
  );
}

const KEYS = ['quota', 'pets', 'outage', 'closed', 'after'] as const;
const auth = (key: (typeof KEYS)[number]) => ({ Authorization: `Bearer ${tokenOf(key)}` });
const DOWN_OPEN = 'rate limiter: Redis unreachable; each instance now enforces the limits on its own';
const DOWN_CLOSED = 'rate limiter: Redis unreachable; answering 503 until it is back (--redis-fail closed)';
const BACK = 'rate limiter: Redis reachable again; limits are shared again';

let a: Running;
let b: Running;
let closed: Running;
let db: TestDatabase | undefined;
const database = `petstore_scale_out_${process.pid}`;

beforeAll(async () => {
  if (!READY) return;
  db = await freshDatabase(PG_SERVER, database);
  const keys = writeKeysFile(KEYS.map((name) => ({ name, plan: name === 'pets' ? 'pro' : 'free' })));
  const shared = ['--keys', keys, '--data', db.url, '--redis', REDIS];
  // One at a time first, so the migrations run once; then the rest together.
  a = await spawnServer({ args: shared });
  [b, closed] = await Promise.all([
    spawnServer({ args: shared }),
    spawnServer({ args: [...shared, '--redis-fail', 'closed'] }),
  ]);
});

afterAll(async () => {
  await Promise.all([a, b, closed].map((s) => s?.stop()));
  await db?.drop();
});

/** `count` GETs of /v1/pets, one after the other, alternating between `servers`. */
async function alternate(servers: Running[], key: (typeof KEYS)[number], count: number) {
  const answers: { status: number; remaining: string | null; retryAfter: string | null }[] = [];
  for (let i = 0; i < count; i++) {
    const server = servers[i % servers.length] as Running;
    const res = await fetch(`${server.url}/v1/pets?limit=1`, { headers: auth(key) });
    await res.arrayBuffer();
    answers.push({
      status: res.status,
      remaining: res.headers.get('x-ratelimit-remaining'),
      retryAfter: res.headers.get('retry-after'),
    });
  }
  return answers;
}

const countdown = (n: number) => Array.from({ length: n }, (_, i) => String(n - 1 - i));
const logged = (server: Running, msg: string) => server.lines.filter((l) => l.includes(`"msg":"${msg}"`)).length;

async function waitFor(what: string, done: () => boolean, ms = 15_000) {
  const until = Date.now() + ms;
  while (!done()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}

function redis(...args: string[]) {
  const port = new URL(REDIS).port;
  return spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', port, ...args], { encoding: 'utf8' });
}

describe.skipIf(!READY)('two instances sharing PostgreSQL and Redis', () => {
  test('a free key gets exactly 60 admissions per minute across the pair', async () => {
    const started = Date.now();
    const first = await alternate([a, b], 'quota', 90);
    expect(first.slice(0, 60).map((r) => r.status)).toEqual(Array(60).fill(200));
    // One count for both: exactly 60 admitted, each instance counting down.
    expect(countsDown(first, 60)).toEqual(Array(60).fill('ok'));
    expect(first.slice(60).map((r) => r.status)).toEqual(Array(30).fill(429));
    const retryAfter = Number(first[89]?.retryAfter);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(61);

    // A request is held for less than 61 s: a minute and two seconds later the window is empty.
    await Bun.sleep(Math.max(0, started + 62_000 - Date.now()));
    const second = await alternate([b, a], 'quota', 70);
    expect(second.filter((r) => r.status === 200)).toHaveLength(60);
    expect(countsDown(second, 60)).toEqual(Array(60).fill('ok'));
    expect(second.slice(60).map((r) => r.status)).toEqual(Array(10).fill(429));
  }, 90_000);

  test('a pet created through one instance is read through the other; a keyed retry is not a second pet', async () => {
    const headers = { ...auth('pets'), 'Content-Type': 'application/json', 'Idempotency-Key': 'order-4711' };
    const body = JSON.stringify({ name: 'Rex', categoryId: 7, status: 'pending' });
    const created = await fetch(`${a.url}/v1/pets`, { method: 'POST', headers, body });
    expect(created.status).toBe(201);
    const pet = (await created.json()) as { id: number };
    const location = created.headers.get('location') as string;
    // Relative to the request URL: followed against the other instance's /v1/pets.
    expect(location).toBe(`pets/${pet.id}`);

    const read = await fetch(new URL(location, `${b.url}/v1/pets`), { headers: auth('pets') });
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual({ id: pet.id, name: 'Rex', categoryId: 7, status: 'pending' });

    const retry = await fetch(`${b.url}/v1/pets`, { method: 'POST', headers, body });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('location')).toBe(location);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await retry.json()).toEqual({ id: pet.id, name: 'Rex', categoryId: 7, status: 'pending' });

    const reused = await fetch(`${b.url}/v1/pets`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'Tom', categoryId: 7 }),
    });
    expect(reused.status).toBe(409);
    expect(((await reused.json()) as { code: string }).code).toBe('idempotency_key_reused');

    const listed = await fetch(`${a.url}/v1/pets?status=pending`, { headers: auth('pets') });
    expect(((await listed.json()) as { name: string }[]).filter((p) => p.name === 'Rex')).toHaveLength(1);
  });

  test('Redis stopped mid-run: fail-open instances limit on their own, fail-closed answers 503', async () => {
    expect((await alternate([a, b, closed], 'outage', 3)).map((r) => r.status)).toEqual([200, 200, 200]);
    expect(redis('shutdown', 'nosave').status).toBe(0);
    try {
      // Noticed without waiting for a request (the connection closes), logged once each.
      await waitFor(
        'all three to log the outage',
        () => [a, b].every((s) => logged(s, DOWN_OPEN) === 1) && logged(closed, DOWN_CLOSED) === 1,
      );

      // Each fail-open instance counts on its own from zero: 60 each, 120 across the pair.
      const onA = await alternate([a], 'outage', 61);
      const onB = await alternate([b], 'outage', 61);
      for (const answers of [onA, onB]) {
        expect(answers.slice(0, 60).map((r) => r.remaining)).toEqual(countdown(60));
        expect(answers[60]?.status).toBe(429);
      }
      // Pets live in PostgreSQL: still served.
      const created = await fetch(`${a.url}/v1/pets`, {
        method: 'POST',
        headers: { ...auth('pets'), 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'Outage', categoryId: 1 }),
      });
      expect(created.status).toBe(201);

      const refused = await fetch(`${closed.url}/v1/pets`, { headers: auth('closed') });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(await refused.json()).toEqual({
        code: 'service_unavailable',
        message: 'Rate limits cannot be checked right now; retry shortly.',
        status: 503,
      });
      expect([a, b].map((s) => logged(s, DOWN_OPEN))).toEqual([1, 1]);
      expect(logged(closed, DOWN_CLOSED)).toBe(1);
    } finally {
      const restart = spawnSync('redis-server', [join(REDIS_DIR, 'redis.conf')], { encoding: 'utf8' });
      expect(restart.status).toBe(0);
    }

    await waitFor('all three to take Redis up again', () => [a, b, closed].every((s) => logged(s, BACK) === 1));
    expect((await alternate([closed], 'closed', 1))[0]?.status).toBe(200);
    const shared = await alternate([a, b], 'after', 61);
    expect(countsDown(shared, 60)).toEqual(Array(60).fill('ok'));
    expect(shared[60]?.status).toBe(429);
  }, 60_000);
});
