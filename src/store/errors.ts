/** A store operation failed for a reason other than the store being unreachable. */
export class StoreError extends Error {
  override name = 'StoreError';
}

/**
 * The store cannot take requests right now: disk full, read-only, I/O error, database locked
 * past the busy timeout, server down or connection lost. Nothing was stored; a retry may work,
 * so the API answers it with 503 rather than 500.
 *
 * @example
 * if (err instanceof StoreUnavailableError) throw new ApiError('service_unavailable', err.message)
 */
export class StoreUnavailableError extends StoreError {
  override name = 'StoreUnavailableError';
}

/**
 * The store named by `--data` cannot be opened at start-up: unwritable path, unreachable
 * server, a database written by a newer petstore. `main` prints it like a configuration error
 * and exits 2 before the port opens (the store knows nothing of the command line above it).
 */
export class StoreOpenError extends Error {
  override name = 'StoreOpenError';
}

/** SQLite primary result codes that mean "the database cannot serve now", not "the query is wrong". */
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
 * environmental failures above, `StoreError` otherwise. bun:sqlite gives the extended code as
 * `errno`, Node's node:sqlite as `errcode`, Deno's only the message, so all are looked at.
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

function numberField(x: unknown, key: string): number | undefined {
  if (typeof x !== 'object' || x === null || !(key in x)) return undefined;
  const value: unknown = (x as Record<string, unknown>)[key];
  return typeof value === 'number' ? value : undefined;
}
