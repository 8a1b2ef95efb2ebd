// A PostgreSQL transaction that a lost connection cannot crash: transaction() wraps postgres.js's
// begin() for the store, the outbox and the key store; CONNECTION_LOST names such losses.
import postgres from 'postgres';

/**
 * Client error codes for a connection that broke with queries on it (the server-side equivalents
 * are 57P01/57P02 and class 08): a write may or may not have committed. This alone does not mean
 * the database is unreachable (a session ended by a server restart fails its next query), so the
 * next call just reconnects.
 */
export const CONNECTION_LOST = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
]);

/**
 * `sql.begin(fn)`, safe when the connection dies under it. postgres.js sends ROLLBACK after a
 * failed callback, and on a closed connection that write throws where nothing can catch it, which
 * ends the process (porsager/postgres#1208). So when a dead connection fails the callback, the
 * callback never settles; the connection's close rejects the transaction, and the server rolls it
 * back.
 */
export function transaction<T>(
  sql: postgres.Sql,
  fn: (tx: postgres.TransactionSql) => Promise<T>,
  mode?: string,
): Promise<T> {
  const guarded = async (tx: postgres.TransactionSql): Promise<T> => {
    try {
      return await fn(tx);
    } catch (err) {
      if (connectionDied(err)) return new Promise<never>(() => {});
      throw err;
    }
  };
  return (mode === undefined ? sql.begin(guarded) : sql.begin(mode, guarded)) as Promise<T>;
}

function connectionDied(err: unknown): boolean {
  if (err instanceof postgres.PostgresError) return err.severity === 'FATAL' || err.severity === 'PANIC';
  const code = typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : '';
  return CONNECTION_LOST.has(code);
}
