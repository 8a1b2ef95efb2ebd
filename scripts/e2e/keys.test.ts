// Key lifecycle against the server under test (PETSTORE_CMD: the binary, Deno or Node): the
// `petstore keys` commands on a real file, consumers whose keys share one quota, scopes (403),
// expiry (401), SIGHUP pick-up, a rotation under load, and the per-consumer metrics.
import { describe, expect, test } from 'bun:test';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Running, runCommand, spawnServer, waitForLine } from '../../test/harness.ts';

const sha = (token: string) => createHash('sha256').update(token).digest('hex');
const tmp = () => mkdtempSync(join(tmpdir(), 'petstore-keys-'));
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const iso = (ms: number) => new Date(ms).toISOString();

function writeFile(doc: unknown, dir = tmp()): string {
  const path = join(dir, 'keys.json');
  writeFileSync(path, JSON.stringify(doc), { mode: 0o600 });
  return path;
}

/** Waits for a JSON log line with `msg`, after `from` lines already seen. */
async function logged(server: Running, msg: string, from = 0, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const line = server.lines.slice(from).find((l) => l.startsWith('{') && l.includes(`"msg":"${msg}"`));
    if (line) return JSON.parse(line) as Record<string, unknown>;
    if (Date.now() > deadline) throw new Error(`no "${msg}" in:\n${server.lines.join('\n')}`);
    await Bun.sleep(20);
  }
}

async function get(server: Running, token: string, path = '/v1/pets?limit=1') {
  const res = await fetch(server.url + path, { headers: bearer(token) });
  await res.arrayBuffer();
  return res;
}

describe('petstore keys', () => {
  test('add prints the token alone on stdout and the id on stderr; the file keeps only the hash, its mode and its JSON form', async () => {
    const file = writeFile({ keys: [{ name: 'legacy', sha256: 'a'.repeat(64), plan: 'free' }] });
    chmodSync(file, 0o640);
    const add = await runCommand([
      'keys',
      'add',
      '--keys',
      file,
      '--consumer',
      'acme',
      '--plan',
      'pro',
      '--scopes',
      'pets:read',
      '--id',
      'k1',
    ]);
    expect(add.code).toBe(0);
    expect(add.stdout).toMatch(/^psk_[0-9A-Za-z]{38}\n$/);
    expect(add.stderr).toContain('key id: k1 (consumer acme;');
    const token = add.stdout.trim();
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain(token);
    // The consumer made is given an identity of its own: `con_` and 128 random bits in hex.
    const id = (JSON.parse(text) as { consumers: { id?: string }[] }).consumers[0]?.id;
    expect(id).toMatch(/^con_[0-9a-f]{32}$/);
    expect(JSON.parse(text)).toEqual({
      keys: [{ name: 'legacy', sha256: 'a'.repeat(64), plan: 'free' }],
      consumers: [
        {
          id,
          name: 'acme',
          plan: 'pro',
          keys: [{ id: 'k1', sha256: sha(token), scopes: ['pets:read'] }],
        },
      ],
    });
    expect(statSync(file).mode & 0o777).toBe(0o640);

    const list = await runCommand(['keys', 'list', '--keys', file, '--json']);
    expect(list.code).toBe(0);
    expect(list.stdout).not.toContain(sha(token));
    expect(JSON.parse(list.stdout)).toEqual({
      keys: [
        {
          consumer: 'legacy',
          plan: 'free',
          key: 'legacy',
          scopes: ['pets:read', 'pets:write', 'orders:read', 'orders:write'],
          notBefore: null,
          expiresAt: null,
          state: 'active',
        },
        {
          consumer: 'acme',
          plan: 'pro',
          key: 'k1',
          scopes: ['pets:read'],
          notBefore: null,
          expiresAt: null,
          state: 'active',
        },
      ],
      consumersWithoutKeys: [],
    });

    // As root, the file keeps its owner too (written by root, owned by the service's user).
    if (process.getuid?.() === 0) {
      chownSync(file, 65534, 65534);
      expect((await runCommand(['keys', 'add', '--keys', file, '--consumer', 'acme'])).code).toBe(0);
      expect([statSync(file).uid, statSync(file).gid, statSync(file).mode & 0o777]).toEqual([65534, 65534, 0o640]);
    }

    const revoke = await runCommand(['keys', 'revoke', '--keys', file, '--consumer', 'acme', '--key', 'k1']);
    expect(revoke.code).toBe(0);
    const left = JSON.parse(readFileSync(file, 'utf8')).consumers[0].keys.map((k: { id?: string }) => k.id);
    expect(left).toEqual(process.getuid?.() === 0 ? [undefined] : []);
    const missing = await runCommand(['keys', 'revoke', '--keys', file, '--consumer', 'acme', '--key', 'k1']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--key: consumer "acme" has no key "k1" (it has: ');
  });

  test('every change appends one record to FILE.audit.jsonl: when, who, what, before and after; keys audit prints it', async () => {
    const file = join(tmp(), 'keys.json');
    const started = Date.now();
    const add = await runCommand(['keys', 'add', '--keys', file, '--consumer', 'acme', '--plan', 'pro', '--id', 'k1']);
    const rotate = await runCommand([
      'keys',
      'rotate',
      '--keys',
      file,
      '--consumer',
      'acme',
      '--overlap',
      '1d',
      '--id',
      'k2',
    ]);
    const revoke = await runCommand(['keys', 'revoke', '--keys', file, '--consumer', 'acme', '--key', 'k1']);
    expect([add.code, rotate.code, revoke.code]).toEqual([0, 0, 0]);
    const audit = await runCommand(['keys', 'audit', '--keys', file, '--json']);
    expect(audit.code).toBe(0);
    const { records } = JSON.parse(audit.stdout) as { records: Record<string, unknown>[] };
    const user = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();
    const expiry = (JSON.parse(readFileSync(file, 'utf8')).consumers[0].keys as { id: string; expiresAt?: string }[])[0]
      ?.expiresAt;
    expect(records).toEqual([
      {
        id: 1,
        at: expect.any(String),
        actor: { kind: 'cli', user },
        action: 'key.add',
        consumer: 'acme',
        key: 'k1',
        before: null,
        after: { plan: 'pro', keys: { k1: {} } },
      },
      {
        id: 2,
        at: expect.any(String),
        actor: { kind: 'cli', user },
        action: 'key.rotate',
        consumer: 'acme',
        key: 'k2',
        before: { keys: { k1: {}, k2: null } },
        after: { keys: { k1: { expiresAt: expect.any(String) }, k2: {} } },
      },
      {
        id: 3,
        at: expect.any(String),
        actor: { kind: 'cli', user },
        action: 'key.revoke',
        consumer: 'acme',
        key: 'k1',
        before: { keys: { k1: { expiresAt: expect.any(String) } } },
        after: { keys: { k1: null } },
      },
    ]);
    expect(expiry).toBeUndefined(); // k1 is gone; k2 has no date
    for (const r of records) expect(Math.abs(Date.parse(String(r.at)) - started)).toBeLessThan(60_000);
    const trail = readFileSync(`${file}.audit.jsonl`, 'utf8');
    expect(trail.split('\n').length).toBe(4);
    for (const token of [add.stdout.trim(), rotate.stdout.trim()]) {
      for (const secret of [token, token.slice(4, 24), sha(token), sha(token).slice(0, 8)])
        expect(trail).not.toContain(secret);
    }
    expect(statSync(`${file}.audit.jsonl`).mode & 0o777).toBe(0o600);
    const table = await runCommand(['keys', 'audit', '--keys', file, '--after', '2']);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID +AT +ACTOR +ACTION +CONSUMER +KEY +CHANGE$/);
    expect(table.stdout).toContain(`  cli:${user}  key.revoke  acme      k1   {"keys":{"k1":{"expiresAt":"`);
    expect(table.stdout.trimEnd().split('\n').length).toBe(2);
  });

  test("the trail names the CLI's user by its uid, whatever $USER says; keys audit prints every cell escaped", async () => {
    const file = join(tmp(), 'keys.json');
    const forged = 'root\u001b[31mRED\u001b[0m\n{"at":"x"}';
    const add = await runCommand(['keys', 'add', '--keys', file, '--consumer', 'acme', '--plan', 'pro', '--id', 'k1'], {
      USER: forged,
      LOGNAME: forged,
    });
    expect(add.code).toBe(0);
    const user = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();
    const trail = readFileSync(`${file}.audit.jsonl`, 'utf8');
    expect((JSON.parse(trail) as { actor: unknown }).actor).toEqual({ kind: 'cli', user });
    // A record written by hand (or by an older version) with escape sequences, a line break and U+202E in it.
    const hostile = {
      ...JSON.parse(trail),
      actor: { kind: 'cli', user: forged },
      consumer: 'acme\u001b[2J',
      key: 'k\u202e2',
    };
    writeFileSync(`${file}.audit.jsonl`, `${trail}${JSON.stringify(hostile)}\n`);
    const table = await runCommand(['keys', 'audit', '--keys', file]);
    expect(table.code).toBe(0);
    const rows = table.stdout.trimEnd().split('\n');
    expect(rows.length).toBe(3);
    expect(rows.filter((row) => /[^\x20-\x7e]/.test(row))).toEqual([]);
    expect(rows[2]).toContain(
      'cli:root\\u001b[31mRED\\u001b[0m\\u000a{"at":"x"}  key.add  acme\\u001b[2J  k\\u202e2  ',
    );
  });

  test('each command prints its own --help on stdout and exits 0; bad usage names that --help and exits 2', async () => {
    const runs = await Promise.all(
      [
        ['keys', '--help'],
        ['keys', 'add', '--help'],
        ['keys', 'list', '--help'],
        ['healthcheck', '--help'],
      ].map((a) => runCommand(a)),
    );
    expect(runs.map((r) => [r.code, r.stdout.split('\n')[0], r.stderr])).toEqual([
      [0, 'Usage:', ''],
      [0, 'Usage: petstore keys add [--keys FILE] [--data URL] --consumer NAME [--plan PLAN] [--scopes S,S]', ''],
      [0, 'Usage: petstore keys list [--keys FILE] [--data URL] [--json]', ''],
      [0, 'Usage: petstore healthcheck [--port N] [--host H]', ''],
    ]);
    expect(runs[0]?.stdout).toContain('\n  petstore keys revoke [--keys FILE] [--data URL] --consumer NAME --key ID\n');
    const bad = await runCommand(['keys', 'rotate', '--keys', join(tmp(), 'keys.json'), '--consumer', 'acme']);
    expect([bad.code, bad.stdout, bad.stderr]).toEqual([
      2,
      '',
      'petstore: configuration: --overlap: required\nRun petstore keys rotate --help for usage.\n',
    ]);
  });

  test('8 keys add at once all land, each with its own token', async () => {
    const file = join(tmp(), 'keys.json');
    const runs = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        runCommand(['keys', 'add', '--keys', file, '--consumer', 'team', '--plan', 'free', '--id', `k${i}`]),
      ),
    );
    expect(runs.map((r) => r.code)).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { consumers: { keys: { id: string; sha256: string }[] }[] };
    const keys = doc.consumers[0]?.keys ?? [];
    expect(keys.map((k) => k.id).sort()).toEqual(['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7']);
    expect(new Set(keys.map((k) => k.sha256))).toEqual(new Set(runs.map((r) => sha(r.stdout.trim()))));
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  test.each([
    [
      { expiresAt: '2027-13-01' },
      'consumers[0] ("acme").keys[0].expiresAt: must be an RFC 3339 date-time such as 2027-02-20T00:00:00Z, got "2027-13-01"',
    ],
    [
      { scopes: ['pets:admin'] },
      'consumers[0] ("acme").keys[0].scopes[0]: must be one of pets:read, pets:write, orders:read, orders:write, admin, got "pets:admin"',
    ],
  ])('a bad value stops the start with exit 2 and says where: %p', async (extra, message) => {
    const file = writeFile({
      consumers: [{ name: 'acme', plan: 'pro', keys: [{ sha256: 'a'.repeat(64), ...extra }] }],
    });
    const run = await runCommand(['--port', '0', '--keys', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`petstore: keys file: ${message}\n`);
  });

  test('a duplicate hash and a legacy entry named like a consumer stop the start with exit 2', async () => {
    const dup = writeFile({
      keys: [{ name: 'acme', sha256: 'b'.repeat(64), plan: 'free' }],
      consumers: [{ name: 'acme', plan: 'pro', keys: [{ sha256: 'b'.repeat(64) }] }],
    });
    const run = await runCommand(['--port', '0', '--keys', dup]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'petstore: keys file: consumers[0] ("acme").name: "acme" is also the name of keys[0] ("acme"), a {"keys":[...]} entry; each consumer needs its own name',
    );
  });
});

describe('a server with consumers', () => {
  test('each 401 is logged with its reason; every answer is the same generic 401', async () => {
    // A key revoked by `keys revoke` leaves a tombstone (its hash) in the file's `revoked`.
    const file = join(tmp(), 'keys.json');
    const add = await runCommand([
      'keys',
      'add',
      '--keys',
      file,
      '--consumer',
      'acme',
      '--plan',
      'pro',
      '--id',
      'gone',
    ]);
    expect(add.code).toBe(0);
    const gone = add.stdout.trim();
    const live = await runCommand(['keys', 'add', '--keys', file, '--consumer', 'acme', '--id', 'live']);
    expect(live.code).toBe(0);
    const revoke = await runCommand(['keys', 'revoke', '--keys', file, '--consumer', 'acme', '--key', 'gone']);
    expect(revoke.code).toBe(0);
    const doc = JSON.parse(readFileSync(file, 'utf8'));
    expect(doc.revoked).toEqual([
      { sha256: sha(gone), consumer: 'acme', key: 'gone', revokedAt: expect.stringMatching(/^\d{4}-.+Z$/) },
    ]);
    const dated = {
      ...doc,
      consumers: doc.consumers.map((c: { keys: object[] }) => ({
        ...c,
        keys: [
          ...c.keys,
          { id: 'old', sha256: sha('psk_e2e-old'), expiresAt: '2020-01-01T00:00:00Z' },
          { id: 'next', sha256: sha('psk_e2e-next'), notBefore: '2099-01-01T00:00:00Z' },
        ],
      })),
    };
    writeFileSync(file, JSON.stringify(dated), { mode: 0o600 });
    // The checksummed shape with its last character changed: the checksum no longer matches.
    const badChecksum = `${gone.slice(0, -1)}${gone.endsWith('0') ? '1' : '0'}`;
    const server = await spawnServer({ args: ['--keys', file, '--metrics'] });
    try {
      const cases = [
        ['Basic dXNlcjpwYXNz', 'malformed', undefined],
        [`Bearer ${badChecksum}`, 'bad_checksum', undefined],
        [`Bearer psk_${'x'.repeat(43)}`, 'unknown', undefined],
        [`Bearer ${gone}`, 'revoked', 'gone'],
        ['Bearer psk_e2e-old', 'expired', 'old'],
        ['Bearer psk_e2e-next', 'not_yet_valid', 'next'],
      ] as const;
      for (const [authorization, credential, key] of cases) {
        const res = await fetch(`${server.url}/v1/pets?limit=1`, { headers: { authorization } });
        expect([credential, res.status, res.headers.get('www-authenticate'), await res.json()]).toEqual([
          credential,
          401,
          'Bearer realm="petstore", error="invalid_token"',
          { code: 'unauthorized', message: 'The API key is malformed or unknown.', status: 401 },
        ]);
        const line = await waitForLine(server, (l) => l.includes(`"credential":"${credential}"`));
        expect(line).toMatchObject({ msg: 'request', status: 401, client: '127.0.0.1', credential });
        if (key) expect(line).toMatchObject({ consumer: 'acme', key });
        else expect(line.consumer).toBeUndefined();
        // The log names the reason, never the token or its hash.
        const text = JSON.stringify(line);
        expect([text.includes(authorization.split(' ')[1] ?? ''), text.includes(sha(gone))]).toEqual([false, false]);
      }
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      expect(metrics).toContain('\npetstore_consumer_refusals_total{consumer="acme",reason="key_revoked"} 1\n');
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  test('two keys of a free consumer share 60 a minute; scopes, expiry and metrics per consumer', async () => {
    const now = Date.now();
    const file = writeFile({
      consumers: [
        {
          name: 'acme',
          plan: 'free',
          keys: [
            { id: 'one', sha256: sha('psk_e2e-one'), expiresAt: iso(now + 86_400_000) },
            { id: 'two', sha256: sha('psk_e2e-two'), scopes: ['pets:read'] },
            { id: 'old', sha256: sha('psk_e2e-old'), expiresAt: '2020-01-01T00:00:00Z' },
            { id: 'next', sha256: sha('psk_e2e-next'), notBefore: '2099-01-01T00:00:00Z' },
          ],
        },
      ],
    });
    const server = await spawnServer({ args: ['--keys', file, '--metrics'] });
    try {
      const post = await fetch(`${server.url}/v1/pets`, {
        method: 'POST',
        headers: { ...bearer('psk_e2e-two'), 'Content-Type': 'application/json' },
        body: '{"name":"Rex","categoryId":1}',
      });
      expect(post.status).toBe(403);
      expect(await post.json()).toEqual({
        code: 'insufficient_scope',
        message: 'The API key lacks the scope pets:write that this operation needs.',
        status: 403,
      });
      expect(post.headers.get('www-authenticate')).toBe(
        'Bearer realm="petstore", error="insufficient_scope", scope="pets:write"',
      );
      expect(post.headers.get('x-ratelimit-remaining')).toBe('59');
      expect(await (await fetch(`${server.url}/v1/pets`, { headers: bearer('psk_e2e-one') })).json()).toEqual([]);

      const remaining: string[] = [];
      for (let i = 0; i < 29; i++)
        remaining.push((await get(server, 'psk_e2e-one')).headers.get('x-ratelimit-remaining') ?? '');
      for (let i = 0; i < 29; i++)
        remaining.push((await get(server, 'psk_e2e-two')).headers.get('x-ratelimit-remaining') ?? '');
      // The 403 and the list above used two of the 60.
      expect(remaining).toEqual(Array.from({ length: 58 }, (_, i) => String(57 - i)));
      expect((await get(server, 'psk_e2e-one')).status).toBe(429);
      expect((await get(server, 'psk_e2e-two')).status).toBe(429);

      // A key outside its dates is answered as an unknown one (nothing says it was ever valid);
      // the log line names it and says why.
      const unknown = await get(server, 'psk_e2e-never-issued');
      for (const [token, credential] of [
        ['psk_e2e-old', 'expired'],
        ['psk_e2e-next', 'not_yet_valid'],
      ] as const) {
        const res = await fetch(`${server.url}/v1/pets?limit=1`, { headers: bearer(token) });
        expect([res.status, res.headers.get('www-authenticate'), await res.json()]).toEqual([
          401,
          unknown.headers.get('www-authenticate'),
          { code: 'unauthorized', message: 'The API key is malformed or unknown.', status: 401 },
        ]);
        const line = await waitForLine(server, (l) => l.includes(`"credential":"${credential}"`));
        expect(line).toMatchObject({ msg: 'request', status: 401, consumer: 'acme', key: token.slice(8) });
      }
      expect(unknown.headers.get('www-authenticate')).toBe('Bearer realm="petstore", error="invalid_token"');

      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      for (const line of [
        'petstore_consumer_requests_total{consumer="acme",status="200"} 59',
        'petstore_consumer_requests_total{consumer="acme",status="403"} 1',
        'petstore_consumer_requests_total{consumer="acme",status="429"} 2',
        'petstore_consumer_refusals_total{consumer="acme",reason="insufficient_scope"} 1',
        'petstore_consumer_refusals_total{consumer="acme",reason="rate_limited"} 2',
        'petstore_consumer_refusals_total{consumer="acme",reason="key_expired"} 1',
        'petstore_consumer_refusals_total{consumer="acme",reason="key_not_yet_valid"} 1',
        `petstore_key_expiry_timestamp_seconds{consumer="acme",key="one"} ${Math.floor((now + 86_400_000) / 1000)}`,
        'petstore_key_expiry_timestamp_seconds{consumer="acme",key="old"} 1577836800',
        'petstore_key_last_used_timestamp_seconds{consumer="acme",key="next"} 0',
      ]) {
        expect(metrics).toContain(`\n${line}\n`);
      }
      const lastUsed = /petstore_key_last_used_timestamp_seconds\{consumer="acme",key="two"\} (\d+)/.exec(metrics)?.[1];
      expect(Math.abs(Number(lastUsed) - Date.now() / 1000)).toBeLessThan(60);
      for (const secret of ['psk_e2e', sha('psk_e2e-one'), sha('psk_e2e-one').slice(0, 16)])
        expect(metrics).not.toContain(secret);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  test('a rotation under load: the client switches tokens mid-run and sees only 200s, Remaining falling by one', async () => {
    const dir = tmp();
    const file = join(dir, 'keys.json');
    // Quotas no run reaches, so every answer is a 200 whatever the runtime's speed.
    const first = await runCommand([
      'keys',
      'add',
      '--keys',
      file,
      '--consumer',
      'shop',
      '--plan',
      'enterprise',
      '--per-minute',
      '100000',
      '--per-day',
      '1000000',
      '--id',
      'v1',
    ]);
    const oldToken = first.stdout.trim();
    const server = await spawnServer({ args: ['--keys', file] });
    try {
      let token = oldToken;
      const seen: { status: number; remaining: number; token: string }[] = [];
      let stop = false;
      const client = (async () => {
        while (!stop) {
          const res = await get(server, token);
          seen.push({ status: res.status, remaining: Number(res.headers.get('x-ratelimit-remaining')), token });
          await Bun.sleep(2);
        }
      })();
      while (seen.length < 10) await Bun.sleep(5);
      const rotate = await runCommand([
        'keys',
        'rotate',
        '--keys',
        file,
        '--consumer',
        'shop',
        '--overlap',
        '7d',
        '--id',
        'v2',
      ]);
      expect(rotate.code).toBe(0);
      const newToken = rotate.stdout.trim();
      expect(newToken).toMatch(/^psk_/);
      const from = server.lines.length;
      server.child.kill('SIGHUP');
      await logged(server, 'keys reloaded', from);
      const switchedAt = seen.length;
      token = newToken;
      while (seen.length < switchedAt + 10) await Bun.sleep(5);
      stop = true;
      await client;
      expect(seen.every((s) => s.status === 200)).toBe(true);
      expect(seen.some((s) => s.token === oldToken) && seen.some((s) => s.token === newToken)).toBe(true);
      expect(seen.map((s) => s.remaining)).toEqual(seen.map((_, i) => 99_999 - i));
      const doc = JSON.parse(readFileSync(file, 'utf8'));
      const v1 = doc.consumers[0].keys[0];
      expect(Date.parse(v1.expiresAt) - Date.now()).toBeGreaterThan(7 * 86_400_000 - 120_000);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
