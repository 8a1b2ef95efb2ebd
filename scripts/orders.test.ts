/**
 * Orders against the built binary (PETSTORE_CMD, default dist/petstore):
 * - sold once: 20 available pets and 200 concurrent buyers (10 consumers, each request with its
 *   own Idempotency-Key, a 503 retried with the same key): exactly 20 `201` and 180 `409
 *   pet_unavailable`, every pet in one placed order and pending; on one instance on SQLite, and
 *   over 4 instances on one PostgreSQL; and there with one instance `kill -9`'d mid-run and
 *   restarted, the buyers whose request failed retrying with the same key on a live instance:
 *   no pet in two open orders, every 201 a buyer received in the store, 20 orders in all;
 * - a hold that ends: with `--order-hold 2s` on two instances on PostgreSQL, an order not
 *   completed within 2 s reads `expired` on both, its pet can be ordered again, and its
 *   consumer's webhook receives `order.expired` once.
 *
 * - isolation by identity: a consumer deleted and made again under the same name (by editing the
 *   keys file, by `petstore keys`, by the admin API) gets 404 on the old one's order, never lists
 *   it, and its Idempotency-Key does not replay the old one's answer; orders stored under a
 *   consumer's name before consumers had ids stay its own; on SQLite and on PostgreSQL.
 *
 * The PostgreSQL parts need PETSTORE_TEST_POSTGRES_URL: `make postgres-test` starts one.
 */

import { Database } from 'bun:sqlite';
import { afterEach, describe, expect, test } from 'bun:test';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  adminKeysFile,
  adminUrl,
  callWithKey,
  type KeySpec,
  type Running,
  runCommand,
  spawnServer,
  tokenOf,
  writeKeysFile,
} from '../test/harness.ts';
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
  const server = await spawnServer({ args });
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

/** What a buyer was last answered: the status, and for a 201 the order. */
interface Bought {
  status: number;
  order?: { id: string; petId: number; status: string };
  /** Requests of it that got no answer (the instance killed, or not listening yet). */
  unanswered: number;
}

/**
 * One buyer's order against a fleet whose members come and go (`live()`): a request that gets
 * no answer (the instance was killed: reset, refused) or a 503 is sent again with the same
 * Idempotency-Key to the next live instance, until an answer other than those, for up to 30 s.
 */
async function buyFromFleet(
  live: () => Running[],
  first: number,
  consumer: string,
  petId: number,
  key: string,
): Promise<Bought> {
  const end = Date.now() + 30_000;
  let unanswered = 0;
  for (let attempt = first; ; attempt++) {
    const servers = live();
    const server = servers[attempt % servers.length] as Running;
    const res = await fetch(`${server.url}/v1/store/orders`, {
      method: 'POST',
      headers: { ...auth(consumer), 'Content-Type': 'application/json', 'Idempotency-Key': key },
      body: JSON.stringify({ petId }),
      signal: AbortSignal.timeout(10_000),
    }).catch(() => undefined);
    if (!res) unanswered++;
    const body = res ? ((await res.json().catch(() => ({}))) as Record<string, unknown>) : {};
    if (res && res.status !== 503) {
      if (res.status === 409) expect(body.code).toBe('pet_unavailable');
      return { status: res.status, ...(res.status === 201 ? { order: body as never } : {}), unanswered };
    }
    if (Date.now() > end) return { status: res?.status ?? 0, unanswered };
    await Bun.sleep(20);
  }
}

describe('sold once through a kill -9', () => {
  test.skipIf(!PG_SERVER)(
    'four instances on one PostgreSQL, one killed mid-run and restarted: no pet in two open orders, every 201 in the store',
    async () => {
      const db: TestDatabase = await freshDatabase(PG_SERVER, `petstore_orders_kill_${process.pid}`);
      stops.push(() => db.drop());
      const file = keys();
      const args = ['--keys', file, '--data', db.url];
      const fleet = await Promise.all([1, 2, 3, 4].map(() => start(args)));
      const pets = await addPets(fleet[0] as Running, PETS);
      const victim = fleet[3] as Running;
      // The buyers arrive over about a second, a pet's ten one after another, so pets are still
      // being sold when the kill lands (those of the first 400 ms are sold by then).
      const buying = Promise.all(
        Array.from({ length: BUYERS }, async (_, i) => {
          await Bun.sleep(i * 5);
          return buyFromFleet(
            () => fleet,
            i,
            CONSUMERS[i % CONSUMERS.length] as string,
            pets[Math.floor(i / (BUYERS / PETS))] as number,
            `kill-${i}`,
          );
        }),
      );
      await Bun.sleep(400);
      expect(await victim.stop('SIGKILL')).toBeNull();
      // As behind a balancer: the dead instance's address is tried until its successor listens there.
      fleet[3] = await start(args);
      const bought: Bought[] = await buying;
      const count = (s: number) => bought.filter((b) => b.status === s).length;
      expect({ created: count(201), unavailable: count(409), other: BUYERS - count(201) - count(409) }).toEqual({
        created: PETS,
        unavailable: BUYERS - PETS,
        other: 0,
      });
      // What the store holds, read from the database itself.
      const postgres = (await import('postgres')).default;
      const sql = postgres(db.url, { onnotice: () => {} });
      try {
        const rows = await sql`SELECT id, pet_id, status FROM orders ORDER BY pet_id`;
        expect(rows.length).toBe(PETS);
        const twice = await sql`SELECT pet_id FROM orders WHERE status = 'placed' GROUP BY pet_id HAVING count(*) > 1`;
        expect(twice.length).toBe(0);
        const stored = new Map(rows.map((r) => [String(r.id), { petId: Number(r.pet_id), status: String(r.status) }]));
        for (const { order } of bought.filter((b) => b.status === 201)) {
          expect(stored.get(String(order?.id))).toEqual({ petId: Number(order?.petId), status: 'placed' });
        }
        expect(new Set(rows.map((r) => Number(r.pet_id)))).toEqual(new Set(pets));
        const statuses = await sql`SELECT DISTINCT status FROM pets`;
        expect(statuses.map((r) => String(r.status))).toEqual(['pending']);
      } finally {
        await sql.end();
      }
      // The kill landed mid-run: some buyers' requests went unanswered and were sent again.
      const unanswered = bought.filter((b) => b.unanswered > 0).length;
      expect(unanswered).toBeGreaterThan(0);
      console.log(
        `sold once through kill -9: ${count(201)} placed, ${count(409)} pet_unavailable; ` +
          `${unanswered} buyers retried after a request without answer`,
      );
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

/** `token`'s call of an order operation on `server`: status and body. */
async function orders(server: Running, token: string, path = '', method = 'GET', body?: unknown, key?: string) {
  const res = await fetch(`${server.url}/v1/store/orders${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...(key === undefined ? {} : { 'Idempotency-Key': key }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Waits until `token` is admitted by `server` (a keys change is in force within a second). */
async function admitted(server: Running, token: string): Promise<void> {
  for (const end = Date.now() + 5_000; Date.now() < end; await Bun.sleep(50)) {
    if ((await orders(server, token)).status === 200) return;
  }
  throw new Error(`the key was not admitted within 5 s:\n${server.lines.slice(-5).join('\n')}`);
}

/** Waits until `token` is refused by `server` (401): its consumer is gone. */
async function refused(server: Running, token: string): Promise<void> {
  for (const end = Date.now() + 5_000; Date.now() < end; await Bun.sleep(50)) {
    if ((await orders(server, token)).status === 401) return;
  }
  throw new Error('the key was still admitted after 5 s');
}

const sha256 = (token: string) => createHash('sha256').update(token).digest('hex');

/** The keys file at `path` with `edit` applied, written as an operator's editor would. */
function editKeys(path: string, edit: (doc: { consumers?: Record<string, unknown>[] }) => void): void {
  const doc = JSON.parse(readFileSync(path, 'utf8')) as { consumers?: Record<string, unknown>[] };
  edit(doc);
  writeFileSync(path, JSON.stringify(doc, null, 2));
}

/**
 * A's order, then A deleted and made again under its name with a new key: the new one sees
 * nothing of A's (404 on get, complete and cancel, an empty list) and its retry of A's
 * Idempotency-Key is not answered with A's order; `remake` deletes and makes the consumer again
 * and resolves to the new token. Consumer `other` gets 404 on A's order and never lists it.
 */
async function remadeSeesNothing(
  server: Running,
  token: string,
  petId: number,
  other: string,
  remake: () => Promise<string>,
): Promise<void> {
  const placed = await orders(server, token, '', 'POST', { petId }, 'same-key');
  expect(placed.status).toBe(201);
  const id = String(placed.body.id);
  const notFound = { code: 'not_found', message: `You have no order with id ${id}.`, status: 404 };
  const operations = [
    [`/${id}`, 'GET'],
    [`/${id}/complete`, 'POST'],
    [`/${id}/cancel`, 'POST'],
  ] as const;
  for (const [path, method] of operations) {
    expect(await orders(server, other, path, method)).toEqual({ status: 404, body: notFound });
  }
  expect((await orders(server, other, '?limit=100')).body).not.toContainEqual(expect.objectContaining({ id }));
  const fresh = await remake();
  await admitted(server, fresh);
  for (const [path, method] of operations) {
    expect(await orders(server, fresh, path, method)).toEqual({ status: 404, body: notFound });
  }
  expect(await orders(server, fresh, '?limit=100')).toEqual({ status: 200, body: [] as never });
  // The same key and body again: never A's 201. A's order still holds the pet (409), unless
  // deleting A ended its orders (the admin API), and then it is a new order of the new consumer.
  const retried = await orders(server, fresh, '', 'POST', { petId }, 'same-key');
  expect(retried.status === 409 ? retried.body.code : retried.body.id).not.toBe(id);
  expect([201, 409]).toContain(retried.status);
  if (retried.status === 409) expect(retried.body.code).toBe('pet_unavailable');
}

/** Where the isolation tests keep their data: a SQLite file, or a fresh PostgreSQL database. */
const BACKENDS: [string, () => Promise<string>][] = [
  ['SQLite', async () => join(mkdtempSync(join(tmpdir(), 'petstore-orders-')), 'pets.db')],
  [
    'PostgreSQL',
    async () => {
      const db = await freshDatabase(PG_SERVER, `petstore_orders_who_${process.pid}`);
      stops.push(() => db.drop());
      return db.url;
    },
  ],
];

describe("a consumer made again under a deleted one's name inherits nothing", () => {
  for (const [backend, dataOf] of BACKENDS) {
    test.skipIf(backend === 'PostgreSQL' && !PG_SERVER)(
      `${backend}: by editing the keys file, by petstore keys, by the admin API`,
      async () => {
        const { file, admin } = await adminKeysFile('seller', 's1');
        const seller = tokenOf('seller-e2e');
        // The seller is a consumer of its own with a known token (enterprise: no limit in the way).
        editKeys(file, (doc) => {
          doc.consumers = (doc.consumers ?? []).filter((c) => c.name !== 'seller');
          doc.consumers.push({
            name: 'seller',
            plan: 'enterprise',
            limits: UNLIMITED,
            keys: [{ sha256: sha256(seller) }],
          });
        });
        const server = await start(['--keys', file, '--data', await dataOf(), '--admin-port', '0']);
        const base = adminUrl(server);
        const pets: number[] = [];
        for (let i = 0; i < 3; i++) {
          const res = await callWithKey(`${server.url}/v1/pets`, seller, 'POST', { name: `pup ${i}`, categoryId: 1 });
          expect(res.status).toBe(201);
          pets.push(Number(res.json?.id));
        }
        const tokens = (name: string) => [
          `psk_e2e-${name}-${randomBytes(12).toString('hex')}`,
          `psk_e2e-${name}-${randomBytes(12).toString('hex')}`,
        ];

        // 1. The keys file edited by hand: the consumer removed, then written again with a new key.
        const [first, second] = tokens('filed') as [string, string];
        const entry = (token: string) => ({ name: 'filed', plan: 'pro', keys: [{ sha256: sha256(token) }] });
        editKeys(file, (doc) => doc.consumers?.push(entry(first)));
        await admitted(server, first);
        await remadeSeesNothing(server, first, pets[0] as number, seller, async () => {
          editKeys(file, (doc) => {
            doc.consumers = doc.consumers?.filter((c) => c.name !== 'filed');
          });
          await refused(server, first);
          editKeys(file, (doc) => doc.consumers?.push(entry(second)));
          return second;
        });

        // 2. petstore keys: made by keys add, removed from the file, made again by keys add.
        const add = async () => {
          const made = await runCommand(['keys', 'add', '--keys', file, '--consumer', 'cli', '--plan', 'pro']);
          expect(made.code).toBe(0);
          return made.stdout.trim();
        };
        const cli = await add();
        await admitted(server, cli);
        await remadeSeesNothing(server, cli, pets[1] as number, seller, async () => {
          editKeys(file, (doc) => {
            doc.consumers = doc.consumers?.filter((c) => c.name !== 'cli');
          });
          await refused(server, cli);
          return add();
        });

        // 3. The admin API: made, deleted (its open orders end with it), made again.
        const make = async () => {
          expect((await callWithKey(`${base}/consumers`, admin, 'POST', { name: 'api', plan: 'pro' })).status).toBe(
            201,
          );
          return String((await callWithKey(`${base}/consumers/api/keys`, admin, 'POST', { id: 'k1' })).json?.token);
        };
        const api = await make();
        await admitted(server, api);
        await remadeSeesNothing(server, api, pets[2] as number, seller, async () => {
          expect((await callWithKey(`${base}/consumers/api`, admin, 'DELETE')).status).toBe(204);
          return make();
        });
      },
      60_000,
    );

    test.skipIf(backend === 'PostgreSQL' && !PG_SERVER)(
      `${backend}: an order stored under a consumer's name before consumers had ids stays its own`,
      async () => {
        const data = await dataOf();
        const file = keys();
        const first = await start(['--keys', file, '--data', data]);
        const [petId] = await addPets(first, 1);
        expect(await first.stop()).toBe(0);
        // As the release before consumer ids stored it: owned by `key:<name>`.
        const id = `ord_${randomBytes(16).toString('hex')}`;
        const row = [id, 'key:buyer0', petId as number, 'completed', Date.now(), Date.now()] as const;
        if (backend === 'SQLite') {
          const db = new Database(data);
          db.prepare(
            'INSERT INTO orders (id, owner, pet_id, status, placed_at, hold_until) VALUES (?, ?, ?, ?, ?, ?)',
          ).run(...row);
          db.close();
        } else {
          const postgres = (await import('postgres')).default;
          const sql = postgres(data, { onnotice: () => {} });
          await sql`INSERT INTO orders (id, owner, pet_id, status, placed_at, hold_until) VALUES ${sql([row as never])}`;
          await sql.end();
        }
        const server = await start(['--keys', file, '--data', data]);
        const owned = await orders(server, tokenOf('buyer0'), `/${id}`);
        expect([owned.status, owned.body.id, owned.body.status]).toEqual([200, id, 'completed']);
        expect((await orders(server, tokenOf('buyer1'), `/${id}`)).status).toBe(404);
        // buyer0 deleted and made again with another key: the order is not the new one's.
        const fresh = `psk_e2e-buyer0-${randomBytes(12).toString('hex')}`;
        const doc = JSON.parse(readFileSync(file, 'utf8')) as { keys: Record<string, unknown>[] };
        doc.keys = doc.keys.map((k) => (k.name === 'buyer0' ? { ...k, sha256: sha256(fresh) } : k));
        writeFileSync(file, JSON.stringify(doc));
        await admitted(server, fresh);
        expect((await orders(server, fresh, `/${id}`)).status).toBe(404);
        expect((await orders(server, fresh, '?limit=100')).body).toEqual([] as never);
      },
      60_000,
    );
  }
});
