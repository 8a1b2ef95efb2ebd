import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { testApp } from '../../test/testing.ts';
import { NO_SUCH_PATH } from '../core/api-error.ts';
import { OPERATION_IDS, QUOTA_READERS } from '../core/operation-ids.ts';
import { API_PREFIX, isApiPath, OPERATIONS } from './operations.ts';

interface ContractOperation {
  operationId?: string;
  deprecated?: boolean;
  'x-scopes'?: string[];
  'x-stability-level'?: string;
  'x-scalar-stability'?: string;
  'x-badges'?: { name: string; position?: string; color?: string }[];
}

const contract = YAML.parse(readFileSync(join(import.meta.dir, '../../contract/openapi.yaml'), 'utf8')) as {
  paths: Record<string, Record<string, ContractOperation>>;
};

/** `/pets/{petId}` as Hono spells it: `/pets/:petId`. */
const honoPath = (path: string) => path.replace(/\{([^}]+)\}/g, ':$1');

/** The facts the table and the contract must agree on, one line per operation. */
const fromContract = Object.entries(contract.paths)
  .flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
      .map(([method, op]) => ({
        id: op.operationId,
        method: method.toUpperCase(),
        path: honoPath(path),
        scope: op['x-scopes'],
        deprecated: op.deprecated === true,
        stability: op['x-stability-level'],
      })),
  )
  .sort((a, b) => String(a.id).localeCompare(String(b.id)));

const fromTable: unknown[] = OPERATIONS.map((op) => ({
  id: op.id,
  method: op.method,
  path: op.path,
  scope: op.scope === undefined ? [] : [op.scope],
  deprecated: op.deprecated !== undefined,
  stability: op.stability,
})).sort((a, b) => a.id.localeCompare(b.id));

/** Every operation of the contract, by id. */
const contractOperations = new Map(
  Object.values(contract.paths).flatMap((methods) =>
    Object.values(methods).flatMap((op) => (op.operationId ? [[op.operationId, op] as const] : [])),
  ),
);

/**
 * How the bundled Scalar shows a level: its own badge for stable and experimental, ours for beta.
 */
const SCALAR_FORM = {
  stable: { 'x-scalar-stability': 'stable' },
  experimental: { 'x-scalar-stability': 'experimental' },
  beta: { 'x-badges': [{ name: 'Beta', position: 'before', color: '#2563eb' }] },
};

describe('the table of operations and contract/openapi.yaml', () => {
  test('name the same operations: id, method, path, scope, deprecation and stability', () => {
    expect(fromTable).toEqual(fromContract);
  });

  test('every operation carries its stability level, and the form the docs page renders it in', () => {
    for (const op of OPERATIONS) {
      const level = op.stability ?? 'none';
      const documented = contractOperations.get(op.id) ?? {};
      expect({ id: op.id, level, form: pick(documented, ['x-scalar-stability', 'x-badges']) }).toEqual({
        id: op.id,
        level: expect.stringMatching(/^(stable|beta|experimental)$/),
        form: SCALAR_FORM[level as keyof typeof SCALAR_FORM],
      });
    }
  });

  test('an experimental operation is served only with --experimental; without it, it answers as an unknown path', async () => {
    const experimental = OPERATIONS.filter((op) => op.stability === 'experimental');
    expect(experimental.map((op) => op.id)).toEqual(['getInventory']);
    const off = testApp();
    const on = testApp({ experimental: true });
    for (const op of experimental) {
      const path = API_PREFIX + op.path.replace(/:[^/]+/g, '1');
      const hidden = await off.app.request(path, { method: op.method, headers: off.auth() });
      const unknown = await off.app.request(`${API_PREFIX}/no/such/path`, { method: op.method, headers: off.auth() });
      expect([hidden.status, hidden.headers.get('allow'), await hidden.json()]).toEqual([
        unknown.status,
        unknown.headers.get('allow'),
        await unknown.json(),
      ]);
      expect(hidden.status).toBe(404);
      const served = await on.app.request(path, { method: op.method, headers: on.auth() });
      expect(served.status).toBe(200);
    }
  });

  test('every operation of the table is routed under the API prefix (with --experimental)', async () => {
    const t = testApp({ experimental: true });
    for (const op of OPERATIONS) {
      const res = await t.app.request(API_PREFIX + op.path.replace(/:[^/]+/g, '1'), {
        method: op.method,
        headers: t.auth(),
      });
      const body = (await res.json()) as { message?: string };
      const unrouted = res.status === 405 || (res.status === 404 && body.message === NO_SUCH_PATH.message);
      expect({ id: op.id, unrouted }).toEqual({ id: op.id, unrouted: false });
    }
  });

  test('a deprecated operation says when it goes and what replaces it, from the table', async () => {
    const t = testApp();
    const res = await t.app.request(`${API_PREFIX}/pets/1`, { headers: t.auth() });
    expect([res.headers.get('deprecation'), res.headers.get('sunset'), res.headers.get('link')]).toEqual([
      '@1767225600',
      'Thu, 05 Dec 2030 00:00:00 GMT',
      '<../pets>; rel="successor-version"',
    ]);
  });
});

/** The members of `o` named in `keys` that it has. */
function pick(o: object, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([k]) => keys.includes(k)));
}

describe("the table's memo and waitsForDueOrderExpiry flags", () => {
  // A GET of pets shows their status, so it waits for the holds that ran out to expire (step 6):
  // one without `waitsForDueOrderExpiry` would show a pet `pending` past its hold. Each depends
  // only on its path and query and the store, so each is memoised too.
  test("every GET of pets waits for the due orders' expiry and is memoised, and no other operation does either", () => {
    const getsOfPets = OPERATIONS.filter(
      (op) => op.method === 'GET' && (op.path.startsWith('/pets') || op.path === '/store/inventory'),
    ).map((op) => op.id);
    expect(getsOfPets).toEqual(['listPets', 'getPet', 'getInventory']);
    expect(OPERATIONS.filter((op) => op.waitsForDueOrderExpiry).map((op) => op.id)).toEqual(getsOfPets);
    expect(OPERATIONS.filter((op) => op.memo).map((op) => op.id)).toEqual(getsOfPets);
  });
});

describe("the table and src/core/operation-ids.ts, which src/keys/ checks a plan's costs by", () => {
  test('list the same operation ids in the same order, and the same ones that read the quota', () => {
    expect(OPERATIONS.map((op) => op.id)).toEqual([...OPERATION_IDS]);
    expect(OPERATIONS.filter((op) => op.readsQuota).map((op) => op.id)).toEqual([...QUOTA_READERS]);
  });
});

describe('isApiPath', () => {
  test.each([
    ['/v1', true],
    ['/v1/', true],
    ['/v1/pets/7', true],
    ['/v10', false],
    ['/v1pets', false],
    ['/healthz', false],
  ])('%p -> %p', (path, expected) => {
    expect(isApiPath(path)).toBe(expected);
  });
});
