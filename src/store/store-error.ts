// The errors a store call throws, their kinds (a fault, unavailable, a timeout), and how SQLite's
// errors map to them.

/**
 * A store call failed. Thrown as is for a fault of the call itself (a bug, a broken constraint),
 * which the API answers 500; the subclass `StoreUnavailableError` means the store cannot serve
 * now (503).
 */
export class StoreError extends Error {
  override name = 'StoreError';
}

/**
 * The store cannot take requests right now: disk full, read-only, I/O error, a lock held too
 * long, the server down or the connection lost. A retry may work, so the API answers 503, not
 * 500. Usually nothing was stored; a write whose connection was lost, or that timed out, may have
 * taken effect, and its message says so for the log (`OUTCOME_UNKNOWN`). The client gets 503
 * either way.
 *
 * @example
 * if (err instanceof StoreUnavailableError) throw new ApiError('service_unavailable', err.message)
 */
export class StoreUnavailableError extends StoreError {
  override name = 'StoreUnavailableError';
}

/**
 * A store call did not finish within `--store-timeout`: no connection or pool slot, no answer to
 * a query, or a SQLite file locked by another process. For the log, a write's message says
 * whether it may still have taken effect (`OUTCOME_UNKNOWN`) or certainly did not (a SQLite write
 * that never got the lock). Counted under its own `kind`, `timeout`.
 */
export class StoreTimeoutError extends StoreUnavailableError {
  override name = 'StoreTimeoutError';
}

/**
 * The database server cannot be reached: the connection is refused, lost, or not accepted while
 * the server starts or stops. `BoundAndTracedStore` then fails every call at once with this error
 * until a probe reaches the server again, instead of letting each request wait for its own
 * connection attempt.
 */
export class StoreUnreachableError extends StoreUnavailableError {
  override name = 'StoreUnreachableError';
}

/** Appended to a write's error message, for the log, when the write may still have taken effect. */
export const OUTCOME_UNKNOWN =
  'the outcome is unknown: the write may have taken effect (a create retried with the same Idempotency-Key answers it, or stores one)';

/** How `petstore_store_errors_total` counts a failed store call. */
export type StoreErrorKind = 'timeout' | 'unavailable' | 'error';

/**
 * The metric `kind` of an error thrown by a store call.
 *
 * @example
 * storeErrorKind(new StoreTimeoutError('list pets: no answer within 2000 ms')) // 'timeout'
 */
export function storeErrorKind(err: unknown): StoreErrorKind {
  if (err instanceof StoreTimeoutError) return 'timeout';
  return err instanceof StoreUnavailableError ? 'unavailable' : 'error';
}

/**
 * The store named by `--data` cannot be opened at start-up: an unwritable path, an unreachable
 * server, a database written by a newer petstore. `main` prints it as a data store error and
 * exits 2 before the port opens.
 */
export class StoreOpenError extends Error {
  override name = 'StoreOpenError';
}

/**
 * SQLite primary result codes that mean "the database cannot serve now", not "the query is wrong".
 */
const SQLITE_UNAVAILABLE: ReadonlyMap<number, string> = new Map([
  [5, 'database is locked'], // SQLITE_BUSY
  [6, 'database table is locked'], // SQLITE_LOCKED
  [7, 'out of memory'], // SQLITE_NOMEM
  [8, 'attempt to write a readonly database'], // SQLITE_READONLY
  [10, 'disk I/O error'], // SQLITE_IOERR
  [11, 'database disk image is malformed'], // SQLITE_CORRUPT
  [13, 'database or disk is full'], // SQLITE_FULL
  [14, 'unable to open database file'], // SQLITE_CANTOPEN
  [15, 'locking protocol'], // SQLITE_PROTOCOL
  [26, 'file is not a database'], // SQLITE_NOTADB
]);

/**
 * Wraps an error thrown by bun:sqlite or node:sqlite: `StoreUnavailableError` for the
 * environmental failures above, `StoreError` otherwise. bun:sqlite puts the extended code in
 * `errno`, Node's node:sqlite in `errcode`, and Deno's only in the message, so all three are read.
 *
 * @example
 * sqliteError(err, 'create pet') // StoreUnavailableError('create pet: database or disk is full')
 */
export function sqliteError(err: unknown, doing: string): StoreError {
  if (err instanceof StoreError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const code = numberField(err, 'errcode') ?? numberField(err, 'errno');
  const unavailable =
    code !== undefined
      ? SQLITE_UNAVAILABLE.has(code & 0xff)
      : [...SQLITE_UNAVAILABLE.values()].some((text) => message.includes(text));
  const Kind = unavailable ? StoreUnavailableError : StoreError;
  return new Kind(`${doing}: ${message}`, { cause: err });
}

/**
 * True for SQLITE_BUSY: another connection (another process) holds the lock this statement
 * needs. The store then waits without blocking the event loop, up to its lock wait.
 *
 * @example
 * isSqliteBusy(Object.assign(new Error('database is locked'), { errno: 5 })) // true
 */
export function isSqliteBusy(err: unknown): boolean {
  const code = numberField(err, 'errcode') ?? numberField(err, 'errno');
  if (code !== undefined) return (code & 0xff) === 5;
  return err instanceof Error && err.message.includes('database is locked');
}

function numberField(x: unknown, key: string): number | undefined {
  if (typeof x !== 'object' || x === null || !(key in x)) return undefined;
  const value: unknown = (x as Record<string, unknown>)[key];
  return typeof value === 'number' ? value : undefined;
}
