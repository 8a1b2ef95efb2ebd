// The documents' examples, run as they are written against the server under test, and the names
// they give checked against what the server writes: the README's first request, the webhook
// receiver under Node, the operations guide's first commands, the admin API's session from its
// first key on, a pet changed and removed, the audit actions, a request's log line, the 401's
// challenges, `petstore keys`.
import { afterEach, describe, expect, test } from 'bun:test';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AUDIT_ACTIONS } from '../../src/keys/audit.ts';
import {
  adminUrl,
  runCommand,
  spawnServer,
  tokenOf,
  waitForLine,
  writeKeysFile,
  writeLauncher,
} from '../../test/harness.ts';
import { newSecret } from '../../test/webhook-receiver.ts';

const ROOT = join(import.meta.dir, '../..');
const page = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const README = page('README.md');
const INTEGRATORS = page('docs/integrators.md');
const OPERATIONS = page('docs/operations.md');
const ADMIN = page('docs/admin-api.md');

/** The `count` code blocks of `text` that follow the `<!-- tested: … -->` line naming `what`. */
function testedBlocks(text: string, what: string, count = 1): string[] {
  const at = text.indexOf(`<!-- tested: scripts/e2e/docs.test.ts runs ${what}`);
  if (at < 0) throw new Error(`no block marked "${what}"`);
  const blocks = [...text.slice(at).matchAll(/```[a-z]*\n([\s\S]*?)```/g)].slice(0, count).map((m) => m[1] ?? '');
  return blocks;
}

/** A TCP port nothing listens on now. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

const stops: (() => unknown)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** Lines a child writes to stdout, as they come. */
function linesOf(child: ChildProcess): string[] {
  const lines: string[] = [];
  let partial = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
  });
  return lines;
}

async function waitFor<T>(find: () => T | undefined, what: string, ms = 10_000): Promise<T> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 20))) {
    const found = find();
    if (found !== undefined) return found;
  }
  throw new Error(`${what}: not within ${ms} ms`);
}

describe('examples, as written', () => {
  test("the README's first request: a pet created, then listed", async () => {
    const [session, answers] = testedBlocks(README, 'this block -->', 2);
    const server = await spawnServer({ args: ['--keys', writeKeysFile([{ name: 'acme', plan: 'free' }])] });
    stops.push(() => server.stop());
    const run = spawnSync(
      'bash',
      ['-euo', 'pipefail', '-c', (session ?? '').replaceAll('localhost:8080', server.url)],
      {
        env: { ...process.env, KEY: tokenOf('acme') },
        encoding: 'utf8',
      },
    );
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe(answers ?? '');
  });

  test('the webhook receiver runs under Node from an .mjs file and prints each verified event; a forged one is refused', async () => {
    const [receiver] = testedBlocks(INTEGRATORS, 'this block as it is');
    const dir = mkdtempSync(join(tmpdir(), 'petstore-receiver-'));
    writeFileSync(join(dir, 'receiver.mjs'), receiver ?? '');
    // `npm install standardwebhooks` in docs/integrators.md; here the repository's copy of it.
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    const secret = newSecret();
    const child = spawn('node', ['receiver.mjs'], {
      cwd: dir,
      env: { ...process.env, PORT: '0', PETSTORE_WEBHOOK_SECRET: secret },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    stops.push(() => child.kill());
    const lines = linesOf(child);
    const first = await waitFor(() => lines[0], 'the receiver to listen');
    const url = /^receiving on (http:\/\/127\.0\.0\.1:\d+\/)$/.exec(first)?.[1];
    expect(url).toBeDefined();

    const keys = writeKeysFile([
      {
        name: 'acme',
        plan: 'enterprise',
        limits: { perMinute: 100, perDay: 5 },
        webhook: { url: url ?? '', secret },
        thresholds: [80],
      },
    ]);
    const server = await spawnServer({ args: ['--keys', keys] });
    stops.push(() => server.stop());
    const forged = await fetch(url ?? '', { method: 'POST', body: '{}', headers: { 'webhook-id': 'msg_x' } });
    expect(forged.status).toBe(400);
    // 4 of 5 a day is the 80% threshold: one quota.threshold event.
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${server.url}/v1/pets`, { headers: { Authorization: `Bearer ${tokenOf('acme')}` } });
      expect(res.status).toBe(200);
    }
    const event = await waitFor(() => lines.find((l) => l.includes('quota.threshold')), 'the event');
    const [id, type, data] = event.split(' ');
    expect(id).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(type).toBe('quota.threshold');
    expect(JSON.parse(data ?? '{}')).toMatchObject({
      consumer: 'acme',
      window: 'day',
      threshold: 80,
      limit: 5,
      used: 4,
    });
    expect(lines).toHaveLength(2);
  });

  test("GET /v1/rate_limit's curl answers the fields its comment shows", async () => {
    const [block] = testedBlocks(
      INTEGRATORS,
      "this block with KEY set, against its own server, and compares the answer's",
    );
    const server = await spawnServer({ args: ['--keys', writeKeysFile([{ name: 'acme', plan: 'pro' }])] });
    stops.push(() => server.stop());
    const run = spawnSync('bash', ['-euo', 'pipefail', '-c', (block ?? '').replaceAll('localhost:8080', server.url)], {
      env: { ...process.env, KEY: tokenOf('acme') },
      encoding: 'utf8',
    });
    // curl without -s writes its progress meter on stderr.
    expect(run.status).toBe(0);
    const shown = JSON.parse(
      (block ?? '')
        .split('\n')
        .filter((l) => l.startsWith('#'))
        .map((l) => l.slice(2))
        .join(''),
    );
    const got = JSON.parse(run.stdout);
    const shape = (quota: { windows: { name: string; limit: number }[] }) => ({
      ...quota,
      windows: quota.windows.map((w) => ({ name: w.name, limit: w.limit, fields: Object.keys(w) })),
    });
    expect(shape(got)).toEqual(shape(shown));
    expect(got.windows.map((w: { remaining: number }) => w.remaining)).toEqual([300, 10_000]);
  });

  test("the rotation runbook's commands run as written: the new key works, the old one is revoked", async () => {
    const [block] = testedBlocks(
      OPERATIONS,
      'this block with petstore on PATH and the keys file in a temporary folder',
    );
    const dir = mkdtempSync(join(tmpdir(), 'petstore-rotation-'));
    const bin = writeLauncher(join(dir, 'bin/petstore'));
    const file = join(dir, 'keys.json');
    const old = await runCommand(['keys', 'add', '--keys', file, '--consumer', 'acme', '--plan', 'pro', '--id', 'old']);
    expect(old.code).toBe(0);
    const script = `${(block ?? '').replaceAll('/etc/petstore/keys.json', file).replace('<old id>', 'old')}\necho "$NEW"`;
    const run = spawnSync('bash', ['-euo', 'pipefail', '-c', script], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
      encoding: 'utf8',
    });
    expect(run.status).toBe(0);
    expect(run.stderr).toContain('revoked key old of consumer acme\n');
    const fresh = run.stdout.trim().split('\n').at(-1) ?? '';
    expect(fresh).toMatch(/^psk_/);
    const server = await spawnServer({ args: ['--keys', file] });
    stops.push(() => server.stop());
    const status = async (token: string) =>
      (await fetch(`${server.url}/v1/pets`, { headers: { Authorization: `Bearer ${token}` } })).status;
    expect([await status(fresh), await status(old.stdout.trim())]).toEqual([200, 401]);
  });

  test("the orders' curl session answers what docs/integrators.md shows, on a server with --experimental", async () => {
    const [session, answers] = testedBlocks(INTEGRATORS, 'this block with BASE and TOKEN set', 2);
    const server = await spawnServer({
      args: ['--keys', writeKeysFile([{ name: 'acme', plan: 'pro' }]), '--experimental'],
    });
    stops.push(() => server.stop());
    const run = spawnSync('bash', ['-euo', 'pipefail', '-c', session ?? ''], {
      env: { ...process.env, BASE: `${server.url}/v1`, TOKEN: tokenOf('acme') },
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    const got = run.stdout.replace(/ord_[0-9a-f]{32}/g, 'ord_…').replace(/"(placedAt|holdUntil)":"[^"]+"/g, '"$1":"…"');
    expect(got).toBe(answers ?? '');
  });

  test("the admin API's first key and curl session, as docs/admin-api.md writes them, answer what it shows", async () => {
    const [setup] = testedBlocks(ADMIN, 'this block with petstore on PATH in a temporary folder');
    const [session, answers] = testedBlocks(ADMIN, 'this block with ADMIN and TOKEN set', 2);
    const dir = mkdtempSync(join(tmpdir(), 'petstore-admin-doc-'));
    const made = spawnSync('bash', ['-euo', 'pipefail', '-c', `${setup}\nprintf '%s\\n' "$ADMIN" "$TOKEN"`], {
      cwd: dir,
      env: { ...process.env, PATH: `${writeLauncher(join(dir, 'bin/petstore'))}:${process.env.PATH}` },
      encoding: 'utf8',
    });
    expect([made.status, made.stderr]).toEqual([0, 'key id: ops-1 (consumer ops; token printed once on stdout)\n']);
    const [admin = '', token = ''] = made.stdout.split('\n');
    expect(admin).toBe('http://127.0.0.1:9091/admin/v1');
    // The page's server: --keys keys.json --admin-port 9091; here on a free port.
    const server = await spawnServer({ args: ['--keys', join(dir, 'keys.json'), '--admin-port', '0'] });
    stops.push(() => server.stop());
    const run = spawnSync('bash', ['-euo', 'pipefail', '-c', session ?? ''], {
      env: { ...process.env, ADMIN: admin.replace('http://127.0.0.1:9091/admin/v1', adminUrl(server)), TOKEN: token },
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    const got = run.stdout
      .replace(/"token":"psk_[0-9A-Za-z]+"/, '"token":"psk_…"')
      .replace(/"at":"[^"]+"/g, '"at":"…"');
    expect(got).toBe(answers ?? '');
  });

  test('"Running it" in docs/operations.md: serve, --help, keys add and healthcheck as written', async () => {
    const [block = ''] = testedBlocks(OPERATIONS, 'this block in a temporary folder');
    const dir = mkdtempSync(join(tmpdir(), 'petstore-running-'));
    // dist/petstore, relative as the page writes it: the build under test.
    writeLauncher(join(dir, 'dist/petstore'));
    const port = String(await freePort());
    const lines = block
      .replaceAll('/etc/petstore/keys.json', writeKeysFile([{ name: 'acme', plan: 'pro' }]))
      .replaceAll('8080', port)
      .split('\n')
      .filter((line) => line.trim() !== '');
    // `make build` made the binary under test before `make e2e` ran; the server is the one line that serves until stopped.
    expect(lines[0]).toStartWith('make build ');
    const serves = lines.filter((line) => /^dist\/petstore --keys /.test(line));
    expect(serves).toHaveLength(1);
    const server = spawn('bash', ['-c', `exec ${serves[0]}`], { cwd: dir, stdio: 'ignore' });
    stops.push(() => server.kill('SIGTERM'));
    await waitFor(
      () => (spawnSync('bash', ['-c', `exec ${lines.at(-1)}`], { cwd: dir }).status === 0 ? true : undefined),
      'the server to answer the healthcheck line',
    );
    const rest = lines.slice(1).filter((line) => line !== serves[0]);
    const run = spawnSync('bash', ['-euo', 'pipefail', '-c', rest.join('\n')], { cwd: dir, encoding: 'utf8' });
    expect([run.status, run.stderr]).toEqual([
      0,
      expect.stringMatching(/^key id: [0-9a-f]{8} \(consumer acme; token printed once on stdout\)\n$/),
    ]);
    expect(run.stdout).toContain(`--data PATH`);
    expect(run.stdout).toMatch(/^psk_[0-9A-Za-z]{38}$/m);
    expect(JSON.parse(readFileSync(join(dir, 'keys.json'), 'utf8')).consumers[0]).toMatchObject({
      name: 'acme',
      plan: 'pro',
    });
  });
});

describe('examples, as written: a pet changed and removed', () => {
  test('the curl session of "Changing and removing a pet" answers what docs/integrators.md shows', async () => {
    const [session, answers] = testedBlocks(INTEGRATORS, 'this block with API and TOKEN set', 2);
    const server = await spawnServer({ args: ['--keys', writeKeysFile([{ name: 'acme', plan: 'free' }])] });
    stops.push(() => server.stop());
    const run = spawnSync('bash', ['-euo', 'pipefail', '-c', session ?? ''], {
      env: { ...process.env, API: `${server.url}/v1`, TOKEN: tokenOf('acme') },
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe(answers ?? '');
  });
});

describe('names in the documents are the ones the server writes', () => {
  test('the audit actions', () => {
    const listed = /what \(((?:`[a-z.]+`(?:, )?)+)\)/.exec(OPERATIONS.replaceAll('\n', ' '))?.[1];
    expect(listed?.match(/[a-z]+\.[a-z]+/g)).toEqual([...AUDIT_ACTIONS]);
  });

  test("the Logs example's fields, and the 401s' WWW-Authenticate", async () => {
    const server = await spawnServer({ args: ['--keys', writeKeysFile([{ name: 'acme', plan: 'free' }])] });
    stops.push(() => server.stop());
    const ok = await fetch(`${server.url}/v1/pets`, { headers: { Authorization: `Bearer ${tokenOf('acme')}` } });
    expect(ok.status).toBe(200);
    const line = await waitForLine(server, (l) => l.includes('"msg":"request"') && l.includes('"status":200'));
    const example = /```json\n(\{"time"[^\n]*"msg":"request"[^\n]*)\n```/.exec(OPERATIONS)?.[1];
    const shown = JSON.parse(example ?? '{}') as Record<string, unknown>;
    expect(Object.keys(shown)).toEqual(Object.keys(line));
    expect([shown.consumer, typeof shown.key]).toEqual(['acme', 'string']);
    expect(line.key).toBe('acme');

    const none = await fetch(`${server.url}/v1/pets`);
    const badChecksum = await fetch(`${server.url}/v1/pets`, {
      headers: { Authorization: `Bearer psk_${'A'.repeat(38)}` },
    });
    const row = INTEGRATORS.split('\n').find((l) => l.startsWith('| 401 |')) ?? '';
    for (const res of [none, badChecksum]) {
      expect(res.status).toBe(401);
      expect(row).toContain(`\`WWW-Authenticate: ${res.headers.get('www-authenticate')}\``);
    }
    expect(badChecksum.headers.get('www-authenticate')).toBe('Bearer realm="petstore", error="invalid_token"');
  });

  test('`petstore keys` usage: docs/operations.md names the same commands, and how many', async () => {
    const usage = (await runCommand(['keys'])).stdout;
    const commands = [...usage.matchAll(/^ {2}petstore keys ([a-z]+) /gm)].map((m) => m[1]);
    const table = [...OPERATIONS.matchAll(/^\| `keys ([a-z]+) (?:--|FILE)/gm)].map((m) => m[1]);
    expect(table).toEqual(commands);
    const words = ['', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight'];
    expect(OPERATIONS).toContain(`\`petstore keys\` prints the usage of all ${words[commands.length]},`);
  });
});
