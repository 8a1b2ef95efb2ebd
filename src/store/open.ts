// Opens the store `--data` names: memory (`:memory:`), a SQLite file, or PostgreSQL (a
// `postgres://` URL), each wrapped in the time bound that answers 503 for a store too slow.
import process from 'node:process';
import type { Logger } from '../log.ts';
import { MemoryStore } from './memory-store.ts';
import { POSTGRES_URL } from './postgres/postgres-url.ts';
import type { LockReleases } from './sqlite/sqlite.ts';
import type { DataStore } from './store.ts';
import { StoreOpenError } from './store-error.ts';
import { type BoundAndTracedStore, boundAndTraced, DEFAULT_STORE_TIMEOUT_MS } from './wrappers/bound-and-traced.ts';

/** The `--data` value that keeps pets in memory only. */
export const MEMORY = ':memory:';

export { describeData } from './postgres/postgres-url.ts';

export interface OpenStoreOptions {
  /** `--store-timeout` in ms: the longest a store call may take before the request gets a 503. */
  readonly timeoutMs?: number;
  /** PostgreSQL: connections in this store's pool (a worker's share); default `POOL_SIZE`. */
  readonly poolSize?: number;
  /**
   * SQLite: the counter the workers' connections increment as each write transaction ends
   * (`SqliteStoreOptions.lockReleases`).
   */
  readonly lockReleases?: LockReleases;
}

/**
 * Opens the store that `--data` names (`:memory:`, a `postgres://` URL, or a SQLite file) as a
 * `BoundAndTracedStore`. Each backend is imported only when chosen, so the Node bundle never loads
 * bun:sqlite and a SQLite user never loads the PostgreSQL client. Throws `StoreOpenError` (exit 2)
 * when the store cannot be opened.
 *
 * @example
 * await openStore('./data/petstore.db', log, { timeoutMs: 2_000 })
 */
export async function openStore(
  data: string,
  log: Logger,
  { timeoutMs = DEFAULT_STORE_TIMEOUT_MS, poolSize, lockReleases }: OpenStoreOptions = {},
): Promise<BoundAndTracedStore> {
  const backend = await openBackend(data, log, timeoutMs, poolSize, lockReleases);
  const system = backend instanceof MemoryStore ? undefined : POSTGRES_URL.test(data) ? 'postgresql' : 'sqlite';
  return boundAndTraced(backend, { timeoutMs, log, ...(system ? { system } : {}) });
}

async function openBackend(
  data: string,
  log: Logger,
  timeoutMs: number,
  poolSize: number | undefined,
  lockReleases: LockReleases | undefined,
): Promise<DataStore> {
  if (data === MEMORY) {
    log.warn('pets are kept in memory only and are lost at exit', { data });
    return new MemoryStore();
  }
  if (data.trim() === '') throw new StoreOpenError('--data: expected a file path, a postgres:// URL or :memory:');
  if (POSTGRES_URL.test(data)) {
    const { PostgresStore } = await import('./postgres/postgres.ts');
    return PostgresStore.open({ url: data, log, timeoutMs, ...(poolSize === undefined ? {} : { poolSize }) });
  }
  const { loadSqlite } = await import('./sqlite/sqlite-driver.ts');
  const open = await loadSqlite();
  // A durable store was asked for: refuse to start rather than fall back to memory silently.
  if (!open) throw new StoreOpenError(noSqlite(data));
  const { SqliteStore } = await import('./sqlite/sqlite.ts');
  return SqliteStore.open({
    path: data,
    open,
    log,
    lockWaitMs: lockWaitFor(timeoutMs),
    ...(lockReleases ? { lockReleases } : {}),
  });
}

/** Why a SQLite file cannot be opened on this runtime, and what to run instead. */
export function noSqlite(data: string): string {
  return (
    `--data ${data}: this runtime (Node ${process.version}) has no built-in SQLite; ` +
    'run the petstore binary (Bun), Deno 2, or Node 22.13 or later, ' +
    'or keep pets in PostgreSQL (--data postgres://...) or in memory only (--data :memory:)'
  );
}

/**
 * SQLite stops waiting for another process's lock a little before the time bound, so the log
 * says nothing was stored rather than that the outcome is unknown (the client gets the same 503
 * either way).
 */
function lockWaitFor(timeoutMs: number): number {
  return Math.max(0, timeoutMs - Math.min(200, timeoutMs / 10));
}

export type { LockReleases };
