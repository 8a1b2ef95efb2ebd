// The keys file watched by the server under test (PETSTORE_CMD: the binary, Deno or Node): an
// atomic rename, an edit in place, a Kubernetes Secret's symlink swap and `petstore keys add`
// are in force within 2 s with no signal; a broken file keeps the keys in force and says where.
import { describe, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Running, runCommand, spawnServer } from '../../test/harness.ts';

/** The bound for a change to be in force; polls show how long it took. */
const IN_FORCE_MS = 2_000;
const sha = (token: string) => createHash('sha256').update(token).digest('hex');
const consumer = (name: string, token: string) => ({ name, plan: 'free', keys: [{ id: name, sha256: sha(token) }] });
const doc = (...consumers: ReturnType<typeof consumer>[]) => `${JSON.stringify({ consumers })}\n`;

async function status(server: Running, token: string): Promise<number> {
  const res = await fetch(`${server.url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res.status;
}

/** Milliseconds until `token` answers `expected`; fails past the bound (with margin for a busy machine). */
async function inForce(server: Running, token: string, expected: number): Promise<number> {
  const started = Date.now();
  while ((await status(server, token)) !== expected) {
    if (Date.now() - started > IN_FORCE_MS + 1_000)
      throw new Error(`${token} not ${expected}:\n${server.lines.join('\n')}`);
    await Bun.sleep(50);
  }
  return Date.now() - started;
}

const jsonLines = (server: Running) =>
  server.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);

describe('a watched keys file', () => {
  test('a key added by an atomic rename answers 200 within 2 s, with no signal', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-watch-'));
    const file = join(dir, 'keys.json');
    writeFileSync(file, doc(consumer('a', 'psk_watch-a')), { mode: 0o600 });
    const server = await spawnServer({ args: ['--keys', file] });
    try {
      expect(await status(server, 'psk_watch-b')).toBe(401);
      writeFileSync(join(dir, '.keys.json.tmp'), doc(consumer('a', 'psk_watch-a'), consumer('b', 'psk_watch-b')), {
        mode: 0o600,
      });
      renameSync(join(dir, '.keys.json.tmp'), file);
      expect(await inForce(server, 'psk_watch-b', 200)).toBeLessThanOrEqual(IN_FORCE_MS);
      expect(await status(server, 'psk_watch-a')).toBe(200);
      // Edited in place (truncate and write), a key removed: refused within 2 s.
      writeFileSync(file, doc(consumer('b', 'psk_watch-b')));
      expect(await inForce(server, 'psk_watch-a', 401)).toBeLessThanOrEqual(IN_FORCE_MS);
      expect(
        jsonLines(server)
          .filter((l) => l.msg === 'keys reloaded')
          .map((l) => [l.trigger, l.keysByPlan]),
      ).toEqual([
        ['file change', { free: 2 }],
        ['file change', { free: 1 }],
      ]);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  test('a Kubernetes Secret volume swapping its ..data symlink is followed', async () => {
    // The layout kubelet writes: keys.json -> ..data/keys.json, ..data -> ..<timestamp>/, swapped by a rename.
    const dir = mkdtempSync(join(tmpdir(), 'petstore-secret-'));
    const version = (name: string, text: string) => {
      mkdirSync(join(dir, name));
      writeFileSync(join(dir, name, 'keys.json'), text, { mode: 0o600 });
    };
    version('..2026_11_24_01', doc(consumer('a', 'psk_secret-a')));
    symlinkSync('..2026_11_24_01', join(dir, '..data'));
    symlinkSync('..data/keys.json', join(dir, 'keys.json'));
    const server = await spawnServer({ args: ['--keys', join(dir, 'keys.json')] });
    try {
      expect(await status(server, 'psk_secret-a')).toBe(200);
      version('..2026_11_24_02', doc(consumer('c', 'psk_secret-c')));
      symlinkSync('..2026_11_24_02', join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
      rmSync(join(dir, '..2026_11_24_01'), { recursive: true });
      expect(await inForce(server, 'psk_secret-c', 200)).toBeLessThanOrEqual(IN_FORCE_MS);
      expect(await status(server, 'psk_secret-a')).toBe(401);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  test('a broken file keeps the keys in force, is logged once with its entry and field; a later good file is picked up', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-watch-'));
    const file = join(dir, 'keys.json');
    writeFileSync(file, doc(consumer('a', 'psk_watch-a')), { mode: 0o600 });
    const server = await spawnServer({ args: ['--keys', file] });
    try {
      writeFileSync(
        file,
        JSON.stringify({ consumers: [{ name: 'a', plan: 'gold', keys: [{ sha256: sha('psk_watch-b') }] }] }),
      );
      const deadline = Date.now() + IN_FORCE_MS + 1_000;
      while (!jsonLines(server).some((l) => l.msg === 'keys reload failed; keeping the previous keys')) {
        if (Date.now() > deadline) throw new Error(server.lines.join('\n'));
        await Bun.sleep(50);
      }
      // Several polls later: still the old keys, and the refusal said once.
      await Bun.sleep(1_200);
      expect(await status(server, 'psk_watch-a')).toBe(200);
      expect(await status(server, 'psk_watch-b')).toBe(401);
      expect(
        jsonLines(server)
          .filter((l) => l.msg === 'keys reload failed; keeping the previous keys')
          .map((l) => [l.level, l.trigger, l.error]),
      ).toEqual([
        ['error', 'file change', 'consumers[0] ("a").plan: must be one of free, pro, business, enterprise, got "gold"'],
      ]);
      writeFileSync(file, doc(consumer('b', 'psk_watch-b')));
      expect(await inForce(server, 'psk_watch-b', 200)).toBeLessThanOrEqual(IN_FORCE_MS);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  test('petstore keys add against the file the server watches: the new token answers 200 within 2 s', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-watch-'));
    const file = join(dir, 'keys.json');
    writeFileSync(file, doc(consumer('a', 'psk_watch-a')), { mode: 0o600 });
    const server = await spawnServer({ args: ['--keys', file] });
    try {
      const add = await runCommand(['keys', 'add', '--keys', file, '--consumer', 'acme', '--plan', 'pro']);
      expect(add.code).toBe(0);
      const token = add.stdout.trim();
      expect(token).toMatch(/^psk_[0-9A-Za-z]{38}$/);
      expect(await inForce(server, token, 200)).toBeLessThanOrEqual(IN_FORCE_MS);
      // One character changed (the checksum no longer matches): 401 before any lookup.
      const typo = `${token.slice(0, 20)}${token[20] === 'x' ? 'y' : 'x'}${token.slice(21)}`;
      expect(await status(server, typo)).toBe(401);
      const revoke = await runCommand([
        'keys',
        'revoke',
        '--keys',
        file,
        '--consumer',
        'acme',
        '--key',
        add.stderr.match(/key id: (\S+)/)?.[1] ?? '',
      ]);
      expect(revoke.code).toBe(0);
      expect(await inForce(server, token, 401)).toBeLessThanOrEqual(IN_FORCE_MS);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
