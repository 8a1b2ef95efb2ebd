import { describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import { adminApp } from '../app.ts';
import { keyRecords } from '../gateway/keys/file.ts';
import { fileKeyAdmin } from '../gateway/keys/source.ts';
import { changeKeysFile, readKeysDocument } from '../gateway/keys/store-file.ts';
import { KeyTable } from '../gateway/keys/table.ts';
import { newKeyEntry } from '../gateway/keys/tokens.ts';
import { SlidingWindowLimiter } from '../gateway/limiter/memory.ts';
import { ADMIN_OPERATIONS, ADMIN_PREFIX } from './operations.ts';

interface ContractOperation {
  operationId?: string;
  'x-scopes'?: string[];
}
const contract = YAML.parse(readFileSync(join(import.meta.dir, '../../contract/admin.openapi.yaml'), 'utf8')) as {
  paths: Record<string, Record<string, ContractOperation>>;
};
const honoPath = (path: string) => path.replace(/\{([^}]+)\}/g, ':$1');

describe('the admin table and contract/admin.openapi.yaml', () => {
  test('name the same operations: id, method, path and scope', () => {
    const fromContract = Object.entries(contract.paths)
      .flatMap(([path, methods]) =>
        Object.entries(methods).map(([method, op]) => ({
          id: op.operationId,
          method: method.toUpperCase(),
          path: honoPath(path),
          scope: op['x-scopes'],
        })),
      )
      .sort((a, b) => String(a.id).localeCompare(String(b.id)));
    const fromTable: unknown[] = ADMIN_OPERATIONS.map((op) => ({
      id: op.id,
      method: op.method,
      path: op.path,
      scope: [op.scope],
    })).sort((a, b) => a.id.localeCompare(b.id));
    expect(fromTable).toEqual(fromContract);
  });
});

describe('the admin app over a keys file', () => {
  const setup = async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'petstore-admin-')), 'keys.json');
    const admin = newKeyEntry('ops', 'business');
    const actor = { kind: 'cli', user: 'test' } as const;
    await changeKeysFile(
      path,
      {
        actor,
        action: 'key.add',
        consumer: 'ops',
        key: 'a1',
        edit: () => ({
          consumers: [
            { name: 'ops', plan: 'business', keys: [{ id: 'a1', sha256: admin.entry.sha256, scopes: ['admin'] }] },
          ],
        }),
      },
      Date.now(),
    );
    let table = new KeyTable(keyRecords(readKeysDocument(path)));
    const app = adminApp({
      admin: fileKeyAdmin(path, () => {
        table = new KeyTable(keyRecords(readKeysDocument(path)));
      }),
      keys: () => table,
      limiter: new SlidingWindowLimiter(),
    });
    const call = (method: string, sub: string, body?: unknown) =>
      app.request(ADMIN_PREFIX + sub, {
        method,
        headers: { Authorization: `Bearer ${admin.token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    return { path, call, table: () => table };
  };

  test("every body the table takes is refused in people's words, naming the field", async () => {
    const { call } = await setup();
    const cases: [string, string, unknown, string][] = [
      [
        'POST',
        '/consumers',
        { name: 'a b', plan: 'pro' },
        'name: must be 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or a digit.',
      ],
      ['POST', '/consumers', { name: 'acme' }, 'plan: is required; must be one of free, pro, business, enterprise.'],
      ['POST', '/consumers', { name: 'acme', plan: 'enterprise' }, 'limits: is required for the enterprise plan.'],
      [
        'POST',
        '/consumers',
        { name: 'acme', plan: 'pro', owner: 'x' },
        'owner: is not a field of the body; its fields are name, plan, limits, ban, costs, enforce.',
      ],
      [
        'POST',
        '/consumers/ops/keys',
        { scopes: ['admin', 'pets:read'] },
        'scopes: must be a list of one or more of pets:read, pets:write, admin, admin alone.',
      ],
      [
        'POST',
        '/consumers/ops/rotate',
        {},
        'overlap: is required; must be a duration: a number and s, m, h or d, such as 7d.',
      ],
      ['GET', '/audit?limit=0', undefined, 'limit: must be an integer from 1 to 100.'],
      [
        'POST',
        '/consumers/ops/keys',
        { notBefore: '2030-01-01T00:00:00Z', expiresAt: '2029-01-01T00:00:00Z' },
        'consumers[0] ("ops").keys[1].notBefore: "2030-01-01T00:00:00Z" is not before expiresAt "2029-01-01T00:00:00Z".',
      ],
    ];
    for (const [method, sub, body, message] of cases) {
      const res = await call(method, sub, body);
      expect([method, sub, res.status, await res.json()]).toEqual([
        method,
        sub,
        400,
        { code: 'invalid_request', message, status: 400 },
      ]);
    }
  });

  test('a consumer, a key, a duplicate, a revocation; each change in the trail with the admin key', async () => {
    const { call, table } = await setup();
    expect((await call('POST', '/consumers', { name: 'acme', plan: 'pro' })).status).toBe(201);
    expect(await (await call('POST', '/consumers', { name: 'acme', plan: 'free' })).json()).toEqual({
      code: 'conflict',
      message: 'A consumer named acme exists.',
      status: 409,
    });
    const issued = (await (await call('POST', '/consumers/acme/keys', { id: 'k1' })).json()) as { token: string };
    expect(table().lookup(issued.token)?.consumer.name).toBe('acme');
    expect((await call('POST', '/consumers/acme/keys', { id: 'k1' })).status).toBe(409);
    expect((await call('DELETE', '/consumers/acme/keys/k1')).status).toBe(204);
    expect(table().lookup(issued.token)).toBeUndefined();
    expect((await call('DELETE', '/consumers/acme/keys/k1')).status).toBe(404);
    expect((await call('GET', '/consumers/nobody')).status).toBe(404);
    // The admin key of a request cannot remove itself: no one locks themselves out.
    const own = {
      code: 'conflict',
      message: 'Consumer ops holds the admin key of this request; change it with another admin key.',
      status: 409,
    };
    expect(await (await call('DELETE', '/consumers/ops/keys/a1')).json()).toEqual(own);
    expect(await (await call('DELETE', '/consumers/ops')).json()).toEqual(own);
    expect(await (await call('PATCH', '/consumers/ops', { limits: { perMinute: 1, perDay: 1 } })).json()).toEqual(own);
    expect(await (await call('POST', '/consumers/ops/rotate', { overlap: '0s' })).json()).toEqual(own);
    // A change of limits keeps what it does not name: costs and report-only stay.
    const costed = await call('POST', '/consumers', {
      name: 'metered',
      plan: 'pro',
      costs: { createPet: 5 },
      enforce: false,
    });
    expect(costed.status).toBe(201);
    const patched = await call('PATCH', '/consumers/metered', {
      limits: { perMinute: 100, perDay: 1000, perMonth: 20000 },
    });
    expect(await patched.json()).toEqual({
      name: 'metered',
      plan: 'pro',
      limits: { perMinute: 100, perDay: 1000, perMonth: 20000 },
      costs: { createPet: 5 },
      enforce: false,
      keys: [],
    });
    expect(await (await call('PATCH', '/consumers/metered', { costs: null, enforce: null })).json()).toEqual({
      name: 'metered',
      plan: 'pro',
      limits: { perMinute: 100, perDay: 1000, perMonth: 20000 },
      keys: [],
    });
    const audit = (await (await call('GET', '/audit?after=1')).json()) as { action: string; actor: unknown }[];
    expect(audit.map((r) => [r.action, r.actor])).toEqual([
      ['consumer.create', { kind: 'admin', consumer: 'ops', key: 'a1' }],
      ['key.add', { kind: 'admin', consumer: 'ops', key: 'a1' }],
      ['key.revoke', { kind: 'admin', consumer: 'ops', key: 'a1' }],
      ['consumer.create', { kind: 'admin', consumer: 'ops', key: 'a1' }],
      ['consumer.update', { kind: 'admin', consumer: 'ops', key: 'a1' }],
      ['consumer.update', { kind: 'admin', consumer: 'ops', key: 'a1' }],
    ]);
    expect(JSON.stringify(audit)).not.toContain(issued.token.slice(4, 20));
  });
});
