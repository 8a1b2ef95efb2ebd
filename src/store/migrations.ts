import { MAX_ID } from '../schemas.ts';
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
