// What a request or the environment must not be able to bend:
// no request header reaches the served spec's servers; a client's request id is echoed and
// logged only when plain; the data the server writes is readable by its own user only.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { chmodSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Running, serverLacksSqlite, spawnServer, tokenOf, writeKeysFile } from '../../test/harness.ts';

type LogLine = Record<string, unknown>;
const jsonLines = (server: Running): LogLine[] =>
  server.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine);
const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

/** Headers a client or a proxy could set to make the server name another host. */
const HOSTILE = {
  Host: 'evil.example',
  'X-Forwarded-Host': 'evil.example',
  'X-Forwarded-Proto': 'https',
  Forwarded: 'for=192.0.2.1;host=evil.example;proto=https',
};

async function documents(url: string) {
  const json = await fetch(`${url}/openapi.json`, { headers: HOSTILE });
  const yaml = await fetch(`${url}/openapi.yaml`, { headers: HOSTILE });
  const docs = await fetch(`${url}/docs`, { headers: HOSTILE });
  const spec = (await json.json()) as { servers: unknown };
  return { servers: spec.servers, text: `${JSON.stringify(spec)}\n${await yaml.text()}\n${await docs.text()}` };
}

describe('the served spec names no host a request gave', () => {
  let plain: Running;
  let configured: Running;
  beforeAll(async () => {
    plain = await spawnServer();
    configured = await spawnServer({
      args: ['--public-url', 'https://api.petstore.example', '--staging-url', 'https://staging.petstore.example/'],
    });
  });
  afterAll(async () => {
    await plain.stop();
    await configured.stop();
  });

  test('by default: the relative /v1, whatever Host, X-Forwarded-Host or Forwarded say', async () => {
    const { servers, text } = await documents(plain.url);
    expect(servers).toEqual([{ url: '/v1', description: 'This server' }]);
    expect(text).not.toContain('evil.example');
  });

  test('configured: exactly --public-url and --staging-url, each + /v1', async () => {
    const { servers, text } = await documents(configured.url);
    expect(servers).toEqual([
      { url: 'https://api.petstore.example/v1', description: 'Production' },
      { url: 'https://staging.petstore.example/v1', description: 'Staging' },
    ]);
    expect(text).not.toContain('evil.example');
  });
});

describe('X-Request-Id is kept only when it is 1-64 of [A-Za-z0-9._:-]', () => {
  let server: Running;
  const token = tokenOf('ids');
  beforeAll(async () => {
    server = await spawnServer({ args: ['--keys', writeKeysFile([{ name: 'ids', plan: 'pro' }])] });
  });
  afterAll(async () => {
    await server.stop();
  });
  const idFor = async (given: string) =>
    (
      await fetch(`${server.url}/v1/pets`, { headers: { Authorization: `Bearer ${token}`, 'X-Request-Id': given } })
    ).headers.get('x-request-id') ?? '';

  test('a plain id of 1 and of 64 characters is echoed and logged as sent', async () => {
    for (const id of ['a', `trace:1.2_3-${'x'.repeat(52)}`]) {
      expect(await idFor(id)).toBe(id);
    }
    await Bun.sleep(50);
    expect(
      jsonLines(server)
        .filter((l) => l.msg === 'request')
        .map((l) => l.requestId),
    ).toContain('a');
  });

  test.each([
    ['65 characters', 'x'.repeat(65)],
    ['a space', 'abc def'],
    ['a tab', 'abc\tdef'],
    ['a bearer token', `Bearer ${tokenOf('ids')}`],
    ['a bare token', tokenOf('ids')],
    ['a slash', 'a/b'],
  ])('%s: replaced by a fresh id, never echoed nor logged', async (_what, given) => {
    const id = await idFor(given);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    await Bun.sleep(50);
    expect(server.lines.join('\n')).not.toContain(given);
  });

  test('no log line of the run holds the token', () => {
    expect(server.lines.join('\n')).not.toContain(token);
  });
});

const noSqlite = serverLacksSqlite();

describe.skipIf(noSqlite)('data files are for the server user only, whatever the umask', () => {
  test('a data directory the server makes is 0700, its database files 0600, under umask 000', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'petstore-modes-')), 'made-by-server');
    const db = join(dir, 'petstore.db');
    const server = await spawnServer({ args: ['--data', db], umask: '000' });
    try {
      const res = await fetch(`${server.url}/v1/pets`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${devToken(server)}`, 'Content-Type': 'application/json' },
        body: '{"name":"Rex","categoryId":1}',
      });
      expect(res.status).toBe(201);
      expect(mode(dir)).toBe('700');
      expect({ db: mode(db), wal: mode(`${db}-wal`), shm: mode(`${db}-shm`) }).toEqual({
        db: '600',
        wal: '600',
        shm: '600',
      });
    } finally {
      await server.stop();
    }
  });

  test('an existing 0644 database is still served, with a warning naming the file and the fix', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-modes-'));
    const db = join(dir, 'petstore.db');
    const first = await spawnServer({ args: ['--data', db] });
    await first.stop();
    chmodSync(db, 0o644);
    const server = await spawnServer({ args: ['--data', db] });
    try {
      const res = await fetch(`${server.url}/v1/pets`, { headers: { Authorization: `Bearer ${devToken(server)}` } });
      expect(res.status).toBe(200);
      const warning = jsonLines(server).find((l) => l.level === 'warn' && l.file === db);
      expect(warning).toMatchObject({ file: db, mode: '644', fix: `chmod 600 ${db}` });
    } finally {
      await server.stop();
    }
  });
});

/** The development key the server printed on stderr (started without --keys). */
function devToken(server: Running): string {
  const line = server.lines.find((l) => l.includes('Authorization: Bearer '));
  if (!line) throw new Error(`no development token printed:\n${server.lines.join('\n')}`);
  return line.split('Authorization: Bearer ')[1]?.trim() ?? '';
}
