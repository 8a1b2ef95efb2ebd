// The few synchronous SQLite calls the store needs (SqliteConnection), the same over bun:sqlite and
// node:sqlite: loadSqlite() opens the runtime's own driver; rollback() undoes an open transaction.
import type { Database } from 'bun:sqlite';
import type { DatabaseSync } from 'node:sqlite';

export type SqlValue = string | number | null;

/**
 * A prepared statement: positional `?` parameters, rows as plain objects. It has no `run()`: a
 * write that returns no row (an UPDATE, INSERT or DELETE) calls `get()` and ignores the result,
 * which runs the whole statement on both drivers, as SQLite makes a write's changes at its first
 * step.
 */
export interface SqliteStatement {
  /** The first row, or `undefined` when there is none (whatever the driver returns then). */
  get(...params: SqlValue[]): unknown;
  all(...params: SqlValue[]): unknown[];
}

/** The few synchronous calls the SQLite store needs, the same over bun:sqlite and node:sqlite. */
export interface SqliteConnection {
  readonly driver: 'bun:sqlite' | 'node:sqlite';
  exec(sql: string): void;
  prepare(sql: string): SqliteStatement;
  readonly inTransaction: boolean;
  close(): void;
}

export type SqliteOpener = (path: string) => SqliteConnection;

/**
 * The runtime's built-in SQLite: bun:sqlite on Bun, node:sqlite on Deno and on Node 22.13+;
 * `undefined` on a Node without it (Node 20). The driver is imported inside this function,
 * never at the top of a module, so a bundle built for Node does not try to load bun:sqlite.
 *
 * @example
 * const open = await loadSqlite(); if (open) open('data/petstore.db')
 */
export async function loadSqlite(): Promise<SqliteOpener | undefined> {
  if ('Bun' in globalThis) {
    const { Database } = await import('bun:sqlite');
    return (path) => bunConnection(new Database(path, { create: true, readwrite: true, strict: true }));
  }
  let mod: typeof import('node:sqlite');
  try {
    mod = await import('node:sqlite');
  } catch (err) {
    if ('Deno' in globalThis) throw err;
    return undefined;
  }
  const { DatabaseSync } = mod;
  return (path) => nodeConnection(new DatabaseSync(path));
}

function bunConnection(db: Database): SqliteConnection {
  return {
    driver: 'bun:sqlite',
    exec: (sql) => db.exec(sql),
    // db.query caches the statement by its text.
    prepare: (sql) => {
      const st = db.query<unknown, SqlValue[]>(sql);
      return { get: (...p) => st.get(...p) ?? undefined, all: (...p) => st.all(...p) };
    },
    get inTransaction() {
      return db.inTransaction;
    },
    close: () => db.close(),
  };
}

function nodeConnection(db: DatabaseSync): SqliteConnection {
  const cache = new Map<string, SqliteStatement>();
  return {
    driver: 'node:sqlite',
    exec: (sql) => db.exec(sql),
    prepare: (sql) => {
      let st = cache.get(sql);
      if (!st) {
        const prepared = db.prepare(sql);
        st = { get: (...p) => prepared.get(...p) ?? undefined, all: (...p) => prepared.all(...p) };
        cache.set(sql, st);
      }
      return st;
    },
    get inTransaction() {
      return db.isTransaction;
    },
    close: () => db.close(),
  };
}

/** Rolls back the open transaction, if any. */
export function rollback(db: SqliteConnection): void {
  try {
    if (db.inTransaction) db.exec('ROLLBACK');
  } catch {
    // SQLite may have rolled back on its own (e.g. after SQLITE_FULL); nothing is left to undo.
  }
}
