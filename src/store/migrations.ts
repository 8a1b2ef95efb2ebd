import { MAX_ID } from '../api/schemas.ts';
import { StoreOpenError } from './errors.ts';

/**
 * One schema change, written for each engine; versions are applied in order, once, at start-up,
 * each recorded in `schema_migrations`. Never edit a released migration: add the next one.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sqlite: string;
  readonly postgres: string;
}

const STATUS_CHECK = "status IN ('available', 'pending', 'sold')";

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'pets',
    // AUTOINCREMENT (not a bare rowid alias) so the id of a pet never comes back after a crash
    // or deletion; the (status, id) index serves the filtered, id-ordered pages of listPets.
    sqlite: `
      CREATE TABLE pets (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL CHECK (name <> ''),
        category_id INTEGER NOT NULL CHECK (category_id BETWEEN 1 AND ${MAX_ID}),
        status TEXT NOT NULL CHECK (${STATUS_CHECK})
      ) STRICT;
      CREATE INDEX pets_status_id ON pets (status, id);`,
    postgres: `
      CREATE TABLE pets (
        id BIGINT GENERATED ALWAYS AS IDENTITY (MAXVALUE ${MAX_ID}) PRIMARY KEY,
        name TEXT NOT NULL CHECK (name <> ''),
        category_id BIGINT NOT NULL CHECK (category_id BETWEEN 1 AND ${MAX_ID}),
        status TEXT NOT NULL CHECK (${STATUS_CHECK})
      );
      CREATE INDEX pets_status_id ON pets (status, id);`,
  },
  {
    version: 2,
    name: 'idempotency_keys',
    // One row per (caller, Idempotency-Key), written in the transaction that inserts its pet.
    // expires_at is epoch ms from the app's clock; expired rows are ignored, then swept lazily.
    // SQLite does not enforce the foreign key (foreign_keys is off); lookups join pets anyway.
    sqlite: `
      CREATE TABLE idempotency_keys (
        scope TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        pet_id INTEGER NOT NULL REFERENCES pets (id) ON DELETE CASCADE,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (scope, idempotency_key)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);`,
    postgres: `
      CREATE TABLE idempotency_keys (
        scope TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        pet_id BIGINT NOT NULL REFERENCES pets (id) ON DELETE CASCADE,
        expires_at BIGINT NOT NULL,
        PRIMARY KEY (scope, idempotency_key)
      );
      CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);`,
  },
  {
    version: 3,
    name: 'webhook_outbox',
    // Quota notifications waiting to be sent (src/store/outbox.ts). Times are epoch ms; next_at is
    // when a pending event is due (when a delivered one was delivered); claimed_by/claimed_until
    // lease a pending event to one worker. No webhook secret is ever stored.
    sqlite: `
      CREATE TABLE webhook_outbox (
        id TEXT PRIMARY KEY,
        consumer TEXT NOT NULL,
        type TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at INTEGER NOT NULL,
        claimed_by TEXT,
        claimed_until INTEGER,
        last_error TEXT
      ) STRICT;
      CREATE INDEX webhook_outbox_due ON webhook_outbox (status, next_at);`,
    postgres: `
      CREATE TABLE webhook_outbox (
        id TEXT PRIMARY KEY,
        consumer TEXT NOT NULL,
        type TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at BIGINT NOT NULL,
        claimed_by TEXT,
        claimed_until BIGINT,
        last_error TEXT
      );
      CREATE INDEX webhook_outbox_due ON webhook_outbox (status, next_at);`,
  },
];

/** The schema version this build writes. */
export const SCHEMA_VERSION = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);

/** The bookkeeping table, the same on both engines. */
export const SCHEMA_MIGRATIONS_DDL = `
  CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
  )`;

/**
 * The migrations a database at version `current` still needs; refuses one written by a newer
 * petstore, whose schema this build does not know how to read or write safely.
 *
 * @example
 * pendingMigrations(0, 'data/petstore.db') // [MIGRATIONS[0]]
 */
export function pendingMigrations(current: number, where: string): readonly Migration[] {
  if (current > SCHEMA_VERSION) {
    throw new StoreOpenError(
      `${where}: the database has schema version ${current}, written by a newer petstore; ` +
        `this petstore knows versions up to ${SCHEMA_VERSION}. Run the newer petstore, or point --data elsewhere.`,
    );
  }
  return MIGRATIONS.filter((m) => m.version > current);
}
