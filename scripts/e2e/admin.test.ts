// The admin API (--admin-port) of the server under test over a keys file: only admin keys on the
// admin port, never on the public one; consumers and keys made, rotated and revoked through it
// are in force at once and in the keys file and its audit trail; no token hash anywhere.
import { describe, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  adminKeysFile,
  adminUrl,
  callWithKey,
  runCommand,
  serverLacksSqlite,
  spawnServer,
} from '../../test/harness.ts';
import { newSecret, startReceiver } from '../../test/webhook-receiver.ts';

const sha = (token: string) => createHash('sha256').update(token).digest('hex');

const keysFile = () => adminKeysFile();
const call = callWithKey;

describe('the admin API over a keys file', () => {
  test('admin keys only on the admin port, public keys only on the public one; /admin/v1 is a 404 on the public port', async () => {
    const { file, admin, pub } = await keysFile();
    const server = await spawnServer({ args: ['--keys', file, '--admin-port', '0'] });
    try {
      const base = adminUrl(server);
      expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/admin\/v1$/);
      expect((await call(`${base}/consumers`, admin)).status).toBe(200);
      expect((await call(`${base}/consumers`, pub)).json).toEqual({
        code: 'insufficient_scope',
        message: 'The API key lacks the scope admin that this operation needs.',
        status: 403,
      });
      expect((await call(`${server.url}/v1/pets`, admin)).json).toEqual({
        code: 'insufficient_scope',
        message: 'The API key lacks the scope pets:read that this operation needs.',
        status: 403,
      });
      // An operation that needs no scope refuses an admin key all the same.
      expect((await call(`${server.url}/v1/rate_limit`, admin)).json).toEqual({
        code: 'insufficient_scope',
        message: 'An admin key works on the admin API (--admin-port) only.',
        status: 403,
      });
      // And an admin path no operation serves refuses a public key before saying 404.
      expect((await call(`${base}/nothing`, pub)).status).toBe(403);
      expect((await call(`${base}/nothing`, admin)).status).toBe(404);
      expect((await call(`${server.url}/v1/pets`, pub)).status).toBe(200);
      expect((await call(`${server.url}/admin/v1/consumers`, admin)).json).toEqual({
        code: 'not_found',
        message: 'No resource exists at this path.',
        status: 404,
      });
      expect((await call(`${base}/consumers`, `psk_${'x'.repeat(43)}`)).status).toBe(401);
      // Failed attempts count against the address as on the public port: the 61st in a minute is a 429.
      const statuses: number[] = [];
      for (let i = 0; i < 61; i++) statuses.push((await call(`${base}/consumers`, `psk_guess-${i}`)).status);
      expect(statuses.slice(0, 59).every((s) => s === 401)).toBe(true);
      expect(statuses.at(-1)).toBe(429);
      expect((await call(`${base}/consumers`, admin)).status).toBe(200);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  test('a consumer and key made, rotated and revoked: in force at once, in the file and its trail; no hash anywhere', async () => {
    const { file, admin } = await keysFile();
    const server = await spawnServer({ args: ['--keys', file, '--admin-port', '0'] });
    const base = adminUrl(server);
    const tokens: string[] = [admin];
    try {
      const made = await call(`${base}/consumers`, admin, 'POST', { name: 'shop', plan: 'pro' });
      expect([made.status, made.json]).toEqual([
        201,
        { name: 'shop', plan: 'pro', limits: { perMinute: 300, perDay: 10000 }, keys: [] },
      ]);
      const key = await call(`${base}/consumers/shop/keys`, admin, 'POST', { id: 'k1', scopes: ['pets:read'] });
      expect(key.status).toBe(201);
      const token = String(key.json?.token);
      tokens.push(token);
      expect(key.json).toEqual({
        consumer: 'shop',
        id: 'k1',
        scopes: ['pets:read'],
        expiresAt: null,
        notBefore: null,
        state: 'active',
        token: expect.stringMatching(/^psk_[0-9A-Za-z]{38}$/),
      });
      expect((await call(`${server.url}/v1/pets`, token)).status).toBe(200);

      const rotated = await call(`${base}/consumers/shop/rotate`, admin, 'POST', { overlap: '1h', id: 'k2' });
      expect(rotated.status).toBe(201);
      const next = String(rotated.json?.token);
      tokens.push(next);
      // One quota across the old and the new key.
      const old = await fetch(`${server.url}/v1/pets`, { headers: { Authorization: `Bearer ${token}` } });
      const fresh = await fetch(`${server.url}/v1/pets`, { headers: { Authorization: `Bearer ${next}` } });
      expect([old.status, fresh.status]).toEqual([200, 200]);
      expect(Number(old.headers.get('x-ratelimit-remaining')) - 1).toBe(
        Number(fresh.headers.get('x-ratelimit-remaining')),
      );

      expect((await call(`${base}/consumers/shop/keys/k1`, admin, 'DELETE')).status).toBe(204);
      expect((await call(`${server.url}/v1/pets`, token)).status).toBe(401);
      expect((await call(`${base}/consumers/shop`, admin, 'PATCH', { plan: 'business' })).json?.plan).toBe('business');
      expect((await call(`${base}/consumers/shop`, admin, 'DELETE')).status).toBe(204);
      expect((await call(`${server.url}/v1/pets`, next)).status).toBe(401);

      const audit = await call(`${base}/audit?after=2`, admin);
      const actor = { kind: 'admin', consumer: 'ops', key: 'a1' };
      expect(
        (audit.json as unknown as { action: string; actor: unknown; key?: string }[]).map((r) => [
          r.action,
          r.key,
          r.actor,
        ]),
      ).toEqual([
        ['consumer.create', undefined, actor],
        ['key.add', 'k1', actor],
        ['key.rotate', 'k2', actor],
        ['key.revoke', 'k1', actor],
        ['consumer.update', undefined, actor],
        ['consumer.delete', undefined, actor],
      ]);
      const page = await fetch(`${base}/audit?limit=3`, { headers: { Authorization: `Bearer ${admin}` } });
      expect(page.headers.get('link')).toBe('<audit?limit=3&after=3>; rel="next"');
      const listed = await runCommand(['keys', 'audit', '--keys', file, '--json']);
      expect((JSON.parse(listed.stdout) as { records: unknown[] }).records.length).toBe(8);

      // No token (bar the one 201 that made it) and no hash in any answer, log line, the file or its trail.
      const answers = [made.text, (await call(`${base}/consumers`, admin)).text, audit.text];
      const written = [readFileSync(`${file}.audit.jsonl`, 'utf8'), ...server.lines, ...answers];
      for (const t of tokens) {
        for (const secret of [t, t.slice(4, 24), sha(t)]) expect(written.filter((w) => w.includes(secret))).toEqual([]);
      }
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  test('--admin-port without --keys stops the start with exit 2', async () => {
    const run = await runCommand(['--port', '0', '--admin-port', '0', '--data', ':memory:']);
    expect([run.code, run.stderr.split('\n')[0]]).toEqual([
      2,
      'petstore: configuration: --admin-port: needs --keys FILE or --keys store, where the admin API keeps consumers and keys',
    ]);
  });
});

// Node before 22.13 has no SQLite, so no key store: the file source is tested there alone.
describe.each(serverLacksSqlite() ? (['file'] as const) : (['file', 'store'] as const))(
  'quota notifications set through the admin API, keys in the %s',
  (source) => {
    test('a consumer made with a webhook gets a signed event; the secret is in no answer, trail or log line; null removes it', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'petstore-admin-hooks-'));
      const data = join(dir, 'pets.db');
      const file = join(dir, 'keys.json');
      const where = source === 'file' ? ['--keys', file] : ['--data', data];
      const added = await runCommand([
        'keys',
        'add',
        ...where,
        '--consumer',
        'ops',
        '--plan',
        'business',
        '--id',
        'a1',
        '--scopes',
        'admin',
      ]);
      const admin = added.stdout.trim();
      const secret = newSecret();
      const hooks = await startReceiver(secret);
      const server = await spawnServer({
        args: [
          '--keys',
          source === 'file' ? file : 'store',
          '--data',
          serverLacksSqlite() ? ':memory:' : data,
          '--admin-port',
          '0',
        ],
      });
      try {
        const base = adminUrl(server);
        const made = await call(`${base}/consumers`, admin, 'POST', {
          name: 'hooked',
          plan: 'pro',
          limits: { perMinute: 100, perDay: 4 },
          webhook: { url: hooks.url, secret },
          thresholds: [50],
        });
        expect([made.status, made.json]).toEqual([
          201,
          {
            name: 'hooked',
            plan: 'pro',
            limits: { perMinute: 100, perDay: 4 },
            webhook: { url: hooks.url },
            thresholds: [50],
            keys: [],
          },
        ]);
        const token = String((await call(`${base}/consumers/hooked/keys`, admin, 'POST', { id: 'k1' })).json?.token);
        const statuses: number[] = [];
        for (let i = 0; i < 2; i++) statuses.push((await call(`${server.url}/v1/pets?limit=1`, token)).status);
        expect(statuses).toEqual([200, 200]);
        const [event] = await hooks.waitFor(1, 10_000);
        expect(event?.body?.type).toBe('quota.threshold');
        expect(event?.body?.data).toMatchObject({
          consumer: 'hooked',
          window: 'day',
          threshold: 50,
          limit: 4,
          used: 2,
        });

        const removed = await call(`${base}/consumers/hooked`, admin, 'PATCH', { webhook: null });
        expect(removed.json).not.toHaveProperty('webhook');
        const got = await call(`${base}/consumers/hooked`, admin);
        expect(got.json).not.toHaveProperty('webhook');
        const audit = await call(`${base}/audit`, admin);
        expect(audit.text).toContain(`"webhook":{"url":${JSON.stringify(hooks.url)},"secret":"(set)"}`);

        const trail =
          source === 'file'
            ? readFileSync(`${file}.audit.jsonl`, 'utf8')
            : (await runCommand(['keys', 'audit', '--data', data, '--json'])).stdout;
        const written = [made.text, removed.text, got.text, audit.text, trail, ...server.lines];
        for (const part of [secret, secret.slice(6, 30)]) expect(written.filter((w) => w.includes(part))).toEqual([]);
      } finally {
        await hooks.close();
        expect(await server.stop()).toBe(0);
      }
    });
  },
);
