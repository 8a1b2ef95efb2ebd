// `petstore backup` and `petstore restore`: a consistent copy of a live store, and putting it
// back. A restore moves the pet id sequence past every id the store may have issued since the
// copy, so no id is given to two pets.
//
// - SQLite: `VACUUM INTO` copies in one read transaction while the server writes on, WAL included;
//   a plain `cp` of a live file can miss what is still in the WAL.
// - PostgreSQL: `pg_dump --format=custom` (one snapshot), and `pg_restore` into an empty database.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { basename, dirname, join } from 'node:path';
import process from 'node:process';
import postgres from 'postgres';
import { PET_VERSIONS } from './postgres/postgres-changes.ts';
import { POSTGRES_URL } from './postgres/postgres-url.ts';
import { SCHEMA_VERSION } from './sql/migrations.ts';
import { loadSqlite, type SqliteConnection } from './sqlite/sqlite-driver.ts';
import { StoreOpenError } from './store-error.ts';

/**
 * How far a restore moves the id sequence past the backup's when the store it replaces cannot be
 * read (lost, or on another host): more ids than any store issues between a backup and its
 * restore. Ids jump by this much once per such restore, which 2^53 allows millions of times.
 */
export const DEFAULT_ID_GAP = 1_000_000_000;

export interface BackupResult {
  /** The largest pet id the backup holds, and the sequence's position (the last id issued). */
  readonly maxId: number;
  readonly pets: number;
  readonly sequence: number;
  readonly schemaVersion: number;
}

export interface RestoreResult {
  /** The sequence's position before and after the move: the next pet gets `after + 1`. */
  readonly before: number;
  readonly after: number;
  /** The new position's basis: the replaced store's sequence, or the backup's plus the gap. */
  readonly basis: 'replaced store' | 'gap';
  /** The replaced SQLite files, kept aside under these names. */
  readonly keptAside: readonly string[];
}

/** The migration that gave pets their versions (and PostgreSQL its `pet_versions` sequence). */
const PET_VERSIONS_SCHEMA = 8;

const num = (row: unknown, column: string): number =>
  Number((row as Record<string, unknown> | undefined)?.[column] ?? 0);

async function sqlite(path: string): Promise<SqliteConnection> {
  const open = await loadSqlite();
  if (!open) throw new StoreOpenError('this runtime has no built-in SQLite (node:sqlite needs Node 22.13 or later)');
  return open(path);
}

/** Pets, the largest id, the sequence and the schema version of a petstore SQLite file. */
function sqliteFacts(db: SqliteConnection, where: string): BackupResult {
  const tables = db.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('pets', 'schema_migrations')",
  );
  if (tables.all().length !== 2) throw new StoreOpenError(`${where}: not a petstore SQLite store (no pets table)`);
  const pets = db.prepare('SELECT count(*) AS n, coalesce(max(id), 0) AS max FROM pets').get();
  const seq = db.prepare("SELECT coalesce(max(seq), 0) AS seq FROM sqlite_sequence WHERE name = 'pets'").get();
  const version = db.prepare('SELECT coalesce(max(version), 0) AS v FROM schema_migrations').get();
  return { maxId: num(pets, 'max'), pets: num(pets, 'n'), sequence: num(seq, 'seq'), schemaVersion: num(version, 'v') };
}

function fsyncFile(path: string): void {
  const fd = fs.openSync(path, 'r+');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function fsyncDir(dir: string): void {
  try {
    const fd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // The platform cannot open a directory to fsync it: keep the rename without it.
  }
}

const sqlText = (text: string) => `'${text.replaceAll("'", "''")}'`;

/**
 * Copies the SQLite store at `data` into the new file `to` (mode 0600) with `VACUUM INTO`, one
 * read transaction, so the copy is consistent while a server keeps serving.
 *
 * @example
 * await backupSqlite('/var/lib/petstore/petstore.db', '/backup/petstore-2027-01-01.db') // { pets: 1200, maxId: 1250, … }
 */
export async function backupSqlite(data: string, to: string): Promise<BackupResult> {
  if (!fs.existsSync(data)) throw new StoreOpenError(`--data: no SQLite file at ${data}`);
  const db = await sqlite(data);
  try {
    db.exec('PRAGMA busy_timeout = 10000');
    db.exec(`VACUUM INTO ${sqlText(to)}`);
  } finally {
    db.close();
  }
  fs.chmodSync(to, 0o600);
  fsyncFile(to);
  fsyncDir(dirname(to));
  const copy = await sqlite(to);
  try {
    return sqliteFacts(copy, to);
  } finally {
    copy.close();
  }
}

/**
 * Puts the SQLite backup `from` in place at `data`; stop the server first. The id sequence moves
 * past every id the replaced file issued when it can be read, else past the backup's by `idGap`.
 * The replaced file is kept aside as `<data>.replaced-<time>`, never deleted, and its owner owns
 * the restored file.
 *
 * @example
 * await restoreSqlite('/backup/petstore.db', '/var/lib/petstore/petstore.db', DEFAULT_ID_GAP, Date.now())
 */
export async function restoreSqlite(from: string, data: string, idGap: number, now: number): Promise<RestoreResult> {
  if (!fs.existsSync(from)) throw new StoreOpenError(`--from: no backup at ${from}`);
  const backup = await sqlite(from);
  let facts: BackupResult;
  try {
    facts = sqliteFacts(backup, from);
  } finally {
    backup.close();
  }
  if (facts.schemaVersion > SCHEMA_VERSION) {
    throw new StoreOpenError(
      `--from: ${from} has schema version ${facts.schemaVersion}, written by a newer petstore; restore it with that release`,
    );
  }
  const replaced = fs.existsSync(data) ? await replacedSequence(data) : undefined;
  const before = Math.max(facts.sequence, facts.maxId);
  const after = replaced !== undefined ? Math.max(before, replaced.id) : before + idGap;
  // Move versions too: a pet's strong ETag ("<id>-<version>") must never name two states, so
  // every restored version goes past any the replaced file may have given (its highest, else the
  // gap).
  const versionGap = replaced?.version ?? idGap;
  const dir = dirname(data);
  fs.mkdirSync(dir, { recursive: true });
  const temp = join(dir, `.${basename(data)}.restore-${process.pid}`);
  fs.copyFileSync(from, temp);
  fs.chmodSync(temp, 0o600);
  // The service's user keeps owning its file when root restores it.
  const owner = fs.existsSync(data) ? fs.statSync(data) : undefined;
  if (owner && process.getuid?.() === 0) fs.chownSync(temp, owner.uid, owner.gid);
  const db = await sqlite(temp);
  try {
    db.exec('BEGIN IMMEDIATE');
    db.exec("DELETE FROM sqlite_sequence WHERE name = 'pets'");
    db.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES ('pets', ?)").get(after);
    if (hasPetVersions(db)) db.prepare('UPDATE pets SET version = version + ?').get(versionGap);
    db.exec('COMMIT');
  } finally {
    db.close();
  }
  fsyncFile(temp);
  // The replaced file's WAL must not be applied to the restored one, so all three files move aside.
  const stamp = new Date(now).toISOString().replaceAll(':', '');
  const keptAside: string[] = [];
  for (const suffix of ['', '-wal', '-shm']) {
    if (!fs.existsSync(data + suffix)) continue;
    const aside = `${data}.replaced-${stamp}${suffix}`;
    fs.renameSync(data + suffix, aside);
    keptAside.push(aside);
  }
  fs.renameSync(temp, data);
  fsyncDir(dir);
  return { before, after, basis: replaced !== undefined ? 'replaced store' : 'gap', keptAside };
}

/**
 * The last id the SQLite store at `data` issued and its highest pet version (0 when pets have no
 * versions), or undefined when it cannot be read.
 */
async function replacedSequence(data: string): Promise<{ id: number; version: number } | undefined> {
  try {
    const db = await sqlite(data);
    try {
      const facts = sqliteFacts(db, data);
      const version = hasPetVersions(db)
        ? num(db.prepare('SELECT coalesce(max(version), 0) AS v FROM pets').get(), 'v')
        : 0;
      return { id: Math.max(facts.sequence, facts.maxId), version };
    } finally {
      db.close();
    }
  } catch {
    return undefined;
  }
}

/** Whether the SQLite database's pets have versions (schema 8 and later). */
function hasPetVersions(db: SqliteConnection): boolean {
  return db.prepare("SELECT 1 AS x FROM pragma_table_info('pets') WHERE name = 'version'").get() !== undefined;
}

/** A PostgreSQL client program (`pg_dump`, `pg_restore`): on PATH, else Debian's newest. */
function pgProgram(name: string): string {
  for (const dir of (process.env.PATH ?? '').split(':'))
    if (dir && fs.existsSync(join(dir, name))) return join(dir, name);
  const debian = fs.existsSync('/usr/lib/postgresql')
    ? fs
        .readdirSync('/usr/lib/postgresql')
        .sort((a, b) => Number(b) - Number(a))
        .map((v) => `/usr/lib/postgresql/${v}/bin/${name}`)
        .find((p) => fs.existsSync(p))
    : undefined;
  if (debian) return debian;
  throw new StoreOpenError(`${name} is not installed (Debian: apt-get install postgresql-client)`);
}

function runPg(name: string, args: string[]): void {
  const run = spawnSync(pgProgram(name), args, { encoding: 'utf8', stdio: ['ignore', 'inherit', 'pipe'] });
  if (run.status !== 0) throw new Error(`${name} failed (exit ${run.status ?? run.signal}): ${run.stderr.trim()}`);
}

/**
 * Dumps the database at `url` into `to` with `pg_dump --format=custom`: one snapshot, taken while
 * the fleet keeps serving, of pets, idempotency keys, consumers and keys (`--keys store`), the
 * audit trail and the webhook outbox.
 */
export function backupPostgres(url: string, to: string): void {
  runPg('pg_dump', ['--format=custom', '--no-owner', '--no-privileges', `--file=${to}`, `--dbname=${url}`]);
  fs.chmodSync(to, 0o600);
}

async function postgresFacts(url: string): Promise<BackupResult> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [pets] = await sql`SELECT count(*) AS n, coalesce(max(id), 0) AS max FROM pets`;
    const [seq] =
      await sql`SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('pets', 'id')::regclass), 0) AS seq`;
    const [version] = await sql`SELECT coalesce(max(version), 0) AS v FROM schema_migrations`;
    return {
      maxId: num(pets, 'max'),
      pets: num(pets, 'n'),
      sequence: num(seq, 'seq'),
      schemaVersion: num(version, 'v'),
    };
  } finally {
    await sql.end();
  }
}

/**
 * Restores the dump `from` into the empty database at `url` with `pg_restore` (one transaction,
 * objects owned by the connecting role), then moves the id and version sequences past the dump's
 * by `idGap`: the database the dump came from may have issued ids and versions since, and is not
 * read here.
 */
export async function restorePostgres(from: string, url: string, idGap: number): Promise<RestoreResult> {
  if (!fs.existsSync(from)) throw new StoreOpenError(`--from: no dump at ${from}`);
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [taken] = await sql`SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'public'`;
    if (num(taken, 'n') > 0) {
      throw new StoreOpenError(`--data: the database already has tables; restore into a new, empty one (createdb)`);
    }
    runPg('pg_restore', [
      '--exit-on-error',
      '--single-transaction',
      '--no-owner',
      '--no-privileges',
      `--dbname=${url}`,
      from,
    ]);
    const facts = await postgresFacts(url);
    if (facts.schemaVersion > SCHEMA_VERSION) {
      throw new StoreOpenError(
        `--from: the dump has schema version ${facts.schemaVersion}, written by a newer petstore`,
      );
    }
    const before = Math.max(facts.sequence, facts.maxId);
    const after = before + idGap;
    await sql`SELECT setval(pg_get_serial_sequence('pets', 'id'), ${after})`;
    // Move versions by the same gap: the source database may have given versions since the dump,
    // and a pet's strong ETag ("<id>-<version>") must never name two states.
    if (facts.schemaVersion >= PET_VERSIONS_SCHEMA) {
      await sql`SELECT setval(${PET_VERSIONS}, (SELECT last_value FROM ${sql(PET_VERSIONS)}) + ${idGap})`;
    }
    return { before, after, basis: 'gap', keptAside: [] };
  } finally {
    await sql.end();
  }
}

/** Whether `data` names a PostgreSQL database. */
export const isPostgres = (data: string) => POSTGRES_URL.test(data);
