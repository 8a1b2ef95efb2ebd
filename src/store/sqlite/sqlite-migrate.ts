// The SQLite file's schema: its version, and the migrations applied in one write transaction.

import {
  readableFromOf,
  SCHEMA_MIGRATIONS_DDL,
  SCHEMA_STATE_SQL,
  SCHEMA_VERSION,
  type SchemaState,
  schemaVerdict,
} from '../sql/migrations.ts';
import { column } from '../sql/pet-rows.ts';
import { StoreOpenError } from '../store-error.ts';
import { rollback, type SqliteConnection } from './sqlite-driver.ts';

/**
 * The SQLite file's schema version and the oldest build that can serve it; 0 for a new file.
 * Adds the `readable_from` column to `schema_migrations` when it is missing.
 */
export function sqliteSchemaState(db: SqliteConnection, alter = true): SchemaState {
  const known = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'").get();
  if (known === undefined) return { version: 0, readableFrom: 0 };
  const columns = db.prepare('PRAGMA table_info(schema_migrations)').all() as { name: string }[];
  if (!columns.some((c) => c.name === 'readable_from')) {
    if (!alter) {
      const version = Number(
        column(db.prepare('SELECT coalesce(max(version), 0) AS v FROM schema_migrations').get(), 'v'),
      );
      return { version, readableFrom: version > SCHEMA_VERSION ? version : 0 };
    }
    db.exec('ALTER TABLE schema_migrations ADD COLUMN readable_from INTEGER');
  }
  const row = db.prepare(SCHEMA_STATE_SQL).get();
  return { version: Number(column(row, 'version')), readableFrom: Number(column(row, 'readable_from')) };
}

/**
 * Applies the pending migrations (and their indexes) in one write transaction; returns the
 * versions applied and the database's schema version after.
 */
export function migrate(db: SqliteConnection, file: string): { migrated: number[]; version: number } {
  db.exec('BEGIN IMMEDIATE');
  try {
    const known = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'").get();
    const tables = column(
      db.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").get(),
      'n',
    );
    if (known === undefined && tables !== 0) {
      throw new StoreOpenError(
        `--data ${file}: not a petstore database (it has tables but no schema_migrations); point --data at a new file`,
      );
    }
    db.exec(SCHEMA_MIGRATIONS_DDL);
    const state = sqliteSchemaState(db);
    const { pending } = schemaVerdict(state, `--data ${file}`);
    const record = db.prepare(
      'INSERT INTO schema_migrations (version, name, applied_at, readable_from) VALUES (?, ?, ?, ?)',
    );
    for (const m of pending) {
      db.exec(m.sqlite);
      for (const index of m.indexes ?? []) db.exec(`CREATE INDEX IF NOT EXISTS ${index.name} ${index.on}`);
      record.get(m.version, m.name, new Date().toISOString(), readableFromOf(m));
    }
    db.exec('COMMIT');
    return { migrated: pending.map((m) => m.version), version: pending.at(-1)?.version ?? state.version };
  } catch (err) {
    rollback(db);
    throw err;
  }
}
