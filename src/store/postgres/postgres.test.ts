import { afterAll, describe, expect, test } from 'bun:test';
import postgres from 'postgres';
import { laterMigration, testPostgresUrl, whileLocked } from '../../../test/postgres.ts';
import { tcpProxy } from '../../../test/proxy.ts';
import { describeStore } from '../../../test/store-conformance.ts';
import { createLogger, silentLogger } from '../../log.ts';
import { fingerprintOf } from '../idempotency.ts';
import { MIGRATIONS, SCHEMA_VERSION } from '../sql/migrations.ts';
import {
  OUTCOME_UNKNOWN,
  StoreError,
  StoreOpenError,
  StoreTimeoutError,
  StoreUnavailableError,
  StoreUnreachableError,
} from '../store-error.ts';
import { boundAndTraced } from '../wrappers/bound-and-traced.ts';
import {
  CLOSE_IF_PLACED,
  LISTENER_NAME,
  PET_AND_HOLD,
  PLACE_IF_AVAILABLE,
  PostgresStore,
  RENAME_IF_VERSION,
  UPDATE_IF_VERSION,
} from './postgres.ts';
import { HEARTBEAT_MS, PETS_CHANNEL } from './postgres-changes.ts';
import { postgresError } from './postgres-errors.ts';
import { migratePostgres } from './postgres-migrate.ts';
import { describeData } from './postgres-url.ts';

/**
 * A server the tests may create and drop databases on; `make unit` starts one
 * (scripts/with-postgres.sh).
 */
const SERVER = testPostgresUrl();
const admin = postgres(SERVER, { max: 2, onnotice: () => {} });
afterAll(async () => admin.end({ timeout: 5 }));

/** A fresh database on the test server; returns its URL and a function that drops it. */
async function freshDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const sql = admin;
  const name = `petstore_test_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
  await sql.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(SERVER);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: async () => void (await sql.unsafe(`DROP DATABASE ${name} WITH (FORCE)`)) };
}

describe('PostgresStore', () => {
  describeStore('PostgresStore', async () => {
    const db = await freshDatabase();
    return { store: await PostgresStore.open({ url: db.url, log: silentLogger }), dispose: db.drop };
  });

  test('records the migrations, keeps pets across a reopen, never reuses an id', async () => {
    const db = await freshDatabase();
    const lines: string[] = [];
    const first = await PostgresStore.open({ url: db.url, log: createLogger({ write: (l) => lines.push(l) }) });
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      msg: 'store opened',
      backend: 'postgres',
      synchronousCommit: 'on',
      schemaVersion: SCHEMA_VERSION,
      migrated: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    });
    for (const name of ['a', 'b', 'c']) await first.create({ name, categoryId: 9007199254740991, status: 'sold' });
    await first.close();
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    expect(await sql`SELECT version, name FROM schema_migrations ORDER BY version`).toEqual([
      { version: 1, name: 'pets' },
      { version: 2, name: 'idempotency_keys' },
      { version: 3, name: 'keys' },
      { version: 4, name: 'webhook_outbox' },
      { version: 5, name: 'key_consumer_terms' },
      { version: 6, name: 'pets_notify' },
      { version: 7, name: 'webhook_outbox_trace' },
      { version: 8, name: 'pet_versions' },
      { version: 9, name: 'orders' },
      { version: 10, name: 'consumer_ids' },
    ] as never);
    await sql`DELETE FROM pets WHERE id = 3`;
    await sql.end();
    const second = await PostgresStore.open({ url: db.url, log: silentLogger });
    expect(await second.get(2)).toEqual({ id: 2, name: 'b', categoryId: 9007199254740991, status: 'sold', version: 2 });
    expect((await second.create({ name: 'd', categoryId: 1, status: 'available' })).id).toBe(4);
    await second.close();
    await db.drop();
  });

  test('two instances starting together share one schema and see each other’s pets', async () => {
    const db = await freshDatabase();
    const [a, b] = await Promise.all([
      PostgresStore.open({ url: db.url, log: silentLogger }),
      PostgresStore.open({ url: db.url, log: silentLogger }),
    ]);
    const made = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? a : b).create({ name: `n${i}`, categoryId: 1, status: 'available' }),
      ),
    );
    expect(new Set(made.map((p) => p.id)).size).toBe(40);
    expect(await a.list({ limit: 100 })).toEqual(await b.list({ limit: 100 }));
    expect(await b.get((made[1] as { id: number }).id)).toEqual(made[1] as never);
    await Promise.all([a.close(), b.close()]);
    await db.drop();
  });

  test('two instances racing with one Idempotency-Key store one pet', async () => {
    const db = await freshDatabase();
    const [a, b] = await Promise.all([
      PostgresStore.open({ url: db.url, log: silentLogger }),
      PostgresStore.open({ url: db.url, log: silentLogger }),
    ]);
    const rex = { name: 'Rex', categoryId: 1, status: 'available' } as const;
    const once = { owner: 'key:acme', key: 'retry-1', fingerprint: fingerprintOf(rex), now: Date.now() };
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).createOnce(rex, once)));
    expect(results.filter((r) => r.outcome === 'created')).toHaveLength(1);
    expect(results.filter((r) => r.outcome === 'replayed')).toHaveLength(19);
    expect(await a.list({ limit: 10 })).toEqual([{ id: 1, ...rex }]);
    expect(await b.createOnce({ ...rex, name: 'Max' }, { ...once, fingerprint: 'other' })).toEqual({
      outcome: 'conflict',
    });
    await Promise.all([a.close(), b.close()]);
    await db.drop();
  });

  test('refuses a database written by a newer petstore, as a StoreOpenError (exit 2)', async () => {
    const db = await freshDatabase();
    await (await PostgresStore.open({ url: db.url, log: silentLogger })).close();
    const sql = postgres(db.url, { max: 1 });
    await sql`INSERT INTO schema_migrations (version, name, applied_at) VALUES (${SCHEMA_VERSION + 1}, 'future', '2030-01-01T00:00:00Z')`;
    await sql.end();
    const err = await PostgresStore.open({ url: db.url, log: silentLogger }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreOpenError);
    expect((err as Error).message).toContain(
      `the database has schema version ${SCHEMA_VERSION + 1}, which a petstore of schema version ${SCHEMA_VERSION + 1} or later serves`,
    );
    await db.drop();
  });

  test('a later migration altering pets behind a long transaction: reads never queue past the lock timeout; it retries, builds its index concurrently, and this build still serves', async () => {
    const db = await freshDatabase();
    const store = await PostgresStore.open({ url: db.url, log: silentLogger });
    const pet = await store.create({ name: 'Rex', categoryId: 1, status: 'available' });
    // A reader that keeps its transaction (and its ACCESS SHARE lock on pets) open.
    const blocker = postgres(db.url, { max: 1, onnotice: () => {} });
    const held = blocker.begin(async (tx) => {
      await tx`SELECT id FROM pets LIMIT 1`;
      await Bun.sleep(2_000);
    });
    await Bun.sleep(100);
    const later = laterMigration();
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    const retries: number[] = [];
    const migrating = migratePostgres(sql, 'test', {
      migrations: [...MIGRATIONS, later],
      lockTimeoutMs: 200,
      retrying: (_m, attempt) => retries.push(attempt),
    });
    // Reads meanwhile: each waits at most about the lock timeout behind the ALTER's lock request.
    const waits: number[] = [];
    for (let i = 0; i < 15; i++) {
      const started = performance.now();
      expect(await store.get(pet.id)).toEqual(pet);
      waits.push(performance.now() - started);
      await Bun.sleep(100);
    }
    await held;
    expect(await migrating).toEqual({ migrated: [SCHEMA_VERSION + 1], version: SCHEMA_VERSION + 1 });
    expect(retries.length).toBeGreaterThan(0);
    expect(Math.max(...waits)).toBeLessThan(600);
    const [index] =
      await sql`SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'pets_later_note'`;
    expect(index?.valid).toBe(true);
    const [row] = await sql`SELECT readable_from FROM schema_migrations WHERE version = ${SCHEMA_VERSION + 1}`;
    expect(Number(row?.readable_from)).toBe(SCHEMA_VERSION);
    await Promise.all([sql.end(), blocker.end()]);
    await store.close();
    // This build serves the newer schema: the later migration left it readable from this version
    // on.
    const again = await PostgresStore.open({ url: db.url, log: silentLogger });
    expect(await again.get(pet.id)).toEqual(pet);
    await again.close();
    await db.drop();
  }, 30_000);

  test('upgrades a version 7 database without rewriting pets: its pets get version 1, every later write a higher one; its keys keep their pets', async () => {
    const db = await freshDatabase();
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    await migratePostgres(sql, 'test', { migrations: MIGRATIONS.filter((m) => m.version <= 7) });
    await sql`INSERT INTO pets (name, category_id, status) VALUES ('kept', 4, 'pending'), ('other', 5, 'available')`;
    const now = Date.UTC(2026, 10, 22);
    await sql`INSERT INTO idempotency_keys VALUES ('key:acme', 'k', 'f', 1, ${now + 1_000})`;
    const file = async () => (await sql`SELECT pg_relation_filenode('pets') AS f`)[0]?.f;
    const before = await file();
    await migratePostgres(sql, 'test');
    // A volatile default (nextval) would have rewritten the table under ACCESS EXCLUSIVE.
    expect(await file()).toBe(before);
    await sql.end();
    const store = await PostgresStore.open({ url: db.url, log: silentLogger });
    const kept = { id: 1, name: 'kept', categoryId: 4, status: 'pending' as const, version: 1 };
    expect(await store.get(1)).toEqual(kept);
    // Its key kept the pet: a retry answers it as created, after a change and after a removal.
    const retry = { owner: 'key:acme', key: 'k', fingerprint: 'f', now };
    const pet = { name: 'kept', categoryId: 4, status: 'pending' } as const;
    await store.update(1, { name: 'renamed' });
    expect(await store.createOnce(pet, retry)).toEqual({ outcome: 'replayed', pet: kept });
    await store.remove(1);
    expect(await store.createOnce(pet, retry)).toEqual({ outcome: 'replayed', pet: kept });
    expect((await store.list({ limit: 10 })).map((p) => p.id)).toEqual([2]);
    const changed = await store.update(2, { name: 'renamed' });
    expect(changed.outcome).toBe('updated');
    expect((changed as { pet: { version: number } }).pet.version).toBeGreaterThan(1);
    expect((await store.create({ name: 'new', categoryId: 1, status: 'available' })).version).toBeGreaterThan(1);
    await store.close();
    await db.drop();
  });

  test('a dropped connection is StoreUnavailableError, and the next request reconnects', async () => {
    const db = await freshDatabase();
    const store = await PostgresStore.open({ url: db.url, log: silentLogger });
    await store.create({ name: 'before', categoryId: 1, status: 'available' });
    const name = new URL(db.url).pathname.slice(1);
    await admin`
      SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${name} AND pid <> pg_backend_pid()`;
    // The request in flight when the socket closes fails as unavailable, unless the pool saw
    // the close first and reconnected.
    const first = await store.get(1).catch((e: unknown) => e);
    if (first instanceof Error) expect(first).toBeInstanceOf(StoreUnavailableError);
    else expect(first).toEqual({ id: 1, name: 'before', categoryId: 1, status: 'available', version: 1 });
    expect(await store.get(1)).toEqual({ id: 1, name: 'before', categoryId: 1, status: 'available', version: 1 });
    await store.close();
    await db.drop();
  });
  test('a connection cut in the middle of a transaction fails it as unavailable, and nothing escapes to crash the process', async () => {
    const db = await freshDatabase();
    const direct = new URL(db.url);
    const proxy = await tcpProxy({ host: direct.hostname, port: Number(direct.port) }, 'replies');
    const via = new URL(db.url);
    via.port = String(proxy.port);
    const store = await PostgresStore.open({ url: via.toString(), log: silentLogger });
    try {
      // The trim's transaction waits for a lock held elsewhere, its statement on the connection,
      // when the network goes.
      const err = await whileLocked(db.url, 'webhook_outbox', async () => {
        const trimmed = store.outbox.trim(10, Date.now()).catch((e: unknown) => e);
        const name = direct.pathname.slice(1);
        for (let waiting = 0; waiting === 0; await Bun.sleep(10)) {
          const [row] = await admin`
            SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = ${name} AND application_name = 'petstore' AND wait_event_type = 'Lock'`;
          waiting = Number(row?.n);
        }
        proxy.cut();
        return trimmed;
      });
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect((err as Error).message).toBe(
        `trim outbox: write CONNECTION_CLOSED 127.0.0.1:${proxy.port}; ${OUTCOME_UNKNOWN}`,
      );
      // The pool connects anew: the next transaction commits.
      expect(await store.outbox.trim(10, Date.now())).toEqual([]);
    } finally {
      await store.close();
      proxy.close();
      await db.drop();
    }
  }, 20_000);
});

describe('PostgresStore writes in one statement', () => {
  const HOUR = 3_600_000;
  /** A client of its own with the store's int8 parsing. */
  const client = (url: string) =>
    postgres(url, {
      max: 1,
      onnotice: () => {},
      types: { bigint: { to: 20, from: [20], serialize: (n: number) => String(n), parse: (s: string) => Number(s) } },
    });

  test('PET_AND_HOLD, PLACE_IF_AVAILABLE, UPDATE_IF_VERSION and CLOSE_IF_PLACED: each writes only when its condition holds', async () => {
    const db = await freshDatabase();
    const store = await PostgresStore.open({ url: db.url, log: silentLogger });
    const sql = client(db.url);
    try {
      await store.create({ name: 'Rex', categoryId: 1, status: 'available' });
      const pet = async () => (await sql`SELECT name, status, version FROM pets WHERE id = 1`)[0];
      expect(await sql.unsafe(PET_AND_HOLD, [1])).toEqual([
        { id: 1, name: 'Rex', category_id: 1, status: 'available', version: 1, hold_due: null },
      ] as never);
      expect(await sql.unsafe(PET_AND_HOLD, [2])).toEqual([] as never);

      const [order] = await sql.unsafe(PLACE_IF_AVAILABLE, [1, 'ord_a', 'key:acme', HOUR]);
      expect(order).toEqual({
        id: 'ord_a',
        pet_id: 1,
        status: 'placed',
        placed_at: order?.placed_at,
        hold_until: (order?.placed_at as number) + HOUR,
      } as never);
      expect(Math.abs((order?.placed_at as number) - Date.now())).toBeLessThan(5_000);
      expect(await pet()).toEqual({ name: 'Rex', status: 'pending', version: 2 });
      // Pending, or missing: nothing placed, nothing moved.
      expect(await sql.unsafe(PLACE_IF_AVAILABLE, [1, 'ord_b', 'key:other', HOUR])).toEqual([] as never);
      expect(await sql.unsafe(PLACE_IF_AVAILABLE, [2, 'ord_c', 'key:other', HOUR])).toEqual([] as never);
      expect(await sql`SELECT id, owner, idempotency_key FROM orders`).toEqual([
        { id: 'ord_a', owner: 'key:acme', idempotency_key: null },
      ] as never);
      expect(await sql.unsafe(PET_AND_HOLD, [1])).toEqual([
        { id: 1, name: 'Rex', category_id: 1, status: 'pending', version: 2, hold_due: false },
      ] as never);

      // A version that is not the pet's changes nothing; the pet's own gives a new one.
      expect(await sql.unsafe(UPDATE_IF_VERSION, ['Max', 2, 'pending', 1, 1])).toEqual([] as never);
      expect(await pet()).toEqual({ name: 'Rex', status: 'pending', version: 2 });
      expect(await sql.unsafe(UPDATE_IF_VERSION, ['Max', 2, 'pending', 1, 2])).toEqual([
        { id: 1, name: 'Max', category_id: 2, status: 'pending', version: 3 },
      ] as never);

      // Another owner's order, or one whose hold ran out: nothing closed, nothing moved.
      expect(await sql.unsafe(CLOSE_IF_PLACED, ['completed', 'ord_a', 'key:other', 'sold'])).toEqual([] as never);
      await sql`UPDATE orders SET hold_until = placed_at WHERE id = 'ord_a'`;
      expect((await sql.unsafe(PET_AND_HOLD, [1]))[0]?.hold_due).toBe(true);
      expect(await sql.unsafe(CLOSE_IF_PLACED, ['completed', 'ord_a', 'key:acme', 'sold'])).toEqual([] as never);
      expect(await pet()).toEqual({ name: 'Max', status: 'pending', version: 3 });
      await sql`UPDATE orders SET hold_until = placed_at + ${HOUR} WHERE id = 'ord_a'`;

      const placedAt = order?.placed_at as number;
      const closed = { id: 'ord_a', pet_id: 1, status: 'completed', placed_at: placedAt, hold_until: placedAt + HOUR };
      expect(await sql.unsafe(CLOSE_IF_PLACED, ['completed', 'ord_a', 'key:acme', 'sold'])).toEqual([closed] as never);
      expect(await pet()).toEqual({ name: 'Max', status: 'sold', version: 4 });
      expect(await sql.unsafe(CLOSE_IF_PLACED, ['cancelled', 'ord_a', 'key:acme', 'available'])).toEqual([] as never);
      expect(await pet()).toEqual({ name: 'Max', status: 'sold', version: 4 });
    } finally {
      await sql.end();
      await store.close();
      await db.drop();
    }
  });

  test('RENAME_IF_VERSION: a name or category changed in one statement only with the version asked, a change to make and no hold run out', async () => {
    const db = await freshDatabase();
    const store = await PostgresStore.open({ url: db.url, log: silentLogger });
    const sql = client(db.url);
    try {
      await store.create({ name: 'Rex', categoryId: 1, status: 'available' });
      const pet = async () => (await sql`SELECT name, category_id, status, version FROM pets WHERE id = 1`)[0];
      // Another version, no such pet, or nothing to change: nothing written.
      expect(await sql.unsafe(RENAME_IF_VERSION, ['Max', null, 1, 2])).toEqual([] as never);
      expect(await sql.unsafe(RENAME_IF_VERSION, ['Max', null, 2, null])).toEqual([] as never);
      expect(await sql.unsafe(RENAME_IF_VERSION, ['Rex', 1, 1, 1])).toEqual([] as never);
      expect(await pet()).toEqual({ name: 'Rex', category_id: 1, status: 'available', version: 1 });
      expect(await sql.unsafe(RENAME_IF_VERSION, ['Max', null, 1, 1])).toEqual([
        { id: 1, name: 'Max', category_id: 1, status: 'available', version: 2 },
      ] as never);
      expect(await sql.unsafe(RENAME_IF_VERSION, [null, 3, 1, null])).toEqual([
        { id: 1, name: 'Max', category_id: 3, status: 'available', version: 3 },
      ] as never);
      // A hold of the pet that ran out is expired first, by the transaction: nothing written here.
      await sql.unsafe(PLACE_IF_AVAILABLE, [1, 'ord_a', 'key:acme', HOUR]);
      expect(await sql.unsafe(RENAME_IF_VERSION, ['Kit', null, 1, 4])).toEqual([
        { id: 1, name: 'Kit', category_id: 3, status: 'pending', version: 5 },
      ] as never);
      await sql`UPDATE orders SET hold_until = placed_at WHERE id = 'ord_a'`;
      expect(await sql.unsafe(RENAME_IF_VERSION, ['Tom', null, 1, 5])).toEqual([] as never);
      // The store's change of that pet: the hold expired (a new version), then If-Match 5 is stale.
      expect(await store.update(1, { name: 'Tom' }, [5])).toMatchObject({ outcome: 'stale', pet: { version: 6 } });
      expect(await store.update(1, { name: 'Tom' }, [6])).toEqual({
        outcome: 'updated',
        pet: { id: 1, name: 'Tom', categoryId: 3, status: 'available', version: 7 },
      });
    } finally {
      await sql.end();
      await store.close();
      await db.drop();
    }
  });

  test('an open order left on an available pet (as a build without orders leaves it): placing expires it if its hold ran out, then places', async () => {
    const db = await freshDatabase();
    const store = await PostgresStore.open({ url: db.url, log: silentLogger });
    const sql = client(db.url);
    try {
      await store.create({ name: 'Rex', categoryId: 1, status: 'available' });
      const first = await store.placeOrder({ owner: 'key:acme', petId: 1, holdMs: HOUR, now: Date.now() });
      if (first.outcome !== 'placed') throw new Error(`expected placed, got ${first.outcome}`);
      await sql`UPDATE pets SET status = 'available' WHERE id = 1`;
      await sql`UPDATE orders SET hold_until = placed_at WHERE id = ${first.order.id}`;
      const second = await store.placeOrder({ owner: 'key:other', petId: 1, holdMs: HOUR, now: Date.now() });
      expect(second.outcome).toBe('placed');
      expect(await sql`SELECT owner, status FROM orders ORDER BY status`).toEqual([
        { owner: 'key:acme', status: 'expired' },
        { owner: 'key:other', status: 'placed' },
      ] as never);
      expect((await store.get(1))?.status).toBe('pending');
    } finally {
      await sql.end();
      await store.close();
      await db.drop();
    }
  });
});

describe('PostgresStore version: every write of the fleet, heard through LISTEN', () => {
  /** Waits up to `ms` for `done`, looking every millisecond; resolves with the ms it took. */
  async function within(ms: number, done: () => boolean): Promise<number> {
    const started = performance.now();
    while (!done()) {
      if (performance.now() - started > ms) throw new Error(`not within ${ms} ms`);
      await Bun.sleep(1);
    }
    return performance.now() - started;
  }

  test('moves on at once for this instance’s write, on notification for another’s or a hand edit', async () => {
    const db = await freshDatabase();
    const [a, b] = await Promise.all([
      PostgresStore.open({ url: db.url, log: silentLogger }),
      PostgresStore.open({ url: db.url, log: silentLogger }),
    ]);
    try {
      const before = [a.changeCount(), b.changeCount()];
      expect(before.map((v) => typeof v)).toEqual(['number', 'number']);
      expect(b.changeCount()).toBe(before[1] as number); // nothing written: it stays
      await a.create({ name: 'Rex', categoryId: 1, status: 'available' });
      const afterOwn = a.changeCount();
      // Counted before the create is acknowledged: pet 1 and the pets that exist have changed,
      // nothing else.
      expect(afterOwn).not.toBe(before[0]);
      expect([
        a.readsUnchangedSince(before[0] as number, { ids: [1] }),
        a.readsUnchangedSince(before[0] as number, { ids: [2] }),
      ]).toEqual([false, true]);
      expect(a.readsUnchangedSince(before[0] as number, { ids: [], members: true })).toBe(false);
      // The other instance hears which pet: its answers of other pets stay.
      await within(1_000, () => b.changeCount() !== before[1]);
      expect([
        b.readsUnchangedSince(before[1] as number, { ids: [1] }),
        b.readsUnchangedSince(before[1] as number, { ids: [2] }),
      ]).toEqual([false, true]);
      const seen = b.changeCount() as number;
      const other = await a.create({ name: 'Kit', categoryId: 1, status: 'available' });
      await a.update(other.id, { name: 'Kat' });
      await within(1_000, () => !b.readsUnchangedSince(seen, { ids: [other.id] }));
      expect(b.readsUnchangedSince(seen, { ids: [1] })).toBe(true);
      const sql = postgres(db.url, { max: 1, onnotice: () => {} });
      await sql`UPDATE pets SET name = 'Max' WHERE id = 1`;
      await sql.end();
      // An operator's edit names no pet: every pet counts as changed.
      await within(
        1_000,
        () =>
          !b.readsUnchangedSince(seen as number, { ids: [2] }) &&
          !a.readsUnchangedSince(afterOwn as number, { ids: [2] }),
      );
      expect(await b.get(1)).toEqual({ id: 1, name: 'Max', categoryId: 1, status: 'available', version: 1 });
      // An INSERT by hand is announced by nobody: the heartbeat's highest id shows it.
      const quiet = b.changeCount();
      const hand = postgres(db.url, { max: 1, onnotice: () => {} });
      await hand`INSERT INTO pets (name, category_id, status) VALUES ('Tom', 2, 'sold')`;
      await hand.end();
      const took = await within(HEARTBEAT_MS + 1_000, () => b.changeCount() !== quiet);
      expect(took).toBeGreaterThan(0);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await db.drop();
    }
  });

  test('an instance announces its changes itself, the trigger only an operator’s; the heartbeat sees a delete', async () => {
    const db = await freshDatabase();
    const a = await PostgresStore.open({ url: db.url, log: silentLogger });
    const heard: string[] = [];
    const listener = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      await listener.listen(PETS_CHANNEL, (payload) => heard.push(payload));
      const made = await a.create({ name: 'Rex', categoryId: 1, status: 'available' });
      // Heard before the next write, which would otherwise share its announcement
      // (ANNOUNCE_GATHER_MS).
      await within(1_000, () => heard.length >= 1);
      await a.update(made.id, { status: 'pending' });
      await within(1_000, () => heard.length >= 2);
      await Bun.sleep(200);
      // One announcement per write, none from the trigger: the fleet's writes never take turns on
      // NOTIFY. Each names its instance, the pet, and whether pets came or went (m) or a status
      // changed (s).
      expect(heard).toHaveLength(2);
      expect(heard.map((payload) => payload.replace(/^[0-9a-f]{8}:/, '<instance>:'))).toEqual([
        `<instance>:m:${made.id}`,
        `<instance>:s:${made.id}`,
      ]);
      const hand = postgres(db.url, { max: 1, onnotice: () => {} });
      await hand`UPDATE pets SET name = 'Max' WHERE id = ${made.id}`;
      await within(1_000, () => heard.length === 3);
      expect(heard[2]).toBe('');
      // A delete by hand without the trigger (as if its announcement were lost): the heartbeat's
      // watermark moves, since every delete by an instance takes a version from the sequence.
      const quiet = a.changeCount();
      await hand`SELECT nextval('pet_versions')`;
      await hand.end();
      expect(await within(HEARTBEAT_MS + 1_000, () => a.changeCount() !== quiet)).toBeGreaterThan(0);
    } finally {
      await listener.end();
      await a.close();
      await db.drop();
    }
  });

  test("a hold's end on a host whose clock lags the database's by 10 s: nothing kept past it", async () => {
    const db = await freshDatabase();
    const store = await PostgresStore.open({ url: db.url, log: silentLogger });
    const realNow = Date.now;
    try {
      const pet = await store.create({ name: 'Rex', categoryId: 1, status: 'available' });
      Date.now = () => realNow() - 10_000;
      const placed = await store.placeOrder({ owner: 'key:acme', petId: pet.id, holdMs: 300, now: Date.now() });
      expect(placed.outcome).toBe('placed');
      expect(typeof store.changeCount()).toBe('number');
      // Past the hold by the database's clock: the next read sweeps, and no answer is kept until
      // then.
      await within(1_500, () => store.changeCount() === undefined);
      // A kept read starts the expiry (as src/pipeline/pipeline.ts does), then its count is known
      // again.
      await within(2_000, () => {
        store.startDueOrderExpiry();
        return store.changeCount() !== undefined;
      });
      expect((await store.get(pet.id))?.status).toBe('available');
    } finally {
      Date.now = realNow;
      await store.close();
      await db.drop();
    }
  });

  test('a terminated listening backend: no change count (every read from the database) until listening again', async () => {
    const db = await freshDatabase();
    const lines: string[] = [];
    const store = await PostgresStore.open({ url: db.url, log: createLogger({ write: (l) => lines.push(l) }) });
    try {
      const before = store.changeCount();
      expect(typeof before).toBe('number');
      const [ended] = await admin`
        SELECT pg_terminate_backend(pid, 5000) AS ok FROM pg_stat_activity
        WHERE datname = ${new URL(db.url).pathname.slice(1)} AND application_name = ${LISTENER_NAME}`;
      expect(ended).toEqual({ ok: true });
      await within(1_000, () => store.changeCount() === undefined);
      await within(2_000, () => store.changeCount() !== undefined);
      expect(store.changeCount()).not.toBe(before);
      expect(lines.map((l) => JSON.parse(l).msg).filter((m: string) => m.includes('listening'))).toEqual([
        'not listening for pet changes; every read goes to the database until listening again',
        'listening for pet changes again; serving memoised answers',
      ]);
    } finally {
      await store.close();
      await db.drop();
    }
  });
});

describe('PostgresStore without a server', () => {
  test('an unreachable server fails the start as unavailable (exit 1, restartable), without the password', async () => {
    const err = await PostgresStore.open({ url: 'postgres://u:secret@127.0.0.1:1/db', log: silentLogger }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(err).not.toBeInstanceOf(StoreOpenError);
    expect((err as Error).message).toStartWith(
      '--data postgres://u:***@127.0.0.1:1/db: cannot reach the PostgreSQL server: ',
    );
    expect((err as Error).message).not.toContain('secret');
  });

  test('postgresError: lost connections and server-side resource errors are unavailable, the rest not', () => {
    const PgError = postgres.PostgresError as unknown as new (x: object) => Error;
    const diskFull = new PgError({ code: '53100', message: 'could not extend file' });
    const readOnly = new PgError({ code: '25006', message: 'cannot execute INSERT in a read-only transaction' });
    const shutdown = new PgError({ code: '57P01', message: 'terminating connection due to administrator command' });
    const closed = Object.assign(new Error('write CONNECTION_CLOSED 127.0.0.1:5432'), { code: 'CONNECTION_CLOSED' });
    for (const err of [diskFull, readOnly, shutdown, closed]) {
      expect(postgresError(err, 'x')).toBeInstanceOf(StoreUnavailableError);
    }
    // Unreachable (the BoundAndTracedStore stops trying until a probe gets through): no connection
    // made.
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const starting = new PgError({ code: '57P03', message: 'the database system is starting up' });
    for (const err of [refused, starting]) expect(postgresError(err, 'x')).toBeInstanceOf(StoreUnreachableError);
    // A lost session is unavailable for this call only: the next one connects anew.
    for (const err of [diskFull, shutdown, closed])
      expect(postgresError(err, 'x')).not.toBeInstanceOf(StoreUnreachableError);
    // A write on a connection that broke may have been committed; one that never connected was not.
    expect(postgresError(closed, 'store pet', true).message).toBe(
      `store pet: write CONNECTION_CLOSED 127.0.0.1:5432; ${OUTCOME_UNKNOWN}`,
    );
    expect(postgresError(shutdown, 'store pet', true).message).toBe(
      `store pet: terminating connection due to administrator command; ${OUTCOME_UNKNOWN}`,
    );
    expect(postgresError(refused, 'store pet', true).message).toBe('store pet: connect ECONNREFUSED 127.0.0.1:5432');
    const check = postgresError(new PgError({ code: '23514', message: 'violates check constraint' }), 'store pet');
    expect(check).toBeInstanceOf(StoreError);
    expect(check).not.toBeInstanceOf(StoreUnavailableError);
    expect(check.message).toBe('store pet: violates check constraint');
    expect(describeData('postgres://a:b@h:1/d?sslmode=require')).toBe('postgres://a:***@h:1/d?sslmode=require');
    expect(describeData('./data/petstore.db')).toBe('./data/petstore.db');
  });
});

describe('PostgresStore behind its bound', () => {
  test('a query that never returns (LOCK TABLE held elsewhere) is answered within the bound; the pool serves after', async () => {
    const db = await freshDatabase();
    const store = boundAndTraced(await PostgresStore.open({ url: db.url, log: silentLogger, timeoutMs: 1_000 }), {
      timeoutMs: 1_000,
      log: silentLogger,
    });
    try {
      // More calls than the pool has connections: those waiting for a slot are bounded too.
      // StoreTimeoutError comes from the bound alone (the server's statement_timeout fails a
      // call as unavailable, and a call queued for a slot would wait past it).
      const answers = await whileLocked(db.url, 'pets', () =>
        Promise.all(
          Array.from({ length: 15 }, (_, i) =>
            (i % 2
              ? store.list({ limit: 5 })
              : store.create({ name: `Lock${i}`, categoryId: 1, status: 'available' })
            ).then(
              () => 'answered',
              (err: unknown) => (err instanceof StoreTimeoutError ? 'timeout' : String(err)),
            ),
          ),
        ),
      );
      expect(answers).toEqual(Array(15).fill('timeout'));
      // Once the lock is gone the pool serves again. The creates answered with a timeout were
      // told their outcome is unknown: each one is stored once at most.
      const after = await store.create({ name: 'After', categoryId: 1, status: 'available' });
      const names = (await store.list({ limit: 100 })).map((p) => p.name);
      expect(names).toContain(after.name);
      expect(new Set(names).size).toBe(names.length);
    } finally {
      await store.close();
      await db.drop();
    }
  }, 20_000);
});
