import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { type Running, runCommand, spawnServer, tokenOf, waitForLine, writeKeysFile } from '../../test/harness.ts';

describe('the built server over HTTP', () => {
  let server: Running;
  const auth = { Authorization: `Bearer ${tokenOf('acme')}` };

  beforeAll(async () => {
    server = await spawnServer({ args: ['--keys', writeKeysFile([{ name: 'acme', plan: 'pro' }])] });
  });
  afterAll(async () => {
    await server.stop();
  });

  test('creates, lists and fetches a pet', async () => {
    const created = await fetch(`${server.url}/v1/pets`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'Rex', categoryId: 7 }),
    });
    expect(created.status).toBe(201);
    const pet = await created.json();
    expect(pet).toEqual({ id: 1, name: 'Rex', categoryId: 7, status: 'available' });

    const list = await fetch(`${server.url}/v1/pets?status=available`, { headers: auth });
    expect(list.status).toBe(200);
    expect(await list.json()).toEqual([pet]);

    const one = await fetch(`${server.url}/v1/pets/1`, { headers: auth });
    expect(await one.json()).toEqual(pet);
    expect(one.headers.get('sunset')).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
  });

  test('401 without a key, with the Error body', async () => {
    const res = await fetch(`${server.url}/v1/pets`);
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="petstore"');
    expect(await res.json()).toEqual({
      code: 'unauthorized',
      message: 'An API key is required: send Authorization: Bearer <API_KEY>.',
      status: 401,
    });
  });

  test('serves the contract it was built with', async () => {
    const res = await fetch(`${server.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { info: { version: string } };
    expect(doc.info.version).toBe('1.0.0');
  });

  test('the token never appears in the logs', async () => {
    // Waited for: with workers, a request's line reaches the one stream shortly after its answer.
    await waitForLine(server, (l) => l.includes('"key":"acme"'));
    expect(server.lines.join('\n')).not.toContain(tokenOf('acme'));
  });
});

describe('the command line', () => {
  test('--version names the version, the commit and the target', async () => {
    const r = await runCommand(['--version']);
    expect(r.code).toBe(0);
    // The binary carries its build's stamp; Deno and Node run from source, unstamped.
    expect(r.stdout).toMatch(
      /^petstore 1\.0\.0 \((commit [0-9a-f]{12}(-dirty)?, target (linux|darwin)-(x64|arm64)(-musl)?|commit unknown, target source)\)\n$/,
    );
  });

  test('--help lists the flags and exits 0', async () => {
    const r = await runCommand(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--keys FILE');
    expect(r.stdout).toContain('PETSTORE_DATA');
  });

  test('an unknown flag exits 2 with a message', async () => {
    const r = await runCommand(['--colour', 'blue']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('petstore: configuration: unknown option "--colour"');
  });

  test('a bad keys file exits 2 naming the entry and field, before the port opens', async () => {
    const dir = writeKeysFile([]).replace(/keys\.json$/, '');
    const path = `${dir}bad.json`;
    writeFileSync(path, JSON.stringify({ keys: [{ name: 'acme', sha256: 'nothex', plan: 'free' }] }));
    const r = await runCommand(['--keys', path, '--port', '0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('petstore: keys file: keys[0] ("acme").sha256: must be 64 lowercase hex digits');
    expect(r.stdout).not.toContain('listening');
  });

  test('keys add is the one way to make a key: keys new is an unknown command (exit 2)', async () => {
    const r = await runCommand(['keys', 'new', '--name', 'shop', '--plan', 'pro']);
    expect([r.code, r.stdout, r.stderr]).toEqual([
      2,
      '',
      'petstore: configuration: unknown command "keys new"; expected add, rotate, revoke, list, audit, import\n' +
        'Run petstore keys --help for usage.\n',
    ]);
  });

  test('without a keys file it makes a development key, prints it once, and serves with it', async () => {
    const s = await spawnServer();
    try {
      // The banner is on stderr and the listening line on stdout: two pipes read in no set order.
      for (const end = Date.now() + 5_000; Date.now() < end && !s.lines.some((l) => l.includes('keys add')); ) {
        await Bun.sleep(20);
      }
      const out = s.lines.join('\n');
      const token = /Authorization: Bearer (psk_[0-9A-Za-z]{38})/.exec(out)?.[1] as string;
      expect(out).toContain('petstore keys add --keys FILE --consumer NAME --plan PLAN');
      const res = await fetch(`${s.url}/v1/pets`, { headers: { Authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
    } finally {
      expect(await s.stop('SIGTERM')).toBe(0);
    }
  });
});
