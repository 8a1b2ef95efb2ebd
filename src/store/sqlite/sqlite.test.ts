import { Database } from 'bun:sqlite';
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeStore } from '../../../test/store-conformance.ts';
import { petOf, type StoredPet } from '../../core/pet-records.ts';
import { createLogger, type Logger, silentLogger } from '../../log.ts';
import { fingerprintOf, IDEMPOTENCY_TTL_MS, KEY_EXPIRY_INTERVAL_MS } from '../idempotency.ts';
import { MIGRATIONS, SCHEMA_VERSION } from '../sql/migrations.ts';
import { StoreError, StoreOpenError, StoreTimeoutError, StoreUnavailableError, sqliteError } from '../store-error.ts';
import { SqliteStore } from './sqlite.ts';
import { loadSqlite, type SqliteConnection, type SqliteOpener } from './sqlite-driver.ts';

const openSqlite = (await loadSqlite()) as SqliteOpener;
const DENO = new URL('../../../node_modules/.bin/deno', import.meta.url).pathname;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'petstore-sqlite-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const open = (path = join(dir, 'pets.db'), log: Logger = silentLogger) =>
  SqliteStore.open({ path, open: openSqlite, log });

describeStore('SqliteStore', async () => {
  const own = mkdtempSync(join(tmpdir(), 'petstore-sqlite-'));
  return { store: open(join(own, 'pets.db')), dispose: async () => rmSync(own, { recursive: true, force: true }) };
});

describe('SqliteStore file', () => {
  test('creates the missing folders, a WAL database, and records the migrations', async () => {
    const lines: string[] = [];
    const path = join(dir, 'a', 'b', 'petstore.db');
    const store = open(path, createLogger({ write: (l) => lines.push(l), now: () => 0 }));
    await store.create({ name: 'Rex', categoryId: 1, status: 'available' });
    expect(existsSync(`${path}-wal`)).toBe(true);
    const db = new Database(path, { readonly: true });
    expect(db.query('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    expect(db.query('SELECT version, name FROM schema_migrations ORDER BY version').all()).toEqual([
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
    ]);
    db.close();
    await store.close();
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      level: 'info',
      msg: 'store opened',
      backend: 'sqlite',
      driver: 'bun:sqlite',
      path,
      journal: 'wal',
      synchronous: 'FULL',
      schemaVersion: SCHEMA_VERSION,
      migrated: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    });
  });

  test('keeps pets across a reopen, and never hands out an id twice', async () => {
    const first = open();
    for (const name of ['a', 'b', 'c']) await first.create({ name, categoryId: 1, status: 'available' });
    await first.close();
    const db = new Database(join(dir, 'pets.db'));
    db.exec('DELETE FROM pets WHERE id = 3');
    db.close();
    const second = open();
    expect(await second.get(1)).toEqual({ id: 1, name: 'a', categoryId: 1, status: 'available', version: 1 });
    expect((await second.create({ name: 'd', categoryId: 1, status: 'sold' })).id).toBe(4);
    await second.close();
  });

  test('close commits the creates still waiting for their batch', async () => {
    const store = open();
    const pending = store.create({ name: 'late', categoryId: 3, status: 'pending' });
    await store.close();
    expect(await pending).toEqual({ id: 1, name: 'late', categoryId: 3, status: 'pending', version: 1 });
    const again = open();
    expect(await again.get(1)).toEqual({ id: 1, name: 'late', categoryId: 3, status: 'pending', version: 1 });
    await again.close();
    await expect(again.create({ name: 'x', categoryId: 1, status: 'sold' })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
  });

  test('a write that throws for itself fails alone; the writes batched with it are stored', async () => {
    const store = open();
    const writes = [
      store.create({ name: 'Rex', categoryId: 1, status: 'available' }),
      // Past the API's checks: only the table's CHECK refuses it.
      store.create({ name: 'Bad', categoryId: 1, status: 'lost' as 'sold' }),
      store.create({ name: 'Tom', categoryId: 2, status: 'sold' }),
    ];
    const [rex, bad, tom] = await Promise.allSettled(writes);
    expect(rex).toEqual({
      status: 'fulfilled',
      value: { id: 1, name: 'Rex', categoryId: 1, status: 'available', version: 1 },
    });
    expect(tom).toEqual({
      status: 'fulfilled',
      value: { id: 2, name: 'Tom', categoryId: 2, status: 'sold', version: 1 },
    });
    expect(bad?.status).toBe('rejected');
    const error = (bad as PromiseRejectedResult).reason;
    expect([error.constructor, error.message]).toEqual([
      StoreError,
      "store pet: CHECK constraint failed: status IN ('available', 'pending', 'sold')",
    ]);
    expect(await store.list({ limit: 10 })).toEqual([
      { id: 1, name: 'Rex', categoryId: 1, status: 'available' },
      { id: 2, name: 'Tom', categoryId: 2, status: 'sold' },
    ]);
    await store.close();
  });

  test('refuses a database written by a newer petstore, as a StoreOpenError (exit 2)', async () => {
    await open().close();
    const db = new Database(join(dir, 'pets.db'));
    db.exec(
      `INSERT INTO schema_migrations (version, name, applied_at) VALUES (${SCHEMA_VERSION + 1}, 'future', '2030-01-01T00:00:00Z')`,
    );
    db.close();
    const err = catchError(() => open());
    expect(err).toBeInstanceOf(StoreOpenError);
    expect((err as Error).message).toBe(
      `--data ${join(dir, 'pets.db')}: the database has schema version ${SCHEMA_VERSION + 1}, which a petstore of schema version ` +
        `${SCHEMA_VERSION + 1} or later serves; this petstore knows versions up to ${SCHEMA_VERSION}. ` +
        'Run a newer petstore (or restore a backup taken before that migration), or point --data elsewhere.',
    );
  });

  test('serves a newer schema whose migrations a later petstore recorded as readable by this one', async () => {
    const store = open();
    const pet = await store.create({ name: 'Rex', categoryId: 1, status: 'available' });
    await store.close();
    const db = new Database(join(dir, 'pets.db'));
    // What a later release's additive migration does: a column this build does not know.
    db.exec('ALTER TABLE pets ADD COLUMN later_note TEXT');
    db.exec(
      `INSERT INTO schema_migrations (version, name, applied_at, readable_from) VALUES (${SCHEMA_VERSION + 1}, 'later', '2030-01-01T00:00:00Z', ${SCHEMA_VERSION})`,
    );
    db.close();
    const again = open();
    expect(await again.get(pet.id)).toEqual(pet);
    expect((await again.create({ name: 'Tom', categoryId: 2, status: 'available' })).id).toBe(pet.id + 1);
    await again.close();
  });

  test('upgrades a version 1 database in place, keeping its pets and ids', async () => {
    const path = join(dir, 'v1.db');
    const old = new Database(path);
    old.exec(
      'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
    );
    old.exec((MIGRATIONS[0] as { sqlite: string }).sqlite);
    old.exec("INSERT INTO schema_migrations VALUES (1, 'pets', '2026-01-01T00:00:00Z')");
    old.exec("INSERT INTO pets (name, category_id, status) VALUES ('old', 1, 'sold')");
    old.close();
    const lines: string[] = [];
    const store = open(path, createLogger({ write: (l) => lines.push(l) }));
    expect(lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'store opened')).toMatchObject({
      migrated: [2, 3, 4, 5, 6, 7, 8, 9, 10],
    });
    expect(await store.get(1)).toEqual({ id: 1, name: 'old', categoryId: 1, status: 'sold', version: 1 });
    const now = Date.UTC(2026, 10, 22);
    const once = { owner: 'key:a', key: 'k', fingerprint: 'f', now };
    expect(await store.createOnce({ name: 'new', categoryId: 1, status: 'available' }, once)).toMatchObject({
      outcome: 'created',
      pet: { id: 2 },
    });
    await store.close();
  });

  test('upgrades a version 7 database: its pets get version 1, its live keys keep their pets as createPet keys', async () => {
    const path = join(dir, 'v7.db');
    const old = new Database(path);
    old.exec(
      'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
    );
    for (const m of MIGRATIONS.filter((m) => m.version <= 7)) {
      old.exec(m.sqlite);
      old.exec(`INSERT INTO schema_migrations VALUES (${m.version}, '${m.name}', '2026-01-01T00:00:00Z')`);
    }
    const now = Date.UTC(2026, 10, 22);
    old.exec("INSERT INTO pets (name, category_id, status) VALUES ('kept', 4, 'pending')");
    old.exec(`INSERT INTO idempotency_keys VALUES ('key:acme', 'k', 'f', 1, ${now + 1_000})`);
    old.close();
    const store = open(path);
    const kept = { id: 1, name: 'kept', categoryId: 4, status: 'pending' as const, version: 1 };
    expect(await store.get(1)).toEqual(kept);
    const retry = { owner: 'key:acme', key: 'k', fingerprint: 'f', now };
    const pet = { name: 'kept', categoryId: 4, status: 'pending' } as const;
    expect(await store.createOnce(pet, retry)).toEqual({ outcome: 'replayed', pet: kept });
    // The migration copied the pet into its key: a retry answers it as created, whatever became of
    // it.
    await store.update(1, { name: 'renamed' });
    expect(await store.createOnce(pet, retry)).toEqual({ outcome: 'replayed', pet: kept });
    await store.remove(1);
    expect(await store.createOnce(pet, retry)).toEqual({ outcome: 'replayed', pet: kept });
    expect(await store.list({ limit: 10 })).toEqual([]);
    await store.close();
  });

  test('two connections to one file: one key stores one pet; expired keys are swept', async () => {
    const path = join(dir, 'shared.db');
    const [a, b] = [open(path), open(path)];
    const rex = { name: 'Rex', categoryId: 1, status: 'available' } as const;
    const now = Date.UTC(2026, 10, 22);
    const once = (key: string, at: number) => ({ owner: 'key:acme', key, fingerprint: fingerprintOf(rex), now: at });
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).createOnce(rex, once('same', now))),
    );
    expect(results.filter((r) => r.outcome === 'created')).toHaveLength(1);
    expect(new Set(results.map((r) => (r.outcome === 'conflict' ? 0 : r.pet.id)))).toEqual(new Set([1]));
    await a.createOnce(rex, once('other', now + 1));
    const keys = () => {
      const db = new Database(path, { readonly: true });
      const { n } = db.query('SELECT count(*) AS n FROM idempotency_keys').get() as { n: number };
      db.close();
      return n;
    };
    expect(keys()).toBe(2);
    // Both keys have expired and the last deletion is long enough ago: the next keyed create
    // deletes them.
    const later = now + IDEMPOTENCY_TTL_MS + KEY_EXPIRY_INTERVAL_MS;
    await a.createOnce(rex, once('third', later));
    expect(keys()).toBe(1);
    expect(await b.list({ limit: 10 })).toHaveLength(3);
    await Promise.all([a.close(), b.close()]);
  });

  test('refuses a SQLite file of another application, and a path that is not a database', () => {
    const foreign = new Database(join(dir, 'other.db'));
    foreign.exec('CREATE TABLE invoices (id INTEGER PRIMARY KEY)');
    foreign.close();
    expect((catchError(() => open(join(dir, 'other.db'))) as Error).message).toBe(
      `--data ${join(dir, 'other.db')}: not a petstore database (it has tables but no schema_migrations); point --data at a new file`,
    );
    expect(catchError(() => open(dir))).toBeInstanceOf(StoreOpenError);
  });

  test('a full disk or a read-only database is StoreUnavailableError, and the store recovers', async () => {
    let conn: SqliteConnection | undefined;
    const store = SqliteStore.open({
      path: join(dir, 'pets.db'),
      open: (path) => {
        conn = openSqlite(path);
        return conn;
      },
      log: silentLogger,
    });
    const db = conn as SqliteConnection;
    const pages = Number((db.prepare('PRAGMA page_count').get() as { page_count: number }).page_count);
    db.exec(`PRAGMA max_page_count = ${pages + 2}`);
    const big = { name: 'x'.repeat(100), categoryId: 1, status: 'available' } as const;
    const stored: StoredPet[] = [];
    let failure: unknown;
    while (failure === undefined && stored.length < 1000) {
      await store.create(big).then(
        (pet) => stored.push(pet),
        (err: unknown) => (failure = err),
      );
    }
    expect(stored.length).toBeGreaterThan(0);
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect((failure as Error).message).toBe('store pet: database or disk is full');
    // A batch is one transaction: a failed one leaves nothing behind; what was answered is there.
    const batch = await Promise.allSettled([store.create(big), store.create(big)]);
    expect(batch.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(await store.list({ limit: 1000 })).toEqual(stored.map(petOf));

    db.exec('PRAGMA max_page_count = 1000000');
    db.exec('PRAGMA query_only = ON');
    const readOnly = await store.create(big).catch((e: unknown) => e);
    expect(readOnly).toBeInstanceOf(StoreUnavailableError);
    expect(await store.get(1)).toBeDefined();
    db.exec('PRAGMA query_only = OFF');
    expect((await store.create(big)).name).toBe(big.name);
    await store.close();
  });

  test('runs on Deno through node:sqlite, reading what Bun wrote', async () => {
    const path = join(dir, 'shared.db');
    const bun = open(path);
    await bun.create({ name: 'from bun', categoryId: 1, status: 'sold' });
    await bun.close();
    const script = `
      import { SqliteStore } from '${new URL('./sqlite.ts', import.meta.url).href}';
      import { loadSqlite } from '${new URL('./sqlite-driver.ts', import.meta.url).href}';
      import { silentLogger } from '${new URL('../../log.ts', import.meta.url).href}';
      const store = SqliteStore.open({ path: ${JSON.stringify(path)}, open: await loadSqlite(), log: silentLogger });
      const made = await Promise.all([1, 2, 3].map((i) => store.create({ name: 'from deno ' + i, categoryId: i, status: 'pending' })));
      const once = { owner: 'key:deno', key: 'k', fingerprint: 'f', now: 1 };
      const keyed = await Promise.all([1, 2].map(() => store.createOnce({ name: 'keyed', categoryId: 1, status: 'sold' }, once)));
      console.log(JSON.stringify({ made: made.map((p) => p.id), keyed, all: await store.list({ limit: 10 }) }));
      await store.close();`;
    const run = Bun.spawnSync([DENO, 'eval', '--ext=ts', script], { stderr: 'pipe' });
    expect(run.stderr.toString()).toBe('');
    const out = JSON.parse(run.stdout.toString());
    expect(out.made).toEqual([2, 3, 4]);
    expect(out.all[0]).toEqual({ id: 1, name: 'from bun', categoryId: 1, status: 'sold' });
    expect(out.all[3]).toEqual({ id: 4, name: 'from deno 3', categoryId: 3, status: 'pending' });
    const keyed = { id: 5, name: 'keyed', categoryId: 1, status: 'sold', version: 1 };
    expect(out.keyed).toEqual([
      { outcome: 'created', pet: keyed },
      { outcome: 'replayed', pet: keyed },
    ]);
    expect(out.all).toHaveLength(5);
  }, 30_000);
});

describe('SqliteStore while another process holds the write lock', () => {
  test('reads go on; a create waits without stopping the event loop, and is dropped unstored after lockWaitMs', async () => {
    const path = join(dir, 'pets.db');
    const store = SqliteStore.open({ path, open: openSqlite, log: silentLogger, lockWaitMs: 300 });
    await store.create({ name: 'before', categoryId: 1, status: 'available' });
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    const waited = store.create({ name: 'waited', categoryId: 1, status: 'available' }).catch((err: unknown) => err);
    const changed = store.update(1, { name: 'renamed' }).catch((err: unknown) => err);
    // The event loop turns meanwhile: timers run, reads are answered.
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 10);
    expect((await store.list({ limit: 10 })).map((p) => p.name)).toEqual(['before']);
    expect(await waited).toEqual(
      new StoreTimeoutError(
        'store pet: the database file stayed locked by another process for 300 ms; nothing was stored',
      ),
    );
    // Each write's error says what it was doing.
    expect(await changed).toEqual(
      new StoreTimeoutError(
        'change pet: the database file stayed locked by another process for 300 ms; nothing was stored',
      ),
    );
    clearInterval(ticker);
    expect(ticks).toBeGreaterThan(5);

    // A create that gets the lock within its wait is stored.
    const late = store.create({ name: 'late', categoryId: 1, status: 'available' });
    setTimeout(() => other.exec('COMMIT'), 100);
    expect(await late).toEqual({ id: 2, name: 'late', categoryId: 1, status: 'available', version: 1 });
    expect((await store.list({ limit: 10 })).map((p) => p.name)).toEqual(['before', 'late']);
    other.close();
    await store.close();
  });
});

describe('sqliteError', () => {
  test('tells environmental failures from the others, by code or, on Deno, by message', () => {
    const bunFull = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL', errno: 13 });
    const nodeReadOnly = Object.assign(new Error('attempt to write a readonly database'), { errcode: 8 });
    const bunIo = Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_WRITE', errno: 778 });
    const denoBusy = Object.assign(new Error('database is locked'), { code: 'ERR_SQLITE_ERROR' });
    const constraint = Object.assign(new Error('CHECK constraint failed'), {
      code: 'SQLITE_CONSTRAINT_CHECK',
      errno: 275,
    });
    for (const err of [bunFull, nodeReadOnly, bunIo, denoBusy])
      expect(sqliteError(err, 'x')).toBeInstanceOf(StoreUnavailableError);
    const other = sqliteError(constraint, 'store pet');
    expect(other).toBeInstanceOf(StoreError);
    expect(other).not.toBeInstanceOf(StoreUnavailableError);
    expect(other.message).toBe('store pet: CHECK constraint failed');
    expect(other.cause).toBe(constraint);
  });
});

function catchError(f: () => unknown): unknown {
  try {
    f();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}
