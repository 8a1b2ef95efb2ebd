/**
 * Orders against the built binary (PETSTORE_CMD, default dist/petstore):
 * - sold once: 20 available pets and 200 concurrent buyers (10 consumers, each request with its
 *   own Idempotency-Key, a 503 retried with the same key): exactly 20 `201` and 180 `409
 *   pet_unavailable`, every pet in one placed order and pending; on one instance on SQLite, and
 *   over 4 instances on one PostgreSQL;
 * - a hold that ends: with `--order-hold 2s` on two instances on PostgreSQL, an order not
 *   completed within 2 s reads `expired` on both, its pet can be ordered again, and its
 *   consumer's webhook receives `order.expired` once.
 *
 * The PostgreSQL parts need PETSTORE_TEST_POSTGRES_URL: `make postgres-test` starts one.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type KeySpec, type Running, startServer, tokenOf, writeKeysFile } from '../test/harness.ts';
import { freshDatabase, type TestDatabase } from '../test/postgres.ts';
import { newSecret, type Receiver, startReceiver } from '../test/webhook-receiver.ts';

const PG_SERVER = process.env.PETSTORE_TEST_POSTGRES_URL ?? '';
const PETS = 20;
const BUYERS = 200;
const CONSUMERS = Array.from({ length: 10 }, (_, i) => `buyer${i}`);
const UNLIMITED = { perMinute: 1e9, perDay: 1e9 };

const stops: (() => unknown)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

async function start(args: string[]): Promise<Running> {
  const server = await startServer({ args });
  stops.push(() => server.stop());
  return server;
}

const auth = (name: string) => ({ Authorization: `Bearer ${tokenOf(name)}` });

async function addPets(server: Running, n: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    const res = await fetch(`${server.url}/v1/pets`, {
      method: 'POST',
      headers: { ...auth('seller'), 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: `pup ${i}`, categoryId: 1 }),
    });
    expect(res.status).toBe(201);
    ids.push(((await res.json()) as { id: number }).id);
  }
  return ids;
}

/** One buyer's order, retried with its key while the store answers 503 (its bound under contention). */
async function buy(server: Running, consumer: string, petId: number, key: string): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(`${server.url}/v1/store/orders`, {
      method: 'POST',
      headers: { ...auth(consumer), 'Content-Type': 'application/json', 'Idempotency-Key': key },
      body: JSON.stringify({ petId }),
    });
    const body = (await res.json()) as { code?: string };
    if (res.status !== 503 || attempt === 20) {
      if (res.status === 409) expect(body.code).toBe('pet_unavailable');
      return res.status;
    }
    await Bun.sleep(50);
  }
}

/** 200 concurrent buyers spread over `servers`, 10 per pet; then what the store holds. */
async function soldOnce(servers: Running[]): Promise<void> {
  const pets = await addPets(servers[0] as Running, PETS);
  const statuses = await Promise.all(
    Array.from({ length: BUYERS }, (_, i) =>
      buy(
        servers[i % servers.length] as Running,
        CONSUMERS[i % CONSUMERS.length] as string,
        pets[i % PETS] as number,
        `buy-${i}`,
      ),
    ),
  );
  const count = (s: number) => statuses.filter((x) => x === s).length;
  expect({ created: count(201), unavailable: count(409), other: BUYERS - count(201) - count(409) }).toEqual({
    created: PETS,
    unavailable: BUYERS - PETS,
    other: 0,
  });
  // Every pet in exactly one placed order, across the consumers' own listings.
  const held: number[] = [];
  for (const consumer of CONSUMERS) {
    const res = await fetch(`${servers[0]?.url}/v1/store/orders?limit=100&status=placed`, { headers: auth(consumer) });
    held.push(...((await res.json()) as { petId: number }[]).map((o) => o.petId));
  }
  expect(held.sort((a, b) => a - b)).toEqual([...pets].sort((a, b) => a - b));
  const page = await fetch(`${servers[0]?.url}/v1/pets?limit=100`, { headers: auth('seller') });
  expect(new Set(((await page.json()) as { status: string }[]).map((p) => p.status))).toEqual(new Set(['pending']));
}

const keys = (extra: KeySpec[] = []) =>
  writeKeysFile([
    { name: 'seller', plan: 'enterprise', limits: UNLIMITED },
    ...CONSUMERS.map((name) => ({ name, plan: 'enterprise', limits: UNLIMITED })),
    ...extra,
  ]);

describe('sold once', () => {
  test('one instance on SQLite: 200 concurrent buyers of 20 pets, exactly 20 orders placed', async () => {
    const data = join(mkdtempSync(join(tmpdir(), 'petstore-orders-')), 'pets.db');
    await soldOnce([await start(['--keys', keys(), '--data', data])]);
  }, 60_000);

  test.skipIf(!PG_SERVER)(
    'four instances on one PostgreSQL: exactly 20 orders placed, whichever instance',
    async () => {
      const db: TestDatabase = await freshDatabase(PG_SERVER, `petstore_orders_${process.pid}`);
      stops.push(() => db.drop());
      const file = keys();
      const servers = await Promise.all([1, 2, 3, 4].map(() => start(['--keys', file, '--data', db.url])));
      await soldOnce(servers);
    },
    90_000,
  );
});

describe('a hold that ends', () => {
  test.skipIf(!PG_SERVER)(
    'with --order-hold 2s on two instances: expired on both, the pet orderable again, one order.expired',
    async () => {
      const db: TestDatabase = await freshDatabase(PG_SERVER, `petstore_orders_hold_${process.pid}`);
      stops.push(() => db.drop());
      const secret = newSecret();
      const hooks: Receiver = await startReceiver(secret);
      stops.push(() => hooks.close());
      const file = keys([{ name: 'acme', plan: 'enterprise', limits: UNLIMITED, webhook: { url: hooks.url, secret } }]);
      const args = ['--keys', file, '--data', db.url, '--order-hold', '2s'];
      const [a, b] = await Promise.all([start(args), start(args)]);
      const [petId] = await addPets(a as Running, 1);
      const placed = await fetch(`${a?.url}/v1/store/orders`, {
        method: 'POST',
        headers: { ...auth('acme'), 'Content-Type': 'application/json' },
        body: JSON.stringify({ petId }),
      });
      expect(placed.status).toBe(201);
      const { id } = (await placed.json()) as { id: string };
      await Bun.sleep(2_500);
      for (const server of [a, b] as Running[]) {
        const res = await fetch(`${server.url}/v1/store/orders/${id}`, { headers: auth('acme') });
        expect(((await res.json()) as { status: string }).status).toBe('expired');
      }
      expect(await buy(b as Running, 'buyer0', petId as number, 'again')).toBe(201);
      const [event] = await hooks.waitFor(1, 15_000);
      const order = event?.body?.data.order as { id: string } | undefined;
      expect([event?.body?.type, order?.id]).toEqual(['order.expired', id]);
      // Both instances sweep every second: still one event a few sweeps later.
      await Bun.sleep(3_000);
      expect(hooks.delivered().map((d) => d.body?.type)).toEqual(['order.expired']);
    },
    60_000,
  );
});
