// The PostgreSQL schema's migrations, applied by one instance at a time, each with a short lock
// wait so the requests behind a busy table are not held (docs/operations.md, upgrades).
import postgres from 'postgres';
import {
  MIGRATIONS,
  type Migration,
  readableFromOf,
  SCHEMA_MIGRATIONS_DDL,
  SCHEMA_STATE_SQL,
  SCHEMA_VERSION,
  type SchemaState,
  schemaVerdict,
} from '../sql/migrations.ts';
import { column } from '../sql/pet-rows.ts';

/**
 * How long a migration's statement waits for a lock on a busy table before it gives up and is
 * retried. Well under --store-timeout, so requests queued behind its lock request never wait
 * long enough to be answered 503.
 */
const MIGRATION_LOCK_TIMEOUT_MS = 500;
/** How many times a migration that cannot get its locks is tried; the pause grows each time. */
const MIGRATION_ATTEMPTS = 60;

export interface MigrateOptions {
  readonly migrations?: readonly Migration[];
  readonly lockTimeoutMs?: number;
  readonly attempts?: number;
  /** Called when a migration could not get a lock within the lock timeout and is retried. */
  readonly retrying?: (m: Migration, attempt: number) => void;
}

/**
 * The schema version and the oldest build that can serve it (SCHEMA_STATE_SQL); 0 for a new
 * database.
 */
export async function postgresSchemaState(sql: postgres.Sql): Promise<SchemaState> {
  const [exists] = await sql`SELECT to_regclass('schema_migrations') IS NOT NULL AS present`;
  if (!column(exists, 'present')) return { version: 0, readableFrom: 0 };
  const [withColumn] = await sql`
    SELECT count(*) AS n FROM information_schema.columns
    WHERE table_name = 'schema_migrations' AND column_name = 'readable_from' AND table_schema = current_schema()`;
  if (Number(column(withColumn, 'n')) === 0) {
    const [row] = await sql`SELECT coalesce(max(version), 0) AS v FROM schema_migrations`;
    const version = Number(column(row, 'v'));
    return { version, readableFrom: version > SCHEMA_VERSION ? version : 0 };
  }
  const [row] = await sql.unsafe(SCHEMA_STATE_SQL);
  return { version: Number(column(row, 'version')), readableFrom: Number(column(row, 'readable_from')) };
}

/**
 * Applies the pending migrations, one instance at a time (a session advisory lock); `conn` must
 * be a one-connection client used for nothing else. Each migration is a transaction with
 * `lock_timeout`, so a busy table makes it retry later instead of queueing every request behind
 * it. Indexes are built afterwards, `CONCURRENTLY`; an invalid one left by a cut-short build is
 * built again.
 */
export async function migratePostgres(
  conn: postgres.Sql,
  where: string,
  {
    migrations = MIGRATIONS,
    lockTimeoutMs = MIGRATION_LOCK_TIMEOUT_MS,
    attempts = MIGRATION_ATTEMPTS,
    retrying,
  }: MigrateOptions = {},
): Promise<{ migrated: number[]; version: number }> {
  // Waiting for another instance's migrations, or a long one, is not a request to bound.
  await conn`SET statement_timeout = 0`;
  await conn`SELECT pg_advisory_lock(hashtext('petstore schema_migrations'))`;
  try {
    await conn.unsafe(SCHEMA_MIGRATIONS_DDL);
    await conn`ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS readable_from INTEGER`;
    const state = await postgresSchemaState(conn);
    const { newer } = schemaVerdict(state, where);
    const known = newer ? [] : migrations.filter((m) => m.version > state.version);
    for (const m of known) {
      await withLockTimeout(conn, m, lockTimeoutMs, attempts, retrying, async () => {
        await conn`BEGIN`;
        await conn.unsafe(`SET LOCAL lock_timeout = ${lockTimeoutMs}`);
        await conn.unsafe(m.postgres);
        await conn`INSERT INTO schema_migrations (version, name, applied_at, readable_from)
            VALUES (${m.version}, ${m.name}, ${new Date().toISOString()}, ${readableFromOf(m)})`;
        await conn`COMMIT`;
      });
    }
    // Check the indexes of every applied migration, so a build cut short is finished now.
    for (const m of migrations.filter((m) => m.version <= Math.max(state.version, known.at(-1)?.version ?? 0))) {
      for (const index of m.indexes ?? []) {
        await withLockTimeout(conn, m, lockTimeoutMs, attempts, retrying, async () => {
          const [valid] = await conn`
              SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
              WHERE c.relname = ${index.name}`;
          if (valid && column(valid, 'valid')) return;
          await conn.unsafe(`SET lock_timeout = ${lockTimeoutMs}`);
          if (valid) await conn.unsafe(`DROP INDEX CONCURRENTLY IF EXISTS ${index.name}`);
          await conn.unsafe(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${index.name} ${index.on}`);
        });
      }
    }
    return { migrated: known.map((m) => m.version), version: known.at(-1)?.version ?? state.version };
  } finally {
    await conn`SELECT pg_advisory_unlock(hashtext('petstore schema_migrations'))`.catch(() => {});
    await conn`RESET lock_timeout`.catch(() => {});
    await conn`RESET statement_timeout`.catch(() => {});
  }
}

/** Runs `step`, retrying while it fails on the lock timeout (55P03), up to `attempts` times. */
async function withLockTimeout(
  conn: postgres.Sql,
  m: Migration,
  lockTimeoutMs: number,
  attempts: number,
  retrying: MigrateOptions['retrying'],
  step: () => Promise<void>,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await step();
      return;
    } catch (err) {
      await conn`ROLLBACK`.catch(() => {});
      const code = err instanceof postgres.PostgresError ? err.code : '';
      if (code !== '55P03' || attempt >= attempts) throw err;
      retrying?.(m, attempt);
      await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, lockTimeoutMs * attempt)));
    }
  }
}
