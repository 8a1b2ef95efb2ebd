// Whether --data names PostgreSQL (POSTGRES_URL), the value as it may be logged (describeData(),
// without the password), and POOL_SIZE, the connections an instance's pool holds.
import { redactUrl } from '../../redact.ts';

/** A `--data` value naming a PostgreSQL server rather than a SQLite file. */
export const POSTGRES_URL = /^postgres(ql)?:\/\//i;

/**
 * The `--data` value safe to log: a PostgreSQL URL without its password. It lives here because
 * both `open.ts` and `postgres.ts` need it, and `open.ts` imports `postgres.ts`.
 *
 * @example
 * describeData('postgres://app:secret@db:5432/pets') // 'postgres://app:***@db:5432/pets'
 */
export function describeData(data: string): string {
  return POSTGRES_URL.test(data) ? redactUrl(data) : data;
}

/**
 * Connections in an instance's PostgreSQL pool; with `--workers`, divided among the workers
 * (src/serve/supervisor.ts).
 */
export const POOL_SIZE = 10;
