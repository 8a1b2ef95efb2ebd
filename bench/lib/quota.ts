/**
 * The bench's "list with a month window and costs" scenario: the list path for a key whose plan
 * has a monthly quota and costs, to compare with `list` (a key with neither) on the same server.
 *
 * Kept apart from setup.ts's KEYS: a build from before monthly quotas and costs (BENCH_BASE)
 * refuses a keys file naming them, so only the product gets `writeQuotaKeys`'s file (the bench
 * keys plus QUOTA_KEY) and the scenario runs on the product alone.
 */
import { KEYS, LIST, type Scenario, tokenOf, writeKeysFile } from './setup.ts';

/**
 * Quotas out of reach of any run (the keys file's largest) with a month window, and costs on
 * every costed operation, so each request reads its cost and spends it in three windows.
 */
export const QUOTA_KEY = {
  name: 'quota',
  plan: 'enterprise',
  limits: { perMinute: 1_000_000_000, perDay: 1_000_000_000, perMonth: 1_000_000_000 },
  costs: { listPets: 1, getPet: 1, createPet: 5 },
};

export const QUOTA_SCENARIO: Scenario = {
  id: 'quota',
  label: `GET ${LIST} with a month window and costs`,
  expect: 200,
  servers: ['petstore'],
  load: { method: 'GET', path: LIST, token: tokenOf(QUOTA_KEY.name), addresses: 0 },
};

/** The product's keys file: setup.ts's KEYS and QUOTA_KEY. */
export function writeQuotaKeys(dir: string): string {
  return writeKeysFile(dir, 'keys-quota.json', [...KEYS, QUOTA_KEY]).file;
}
