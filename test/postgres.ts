import postgres from 'postgres';

/** A database of a test's own on the throwaway PostgreSQL server (scripts/with-postgres.sh). */
export interface TestDatabase {
  /** Its URL, for `--data`. */
  readonly url: string;
  /** A connection to the server's default database: to look at or end backends, and to drop this one. */
  readonly admin: postgres.Sql;
  /** Drops the database, whatever still connects to it, and closes `admin`. */
  drop(): Promise<void>;
}

/**
 * Makes the database `name` anew on `server` (one left by an earlier run is dropped first).
 *
 * @example
 * const db = await freshDatabase(PG_SERVER, `petstore_scale_out_${process.pid}`)
 * await startServer({ args: ['--data', db.url] })
 * await db.drop()
 */
export async function freshDatabase(server: string, name: string): Promise<TestDatabase> {
  const admin = postgres(server, { max: 1, onnotice: () => {} });
  await admin.unsafe(`DROP DATABASE IF EXISTS ${name}`);
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    admin,
    drop: async () => {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end({ timeout: 5 });
    },
  };
}
