import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { testApp } from '../../test/testing.ts';
import { NO_SUCH_PATH } from '../core/errors.ts';
import { API_PREFIX, isApiPath, OPERATIONS } from './operations.ts';

interface ContractOperation {
  operationId?: string;
  deprecated?: boolean;
  'x-scopes'?: string[];
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
      })),
  )
  .sort((a, b) => String(a.id).localeCompare(String(b.id)));

const fromTable: unknown[] = OPERATIONS.map((op) => ({
  id: op.id,
  method: op.method,
  path: op.path,
  scope: op.scope === undefined ? [] : [op.scope],
  deprecated: op.deprecated !== undefined,
})).sort((a, b) => a.id.localeCompare(b.id));

describe('the table of operations and contract/openapi.yaml', () => {
  test('name the same operations: id, method, path, scope and deprecation', () => {
    expect(fromTable).toEqual(fromContract);
  });

  test('every operation of the table is routed under the API prefix', async () => {
    const t = testApp();
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
