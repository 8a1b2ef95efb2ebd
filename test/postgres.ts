import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { type Migration, SCHEMA_VERSION } from '../src/store/sql/migrations.ts';
import { throwawayUrl } from './throwaway.ts';

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
 * await spawnServer({ args: ['--data', db.url] })
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

/** Runs a command without blocking the event loop (clients keep going); resolves with its exit code and output. */
export function run(cmd: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += d;
    });
    child.stderr.on('data', (d: Buffer) => {
      output += d;
    });
    child.once('exit', (code) => resolve({ code, output }));
  });
}

/**
 * Runs pg_ctl on the throwaway cluster of scripts/with-postgres.sh in `dir`
 * (PETSTORE_TEST_POSTGRES_DIR), as its owner (postgres when the tests run as root), without
 * blocking the event loop; resolves with its exit code and output.
 *
 * @example
 * await pgCtl(PG_DIR, 'stop', '-m', 'fast', '-w')
 */
export function pgCtl(dir: string, ...args: string[]): Promise<{ code: number | null; output: string }> {
  const bin = (readFileSync(join(dir, '.petstore-pg'), 'utf8').split('\n')[1] ?? '').trim();
  const command = [`${bin}/pg_ctl`, '-D', join(dir, 'data'), ...args];
  const [cmd, ...rest] = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', ...command] : command;
  return run(cmd as string, rest);
}

/** `pg_ctl start -o` options that start the cluster in `dir` again as scripts/with-postgres.sh did, on its port. */
export function pgStartOptions(dir: string): string {
  const options = readFileSync(join(dir, 'data', 'postmaster.opts'), 'utf8');
  const port = /-p"? "?(\d+)/.exec(options)?.[1];
  return `-c listen_addresses=127.0.0.1 -p ${port} -c unix_socket_directories=${dir}`;
}

/**
 * The PostgreSQL server the store's tests create and drop databases on: `make unit` starts a
 * throwaway one through scripts/with-postgres.sh. Without one, the test file fails with this
 * message instead of skipping, so the PostgreSQL store is never left untested.
 *
 * @example
 * const admin = postgres(testPostgresUrl())
 */
export function testPostgresUrl(): string {
  return throwawayUrl('PETSTORE_TEST_POSTGRES_URL', 'runs the store on a PostgreSQL server', 'postgres', 'postgresql');
}

/**
 * Runs `check` while another session holds `LOCK TABLE table IN ACCESS EXCLUSIVE MODE` on the
 * database at `url` (no query of the table answers meanwhile); the lock is released and its
 * session ended whatever `check` does.
 */
export async function whileLocked<T>(url: string, table: string, check: () => Promise<T>): Promise<T> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let locked = () => {};
  const holding = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const held = sql.begin(async (tx) => {
    await tx.unsafe(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    locked();
    await released;
  });
  try {
    await Promise.race([holding, held]);
    return await check();
  } finally {
    release();
    await held.catch(() => {});
    await sql.end({ timeout: 1 });
  }
}

/**
 * What a later release's additive migration looks like (this build's version + 1): a column on
 * pets, an index built concurrently, readable by this build.
 */
export function laterMigration(): Migration {
  return {
    version: SCHEMA_VERSION + 1,
    name: 'later_pets_note',
    sqlite: 'ALTER TABLE pets ADD COLUMN later_note TEXT',
    postgres: 'ALTER TABLE pets ADD COLUMN later_note TEXT',
    readableFrom: SCHEMA_VERSION,
    indexes: [{ name: 'pets_later_note', on: 'ON pets (later_note)' }],
  };
}
