import { describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import { adminApp } from '../app.ts';
import { COSTED_OPERATIONS } from '../core/operation-ids.ts';
import { SlidingWindowLimiter } from '../gateway/gateway.ts';
import { keyRecords } from '../keys/file.ts';
import { documentOf, fileKeyAdmin, storeConsumerIdsIn, storeKeyAdmin } from '../keys/key-admin.ts';
import { changeKeysFile, readKeysDocument } from '../keys/locked-file.ts';
import { KeyTable } from '../keys/table.ts';
import { newKeyEntry } from '../keys/tokens.ts';
import { createLogger, silentLogger } from '../log.ts';
import { keyStoreOf } from '../store/key-store.ts';
import { SqliteStore } from '../store/sqlite/sqlite.ts';
import { loadSqlite, type SqliteOpener } from '../store/sqlite/sqlite-driver.ts';
import { ADMIN_OPERATIONS, ADMIN_PREFIX } from './admin-operations.ts';

interface ContractOperation {
  operationId?: string;
  'x-scopes'?: string[];
}
const contract = YAML.parse(readFileSync(join(import.meta.dir, '../../contract/admin.openapi.yaml'), 'utf8')) as {
  paths: Record<string, Record<string, ContractOperation>>;
  components: { schemas: Record<string, { properties?: Record<string, unknown>; propertyNames?: { enum: string[] } }> };
};
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const WEBHOOK_400 =
  'webhook: must be an object with exactly "url", an https:// URL to a public address (a host name, or an IP address written out) or http:// to loopback (127.0.0.1, [::1], localhost), and "secret", "whsec_" and the base64 of 24 to 64 random bytes (null: no notifications; the value is not shown).';
const honoPath = (path: string) => path.replace(/\{([^}]+)\}/g, ':$1');

describe('the admin table and contract/admin.openapi.yaml', () => {
  test('Costs names the public operations that cost something, as the operations table has them', () => {
    expect(contract.components.schemas.Costs?.propertyNames?.enum).toEqual([...COSTED_OPERATIONS]);
  });

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

  test('take the same fields in each body', () => {
    const fields = (schema: string) => Object.keys(contract.components.schemas[schema]?.properties ?? {}).sort();
    const bodies = Object.fromEntries(
      ADMIN_OPERATIONS.filter((op) => op.body).map((op) => [
        op.id,
        Object.keys((op.body as unknown as { entries: object }).entries).sort(),
      ]),
    );
    expect(bodies).toEqual({
      createConsumer: fields('NewConsumer'),
      updateConsumer: fields('ConsumerPatch'),
      addKey: fields('NewKey'),
      rotateKeys: fields('Rotation'),
    });
    expect(fields('NewConsumer')).toContain('webhook');
    expect(fields('ConsumerPatch')).toContain('thresholds');
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
      keyAdmin: fileKeyAdmin(path, () => {
        table = new KeyTable(keyRecords(readKeysDocument(path)));
      }),
      keyTable: () => table,
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
        'owner: is not a field of the body; its fields are name, plan, limits, ban, costs, enforce, webhook, thresholds.',
      ],
      [
        'POST',
        '/consumers/ops/keys',
        { scopes: ['admin', 'pets:read'] },
        'scopes: must be a list of one or more different scopes of pets:read, pets:write, orders:read, orders:write, admin, admin alone.',
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
        '/consumers',
        { name: 'acme', plan: 'pro', webhook: { url: 'http://hooks.example/q', secret: SECRET } },
        'webhook.url: must be an https:// URL, or http:// to a loopback address (127.0.0.1, [::1], localhost).',
      ],
      ['POST', '/consumers', { name: 'acme', plan: 'pro', webhook: { url: 'https://hooks.example/q' } }, WEBHOOK_400],
      ['PATCH', '/consumers/acme', { webhook: { url: 'https://hooks.example/q', secret: 'whsec_short' } }, WEBHOOK_400],
      [
        'PATCH',
        '/consumers/acme',
        { thresholds: [80, 80] },
        'thresholds: must be a list of 1 to 10 different integers from 1 to 100, percent of a quota (null: 80 and 100).',
      ],
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

  test("a key without scopes has every public scope, the orders' included; a key may have the orders' alone", async () => {
    const { call, table } = await setup();
    expect((await call('POST', '/consumers', { name: 'shop', plan: 'pro' })).status).toBe(201);
    const every = (await (await call('POST', '/consumers/shop/keys', { id: 'k1' })).json()) as { token: string };
    expect(table().find(every.token)).toMatchObject({
      scopes: ['pets:read', 'pets:write', 'orders:read', 'orders:write'],
    });
    const buyer = await call('POST', '/consumers/shop/keys', { id: 'k2', scopes: ['orders:read', 'orders:write'] });
    const bought = (await buyer.json()) as { token: string; scopes: string[] };
    expect([buyer.status, bought.scopes, table().find(bought.token)]).toMatchObject([
      201,
      ['orders:read', 'orders:write'],
      { scopes: ['orders:read', 'orders:write'] },
    ]);
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
    expect(table().find(issued.token)).toMatchObject({ consumer: { name: 'acme' } });
    expect(table().find(issued.token)).not.toHaveProperty('revokedAt');
    expect((await call('POST', '/consumers/acme/keys', { id: 'k1' })).status).toBe(409);
    expect((await call('DELETE', '/consumers/acme/keys/k1')).status).toBe(204);
    expect(table().find(issued.token)).toMatchObject({ revokedAt: expect.any(Number) });
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

/**
 * Over either key source: an admin key (consumer ops, key a1) and the gateway's table, reloaded
 * after each change as the server does; every answer, audit record and log line kept to grep.
 */
async function adminOver(source: 'file' | 'store') {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-admin-hooks-'));
  const path = join(dir, 'keys.json');
  const ops = newKeyEntry('ops', 'business');
  const store =
    source === 'store'
      ? SqliteStore.open({ path: join(dir, 'pets.db'), open: (await loadSqlite()) as SqliteOpener, log: silentLogger })
      : undefined;
  const keyStore = store ? keyStoreOf(store) : undefined;
  const read = async () => (keyStore ? documentOf((await keyStore.read()).consumers) : readKeysDocument(path));
  let table = new KeyTable([]);
  const reload = async () => {
    table = new KeyTable(keyRecords(await read()));
  };
  const keyAdmin = keyStore ? storeKeyAdmin(keyStore, reload) : fileKeyAdmin(path, reload);
  await keyAdmin.change(
    {
      actor: { kind: 'cli', user: 'test' },
      action: 'key.add',
      consumer: 'ops',
      key: 'a1',
      edit: () => ({
        consumers: [
          { name: 'ops', plan: 'business', keys: [{ id: 'a1', sha256: ops.entry.sha256, scopes: ['admin'] }] },
        ],
      }),
    },
    Date.now(),
  );
  const lines: string[] = [];
  const app = adminApp({
    keyAdmin,
    keyTable: () => table,
    limiter: new SlidingWindowLimiter(),
    log: createLogger({ level: 'debug', write: (l) => lines.push(l) }),
  });
  const answers: string[] = [];
  const call = async (method: string, sub: string, body?: unknown) => {
    const res = await app.request(ADMIN_PREFIX + sub, {
      method,
      headers: { Authorization: `Bearer ${ops.token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    answers.push(text);
    return { status: res.status, json: text ? (JSON.parse(text) as unknown) : undefined };
  };
  /** The gateway's view of consumer `name`, as the notifications read it. */
  const consumer = (name: string) => table.records().find((r) => r.consumer.name === name)?.consumer;
  /** Everything a secret must never be in: answers, the trail (as stored), log lines. */
  const exposed = async () => {
    const trail = keyStore
      ? JSON.stringify(await keyStore.audit(0, 1000))
      : readFileSync(`${path}.audit.jsonl`, 'utf8');
    return [...answers, trail, ...lines].join('\n');
  };
  return { call, consumer, exposed, close: async () => store?.close() };
}

describe.each(['file', 'store'] as const)('a webhook through the admin API over the key %s', (source) => {
  const url = 'https://hooks.example/quota';
  const other = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

  test('set, shown without its secret, kept by other changes, replaced, removed; never in an answer, the trail or a log', async () => {
    const { call, consumer, exposed, close } = await adminOver(source);
    try {
      const made = await call('POST', '/consumers', {
        name: 'acme',
        plan: 'pro',
        webhook: { url, secret: SECRET },
        thresholds: [50, 90],
      });
      expect([made.status, made.json]).toEqual([
        201,
        {
          name: 'acme',
          plan: 'pro',
          limits: { perMinute: 300, perDay: 10000 },
          webhook: { url },
          thresholds: [50, 90],
          keys: [],
        },
      ]);
      expect((await call('POST', '/consumers/acme/keys', { id: 'k1' })).status).toBe(201);
      // The gateway's consumer has the webhook with its secret: notifications follow.
      expect(consumer('acme')).toMatchObject({ webhook: { url, secret: SECRET }, thresholds: [50, 90] });

      // A change of something else keeps the webhook; thresholds null go back to 80 and 100.
      const patched = await call('PATCH', '/consumers/acme', {
        limits: { perMinute: 10, perDay: 100 },
        thresholds: null,
      });
      expect(patched.json).toMatchObject({ webhook: { url }, thresholds: [80, 100] });
      expect(consumer('acme')).toMatchObject({ webhook: { url, secret: SECRET }, thresholds: [80, 100] });
      // A new secret for the same URL.
      expect((await call('PATCH', '/consumers/acme', { webhook: { url, secret: other } })).status).toBe(200);
      expect(consumer('acme')?.webhook).toEqual({ url, secret: other });
      // A key revoked keeps the webhook too.
      expect((await call('DELETE', '/consumers/acme/keys/k1')).status).toBe(204);
      expect((await call('GET', '/consumers/acme')).json).toMatchObject({ webhook: { url }, thresholds: [80, 100] });

      const removed = await call('PATCH', '/consumers/acme', { webhook: null });
      expect(removed.json).toEqual({ name: 'acme', plan: 'pro', limits: { perMinute: 10, perDay: 100 }, keys: [] });
      expect((await call('GET', '/consumers/acme')).json).not.toHaveProperty('webhook');

      const audit = (await call('GET', '/audit?after=1')).json as { action: string; before: unknown; after: unknown }[];
      expect(audit.map((r) => [r.action, r.before, r.after])).toEqual([
        ['consumer.create', null, { plan: 'pro', webhook: { url, secret: '(set)' }, thresholds: [50, 90], keys: {} }],
        ['key.add', { keys: { k1: null } }, { keys: { k1: {} } }],
        [
          'consumer.update',
          { limits: null, thresholds: [50, 90] },
          { limits: { perMinute: 10, perDay: 100 }, thresholds: null },
        ],
        ['consumer.update', { webhook: { url, secret: '(set)' } }, { webhook: { url, secret: '(changed)' } }],
        ['key.revoke', { keys: { k1: {} } }, { keys: { k1: null } }],
        ['consumer.update', { webhook: { url, secret: '(set)' } }, { webhook: null }],
      ]);
      const everything = await exposed();
      expect(everything).toContain('"(changed)"'); // the trail is in what is searched
      for (const secret of [SECRET, other]) {
        expect(everything).not.toContain(secret);
        expect(everything).not.toContain(secret.slice(6, 30));
      }
    } finally {
      await close();
    }
  });
});

describe('consumer ids in the key store', () => {
  test('stored at start for the consumers stored without one: derived from the first key, then left alone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-admin-ids-'));
    const store = SqliteStore.open({
      path: join(dir, 'pets.db'),
      open: (await loadSqlite()) as SqliteOpener,
      log: silentLogger,
    });
    const keyStore = keyStoreOf(store) as NonNullable<ReturnType<typeof keyStoreOf>>;
    // As a release before consumer ids stored them.
    await keyStore.change(() => ({
      consumers: [
        { name: 'acme', plan: 'pro', keys: [{ id: 'k1', sha256: 'a'.repeat(64) }] },
        { name: 'zoo', plan: 'free', keys: [] },
      ],
      records: [],
    }));
    const version = (await keyStore.read()).version;
    expect(await storeConsumerIdsIn(keyStore)).toBe(true);
    const { consumers, version: after } = await keyStore.read();
    expect(consumers[0]?.id).toBe('con_097190f174413eabfe7a6b4831a511c2');
    expect(consumers[1]?.id).toMatch(/^con_[0-9a-f]{32}$/);
    expect(after).toBe(version + 1);
    expect(await storeConsumerIdsIn(keyStore)).toBe(false);
    expect((await keyStore.read()).version).toBe(after);
    await store.close();
  });
});
