import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { setImmediate } from 'node:timers';
import type { Logger } from '../log.ts';
import type { NewPet, Pet } from '../schemas.ts';
import { type StoreError, StoreOpenError, StoreUnavailableError, sqliteError } from './errors.ts';
import { pendingMigrations, SCHEMA_MIGRATIONS_DDL, SCHEMA_VERSION } from './migrations.ts';
import { column, PET_COLUMNS, petFromRow } from './rows.ts';
import type { SqliteConnection, SqliteOpener } from './sqlite-driver.ts';
import type { ListOptions, PetStore } from './store.ts';

/** How long a write waits for another process holding the database lock before giving up. */
const BUSY_TIMEOUT_MS = 5_000;

const INSERT = `INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING ${PET_COLUMNS}`;
const SELECT_ONE = `SELECT ${PET_COLUMNS} FROM pets WHERE id = ?`;
const SELECT_PAGE = `SELECT ${PET_COLUMNS} FROM pets WHERE id > ? ORDER BY id LIMIT ?`;
const SELECT_PAGE_BY_STATUS = `SELECT ${PET_COLUMNS} FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ?`;

export interface SqliteStoreOptions {
  /** Database file; its folder is created when missing. */
  readonly path: string;
  /** The runtime's SQLite, from `loadSqlite()`. */
  readonly open: SqliteOpener;
  readonly log: Logger;
}

interface PendingCreate {
  readonly pet: NewPet;
  resolve(pet: Pet): void;
  reject(err: StoreError): void;
}

/**
 * Pets in a SQLite file: WAL journal, `synchronous=FULL`, so a committed pet survives a crash
 * of the process or of the machine.
 *
 * Writes are group-committed: the creates that arrive while the event loop is busy are inserted
 * in one transaction and resolved together after its COMMIT (one fsync for the lot), so the
 * durability promise costs one sync per batch rather than one per request.
 */
export class SqliteStore implements PetStore {
  readonly #db: SqliteConnection;
  #pending: PendingCreate[] = [];
  #closed = false;

  private constructor(db: SqliteConnection) {
    this.#db = db;
  }

  /**
   * Opens (creating when needed) the file, sets the pragmas and applies the migrations;
   * throws `StoreOpenError` when any of that fails.
   *
   * @example
   * const store = SqliteStore.open({ path: 'data/petstore.db', open: await loadSqlite(), log })
   */
  static open({ path, open, log }: SqliteStoreOptions): SqliteStore {
    const file = resolve(path);
    let db: SqliteConnection | undefined;
    try {
      mkdirSync(dirname(file), { recursive: true });
      db = open(file);
      db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
      const journal = column(db.prepare('PRAGMA journal_mode = WAL').get(), 'journal_mode');
      db.exec('PRAGMA synchronous = FULL');
      const migrated = migrate(db, file);
      const sqliteVersion = column(db.prepare('SELECT sqlite_version() AS v').get(), 'v');
      if (journal !== 'wal')
        log.warn('SQLite could not use WAL; the rollback journal is slower but as durable', { journal });
      log.info('store opened', {
        backend: 'sqlite',
        driver: db.driver,
        path: file,
        sqliteVersion,
        journal,
        synchronous: 'FULL',
        schemaVersion: SCHEMA_VERSION,
        ...(migrated.length > 0 ? { migrated } : {}),
      });
      return new SqliteStore(db);
    } catch (err) {
      db?.close();
      if (err instanceof StoreOpenError) throw err;
      throw new StoreOpenError(`--data ${file}: cannot open the SQLite database: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  create(pet: NewPet): Promise<Pet> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('the store is closed'));
    return new Promise((resolve, reject) => {
      if (this.#pending.push({ pet, resolve, reject }) === 1) setImmediate(() => this.#commit());
    });
  }

  async get(id: number): Promise<Pet | undefined> {
    const row = this.#read('read pet', () => this.#db.prepare(SELECT_ONE).get(id));
    return row === undefined || row === null ? undefined : petFromRow(row);
  }

  async list({ limit, status, after = 0 }: ListOptions): Promise<Pet[]> {
    const rows = this.#read('list pets', () =>
      status === undefined
        ? this.#db.prepare(SELECT_PAGE).all(after, limit)
        : this.#db.prepare(SELECT_PAGE_BY_STATUS).all(status, after, limit),
    );
    return rows.map(petFromRow);
  }

  async ping(): Promise<void> {
    this.#read('ping', () => this.#db.prepare('SELECT 1 AS ok').get());
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#commit();
    this.#closed = true;
    this.#db.close();
  }

  /** Inserts every pending create in one transaction; each promise settles after the COMMIT. */
  #commit(): void {
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length === 0) return;
    let stored: Pet[];
    try {
      this.#db.exec('BEGIN IMMEDIATE');
      const insert = this.#db.prepare(INSERT);
      stored = batch.map(({ pet }) => petFromRow(insert.get(pet.name, pet.categoryId, pet.status)));
      this.#db.exec('COMMIT');
    } catch (err) {
      rollback(this.#db);
      const failure = sqliteError(err, 'store pet');
      for (const p of batch) p.reject(failure);
      return;
    }
    for (const [i, p] of batch.entries()) p.resolve(stored[i] as Pet);
  }

  #read<T>(doing: string, query: () => T): T {
    if (this.#closed) throw new StoreUnavailableError('the store is closed');
    try {
      return query();
    } catch (err) {
      throw sqliteError(err, doing);
    }
  }
}

/** Applies the pending migrations in one write transaction; returns the versions applied. */
function migrate(db: SqliteConnection, file: string): number[] {
  db.exec('BEGIN IMMEDIATE');
  try {
    const known = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'").get();
    const tables = column(
      db.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").get(),
      'n',
    );
    if ((known === undefined || known === null) && tables !== 0) {
      throw new StoreOpenError(
        `--data ${file}: not a petstore database (it has tables but no schema_migrations); point --data at a new file`,
      );
    }
    db.exec(SCHEMA_MIGRATIONS_DDL);
    const current = Number(
      column(db.prepare('SELECT coalesce(max(version), 0) AS v FROM schema_migrations').get(), 'v'),
    );
    const todo = pendingMigrations(current, `--data ${file}`);
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const m of todo) {
      db.exec(m.sqlite);
      record.get(m.version, m.name, new Date().toISOString());
    }
    db.exec('COMMIT');
    return todo.map((m) => m.version);
  } catch (err) {
    rollback(db);
    throw err;
  }
}

function rollback(db: SqliteConnection): void {
  try {
    if (db.inTransaction) db.exec('ROLLBACK');
  } catch {
    // SQLite may have rolled back on its own (e.g. after SQLITE_FULL); nothing is left to undo.
  }
}
