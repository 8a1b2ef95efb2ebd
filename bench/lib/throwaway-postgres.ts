/**
 * A throwaway PostgreSQL server for a bench run (scripts/with-postgres.sh), with the databases
 * it is asked for; `finish` stops the server.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import postgres from 'postgres';

const WITH_POSTGRES = join(import.meta.dir, '../../scripts/with-postgres.sh');

export interface ThrowawayPostgres {
  /** Each database asked for, by name, as a URL. */
  readonly urls: Readonly<Record<string, string>>;
  finish(): Promise<void>;
}

/**
 * Starts the server and makes `names` on it; a failure stops the server before it throws.
 *
 * @example
 * const { urls, finish } = await throwawayPostgres('petstore_bench')
 */
export async function throwawayPostgres(...names: string[]): Promise<ThrowawayPostgres> {
  const exports = execFileSync(WITH_POSTGRES, ['start'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const url = /_URL=(\S+)/.exec(exports)?.[1] ?? '';
  const clusterDir = /_DIR=(\S+)/.exec(exports)?.[1] ?? '';
  const finish = async () => void execFileSync(WITH_POSTGRES, ['stop', clusterDir], { stdio: 'inherit' });
  try {
    const admin = postgres(url, { max: 1, onnotice: () => {} });
    const urls: Record<string, string> = {};
    for (const name of names) {
      await admin.unsafe(`CREATE DATABASE ${name}`);
      const at = new URL(url);
      at.pathname = `/${name}`;
      urls[name] = at.toString();
    }
    await admin.end();
    return { urls, finish };
  } catch (err) {
    await finish();
    throw err;
  }
}
