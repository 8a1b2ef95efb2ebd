import postgres from 'postgres';
import type { BaseBuild } from './base.ts';
import type { ServerName } from './report.ts';
import type { Running } from './servers.ts';
import { LIST, type Scenario, startOn, startSeeded, tokenOf } from './setup.ts';
import { throwawayPostgres } from './throwaway-postgres.ts';

/** Pets in each database, as in the table the PostgreSQL figures are compared with. */
export const FLEET_PETS = 100_000;

const token = tokenOf('bench');
export const FLEET_READS_SCENARIOS: Scenario[] = [
  {
    id: 'fleet-reads',
    label: `GET ${LIST} (PostgreSQL, no Redis; lone: SQLite)`,
    expect: 200,
    servers: ['petstore', 'base', 'lone'],
    data: 'postgres',
    load: { method: 'GET', path: LIST, token, addresses: 0 },
  },
  {
    id: 'fleet-page',
    label: 'GET /v1/pets?limit=20&cursor={random} (PostgreSQL, 100k pets)',
    expect: 200,
    servers: ['petstore', 'base'],
    data: 'postgres',
    load: { method: 'GET', path: '/v1/pets?limit=20&cursor={cursor}', token, addresses: 0, random: FLEET_PETS },
  },
  {
    id: 'fleet-post',
    label: 'POST /v1/pets (PostgreSQL, durable)',
    expect: 201,
    servers: ['petstore', 'base'],
    data: 'postgres',
    load: { method: 'POST', path: '/v1/pets', token, addresses: 0, body: '{"name":"Rex","categoryId":1}' },
  },
];

export interface PostgresFleet {
  readonly servers: Partial<Record<ServerName, Running>>;
  readonly logs: Partial<Record<ServerName, string>>;
  /** Stops the PostgreSQL server (after the products). */
  finish(): Promise<void>;
}

/**
 * A throwaway PostgreSQL, the product and the base build each on a database of FLEET_PETS pets,
 * and the product alone on a seeded SQLite file (`lone`).
 */
export async function startPostgresFleet(
  dir: string,
  binary: string,
  keysFile: string,
  base: BaseBuild | undefined,
): Promise<PostgresFleet> {
  const { urls, finish } = await throwawayPostgres('petstore_bench', ...(base ? ['petstore_base'] : []));
  try {
    const product = await filled([binary], dir, 'petstore-pg', keysFile, urls.petstore_bench ?? '');
    const servers: Partial<Record<ServerName, Running>> = { petstore: product[0] };
    const logs: Partial<Record<ServerName, string>> = { petstore: product[1] };
    if (base) {
      const [running, log] = await filled([base.binary], dir, 'base-pg', keysFile, urls.petstore_base ?? '');
      servers.base = running;
      logs.base = log;
    }
    [servers.lone] = await startSeeded([binary], dir, 'lone', keysFile);
    return { servers, logs, finish };
  } catch (err) {
    await finish();
    throw err;
  }
}

/** Starts the product (its migrations make the schema), then fills its database in one INSERT. */
async function filled(
  cmd: string[],
  dir: string,
  name: string,
  keysFile: string,
  url: string,
): Promise<[Running, string]> {
  const started = await startOn(cmd, dir, name, keysFile, url);
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    // As lib/million.ts fills its file: five categories, the three statuses, names that vary.
    await sql.unsafe(`
      INSERT INTO pets (name, category_id, status)
      SELECT 'Pet ' || i, 1 + i % 5, (ARRAY['available', 'pending', 'sold'])[1 + i % 3]
      FROM generate_series(1, ${FLEET_PETS}) AS i`);
    await sql.unsafe('VACUUM ANALYZE pets');
  } finally {
    await sql.end();
  }
  return started;
}
