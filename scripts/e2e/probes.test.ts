// What an outsider tries from loopback against the server under test: webhook URLs that point
// inside the network or hide characters, bodies that echo or repeat their fields, public keys
// beside admin keys, admin keys that outlive themselves, and what /metrics shows of the admin port.
import { describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminKeysFile, adminUrl, callWithKey, runCommand, spawnServer } from '../../test/harness.ts';
import { newSecret } from '../../test/webhook-receiver.ts';

/** A keys file with an admin key (consumer ops, key a1) and a public consumer bob (key b1); their tokens. */
const keysFile = (...adminFlags: string[]) => adminKeysFile('bob', 'b1', ...adminFlags);
const call = callWithKey;

/** An admin key asked to outlive any admin key that makes it. */
const LASTING = { scopes: ['admin'], expiresAt: '2099-01-01T00:00:00Z' };
/** The 409 of an admin key, expiring at `limit`, asked to make an admin key that outlives it. */
const outlivesMaker = (limit: string) => ({
  code: 'conflict',
  message: `The admin key of this request expires at ${limit}; an admin key it makes expires no later.`,
  status: 409,
});

const PUBLIC_ONLY = 'webhooks go to public addresses, or http:// to loopback';
const bad = (message: string) => ({ code: 'invalid_request', message, status: 400 });

describe('webhook targets', () => {
  test('the admin API refuses webhook URLs inside the network, in odd numeric forms, or with hidden characters; keeps the normalised URL', async () => {
    const { file, admin } = await keysFile();
    const server = await spawnServer({ args: ['--keys', file, '--admin-port', '0'] });
    try {
      const base = adminUrl(server);
      const secret = newSecret();
      const patch = (url: string) => call(`${base}/consumers/bob`, admin, 'PATCH', { webhook: { url, secret } });
      const refused: [string, string][] = [
        [
          'https://169.254.169.254/latest/meta-data/',
          `must not point at a link-local address (169.254.169.254): ${PUBLIC_ONLY}`,
        ],
        ['https://10.0.0.1/x', `must not point at a private address (10.0.0.1): ${PUBLIC_ONLY}`],
        ['https://[fd00::1]/x', `must not point at a unique-local address ([fd00::1]): ${PUBLIC_ONLY}`],
        ['https://[fe80::1]/x', `must not point at a link-local address ([fe80::1]): ${PUBLIC_ONLY}`],
        ['https://0.0.0.0/x', `must not point at an unspecified address (0.0.0.0): ${PUBLIC_ONLY}`],
        ['https://[::]/x', `must not point at an unspecified address ([::]): ${PUBLIC_ONLY}`],
        [
          'https://[::ffff:a9fe:a9fe]/x',
          `must not point at an IPv4-mapped address ([::ffff:a9fe:a9fe]): ${PUBLIC_ONLY}`,
        ],
        [
          'https://2852039166/x',
          'must write an IPv4 address as four decimal numbers (169.254.169.254), not as one number, octal or hex',
        ],
        ['https:///x', 'must name a host after "//", with no user name, password or backslash'],
        ['https://:@hooks.example/x', 'must name a host after "//", with no user name, password or backslash'],
        [
          'https://evil.example\\@hooks.example/x',
          'must name a host after "//", with no user name, password or backslash',
        ],
        ['https://hooks.example/a\u2028b', 'must not hold control, bidirectional or invisible characters'],
        ['https://hooks.example/\u202egnp.x', 'must not hold control, bidirectional or invisible characters'],
        [`https://hooks.example/${'a'.repeat(5000)}`, 'must be at most 2048 characters'],
      ];
      for (const [url, message] of refused) {
        const res = await patch(url);
        expect([url, res.status, res.json]).toEqual([url, 400, bad(`webhook.url: ${message}.`)]);
      }
      const ok = await patch('https://Bücher.Example/hook');
      expect(ok.status).toBe(200);
      expect(ok.json?.webhook).toEqual({ url: 'https://xn--bcher-kva.example/hook' });
      const kept = JSON.parse(readFileSync(file, 'utf8')) as {
        consumers: { name: string; webhook?: { url: string } }[];
      };
      expect(kept.consumers.find((c) => c.name === 'bob')?.webhook?.url).toBe('https://xn--bcher-kva.example/hook');
      // The refused changes left no record; the trail holds one record per line, in ASCII.
      const trail = readFileSync(`${file}.audit.jsonl`, 'utf8');
      expect(
        trail
          .split('\n')
          .filter(Boolean)
          .map((l) => (JSON.parse(l) as { action: string }).action),
      ).toEqual(['key.add', 'key.add', 'consumer.update']);
      expect(/[^\x20-\x7e\n]/.test(trail)).toBe(false);
    } finally {
      await server.stop();
    }
  });

  test('a keys file with a webhook to a private address stops the server before it listens (exit 2)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-probes-'));
    const file = join(dir, 'keys.json');
    writeFileSync(
      file,
      JSON.stringify({
        consumers: [
          {
            name: 'bob',
            plan: 'free',
            webhook: { url: 'https://10.0.0.1/x', secret: newSecret() },
            keys: [{ sha256: 'a'.repeat(64) }],
          },
        ],
      }),
      { mode: 0o600 },
    );
    const run = await runCommand(['--keys', file, '--port', '0'], { PETSTORE_DATA: ':memory:' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      `consumers[0] ("bob").webhook.url: must not point at a private address (10.0.0.1): ${PUBLIC_ONLY}, got "https://10.0.0.1/x"`,
    );
    const flag = await runCommand(['--webhook-allow-cidr', '10.0.0.0'], { PETSTORE_DATA: ':memory:' });
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain(
      '--webhook-allow-cidr: expected CIDR blocks such as 10.20.0.0/16 (comma or space separated), got "10.0.0.0"',
    );
  });
});

describe('error bodies', () => {
  test('an unknown field is named up to 64 characters, escaped; one inside webhook is named with its path', async () => {
    const { file, admin, pub } = await keysFile();
    const server = await spawnServer({ args: ['--keys', file, '--admin-port', '0'] });
    try {
      const long = await call(`${server.url}/v1/pets`, pub, 'POST', {
        name: 'Rex',
        categoryId: 1,
        ['x'.repeat(65_000)]: 1,
      });
      expect(long.status).toBe(400);
      expect(long.json?.message).toBe(
        `${'x'.repeat(64)}…: is not a field of the body; its fields are name, categoryId, status.`,
      );
      expect(long.text.length).toBeLessThan(300);
      const markup = await call(`${server.url}/v1/pets`, pub, 'POST', {
        name: 'Rex',
        categoryId: 1,
        '<img src=x onerror=alert(1)>': 1,
      });
      expect(markup.json?.message).toBe(
        '\\u003cimg src=x onerror=alert(1)\\u003e: is not a field of the body; its fields are name, categoryId, status.',
      );
      const inner = await call(`${adminUrl(server)}/consumers/bob`, admin, 'PATCH', {
        webhook: { url: 'https://hooks.example/q', secret: newSecret(), secrett: 'x' },
      });
      expect(inner.json).toEqual(bad('webhook.secrett: is not a field of webhook; its fields are url, secret.'));
    } finally {
      await server.stop();
    }
  });
});

describe('repeated members', () => {
  test('a member given twice is a 400 on the public API and the admin API, nothing made; a scope given twice too', async () => {
    const { file, admin, pub } = await keysFile();
    const server = await spawnServer({ args: ['--keys', file, '--admin-port', '0'] });
    try {
      const base = adminUrl(server);
      const twice = await call(
        `${base}/consumers/bob/keys`,
        admin,
        'POST',
        '{"id":"dupk","scopes":["pets:read"],"scopes":["admin"]}',
      );
      expect(twice.json).toEqual(bad('scopes: is given twice; send each field once.'));
      const inner = await call(
        `${base}/consumers/bob`,
        admin,
        'PATCH',
        `{"webhook":{"url":"https://hooks.example/q","url":"https://10.0.0.1/","secret":"${newSecret()}"}}`,
      );
      expect(inner.json).toEqual(bad('webhook.url: is given twice; send each field once.'));
      const scopes = await call(`${base}/consumers/bob/keys`, admin, 'POST', {
        id: 'dups',
        scopes: ['pets:read', 'pets:read'],
      });
      expect(scopes.json).toEqual(
        bad(
          'scopes: must be a list of one or more different scopes of pets:read, pets:write, orders:read, orders:write, admin, admin alone.',
        ),
      );
      const keys = (await call(`${base}/consumers/bob`, admin)).json?.keys as { id: string }[];
      expect(keys.map((k) => k.id)).toEqual(['b1']);
      const pet = await call(`${server.url}/v1/pets`, pub, 'POST', '{"name":"Rex","categoryId":1,"name":"<b>"}');
      expect(pet.json).toEqual(bad('name: is given twice; send each field once.'));
      expect((await call(`${server.url}/v1/pets`, pub)).text).toBe('[]');
    } finally {
      await server.stop();
    }
  });
});

describe('admin keys', () => {
  test("a public key cannot join a consumer that holds an admin key (nor the other way round): its quota and ban stay the admins'", async () => {
    const { file, admin } = await keysFile();
    const server = await spawnServer({ args: ['--keys', file, '--admin-port', '0'] });
    try {
      const base = adminUrl(server);
      const message =
        'consumers[0] ("ops").keys[1]: admin keys and public keys cannot share a consumer (they would share its quota and ban); give admin keys a consumer of their own.';
      expect((await call(`${base}/consumers/ops/keys`, admin, 'POST', { id: 'opspub' })).json).toEqual(bad(message));
      expect(
        (await call(`${base}/consumers/bob/keys`, admin, 'POST', { id: 'bobadm', scopes: ['admin'] })).json,
      ).toEqual(bad(message.replace('consumers[0] ("ops")', 'consumers[1] ("bob")')));
      // Nothing was added: the consumer still has its one admin key.
      const ops = await call(`${base}/consumers/ops`, admin);
      expect(((ops.json?.keys ?? []) as { id: string }[]).map((k) => k.id)).toEqual(['a1']);
      const cli = await runCommand(['keys', 'add', '--keys', file, '--consumer', 'ops', '--id', 'pub2']);
      expect(cli.code).toBe(2);
      expect(cli.stderr).toContain(message.slice(0, -1));
    } finally {
      await server.stop();
    }
  });

  test('an admin key an admin key makes, on its own consumer or another, expires no later than the admin key', async () => {
    const { file, admin } = await keysFile('--expires', '1h');
    const server = await spawnServer({ args: ['--keys', file, '--admin-port', '0'] });
    try {
      const base = adminUrl(server);
      const own = await call(`${base}/consumers/ops`, admin);
      const limit = ((own.json?.keys ?? []) as { expiresAt: string }[])[0]?.expiresAt ?? '';
      expect(limit).toMatch(/^\d{4}-\d\d-\d\dT/);
      const added = await call(`${base}/consumers/ops/keys`, admin, 'POST', { id: 'next', scopes: ['admin'] });
      expect([added.status, added.json?.expiresAt]).toEqual([201, limit]);
      const later = await call(`${base}/consumers/ops/keys`, admin, 'POST', { id: 'forever', ...LASTING });
      expect(later.json).toEqual(outlivesMaker(limit));
      // A public key is not an admin key: the asking key's end does not bound it.
      const other = await call(`${base}/consumers/bob/keys`, admin, 'POST', { id: 'b2' });
      expect([other.status, other.json?.expiresAt]).toEqual([201, null]);
    } finally {
      await server.stop();
    }
  });

  test('an expiring admin key cannot mint lasting admin keys on another consumer, nor rotate longer-lived ones away', async () => {
    const { file, admin } = await keysFile();
    const added = await runCommand(
      ['keys', 'add', '--keys', file, '--consumer', 'tempops', '--plan', 'business', '--id', 't1'].concat([
        '--scopes',
        'admin',
        '--expires',
        '1h',
      ]),
    );
    const temp = added.stdout.trim();
    const server = await spawnServer({ args: ['--keys', file, '--admin-port', '0'] });
    try {
      const base = adminUrl(server);
      const tempops = (await call(`${base}/consumers/tempops`, admin)).json?.keys as { expiresAt: string }[];
      const limit = tempops[0]?.expiresAt ?? '';
      expect(limit).toMatch(/^\d{4}-\d\d-\d\dT/);
      // Create a consumer, then give it an admin key: it ends with the key that made it.
      const made = await call(`${base}/consumers`, temp, 'POST', { name: 'shadowops', plan: 'business' });
      expect(made.status).toBe(201);
      const forever = await call(`${base}/consumers/shadowops/keys`, temp, 'POST', {
        id: 'forever',
        scopes: ['admin'],
      });
      expect([forever.status, forever.json?.expiresAt]).toEqual([201, limit]);
      const later = await call(`${base}/consumers/shadowops/keys`, temp, 'POST', { id: 'later', ...LASTING });
      expect(later.json).toEqual(outlivesMaker(limit));
      // Rotating the permanent admin key a1 away would leave ops a successor ending with tempops's key: refused, a1 kept.
      const rotated = await call(`${base}/consumers/ops/rotate`, temp, 'POST', { overlap: '1d', scopes: ['admin'] });
      expect(rotated.json).toEqual({
        code: 'conflict',
        message: `The admin key of this request expires at ${limit}, before key a1 of consumer ops; their successor would expire with it. Rotate them with an admin key that outlives them.`,
        status: 409,
      });
      const ops = (await call(`${base}/consumers/ops`, admin)).json?.keys as { id: string; expiresAt: string | null }[];
      expect(ops.map((k) => [k.id, k.expiresAt])).toEqual([['a1', null]]);
      // Keys that end no later than the asking key rotate; their successor ends with it too.
      const next = await call(`${base}/consumers/shadowops/rotate`, temp, 'POST', { overlap: '1m', id: 'next' });
      expect([next.status, next.json?.id, next.json?.scopes, next.json?.expiresAt]).toEqual([
        201,
        'next',
        ['admin'],
        limit,
      ]);
      // A permanent admin key still makes permanent ones.
      const lasting = await call(`${base}/consumers/shadowops/keys`, admin, 'POST', {
        id: 'lasting',
        scopes: ['admin'],
      });
      expect([lasting.status, lasting.json?.expiresAt]).toEqual([201, null]);
    } finally {
      await server.stop();
    }
  });

  test('/metrics counts the admin port under operation="admin", failed logins included, and keeps an admin key\'s last use', async () => {
    const { file, admin } = await keysFile();
    const server = await spawnServer({ args: ['--keys', file, '--admin-port', '0', '--metrics'] });
    try {
      const base = adminUrl(server);
      const before = Math.floor(Date.now() / 1000);
      expect((await call(`${base}/consumers`, admin)).status).toBe(200);
      expect((await call(`${base}/audit`, admin)).status).toBe(200);
      for (let i = 0; i < 3; i++) expect((await call(`${base}/consumers`, `psk_guess-${i}`)).status).toBe(401);
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      expect(metrics).toContain('petstore_http_requests_total{operation="admin",status="200"} 2');
      expect(metrics).toContain('petstore_http_requests_total{operation="admin",status="401"} 3');
      expect(metrics).toContain('petstore_http_request_duration_seconds_count{operation="admin"} 5');
      const used = /petstore_key_last_used_timestamp_seconds\{consumer="ops",key="a1"\} (\d+)/.exec(metrics)?.[1];
      expect(Number(used)).toBeGreaterThanOrEqual(before);
    } finally {
      await server.stop();
    }
  });
});
