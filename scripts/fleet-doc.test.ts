/**
 * docs/fleet.md's two instances behind a balancer, run as the page writes them: its PostgreSQL and
 * Redis URLs, keys file, ports and binary replaced by the throwaway servers' and the build under
 * test. Both instances answer /readyz, share the pets and share one quota.
 *
 * Needs PETSTORE_TEST_POSTGRES_URL and PETSTORE_TEST_REDIS_URL (make scale-out-test).
 */
import { afterAll, expect, test } from 'bun:test';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { serverCommand, tokenOf, writeKeysFile } from '../test/harness.ts';
import { freshDatabase, type TestDatabase, testPostgresUrl } from '../test/postgres.ts';
import { testRedisUrl } from '../test/redis.ts';

const page = readFileSync(join(import.meta.dir, '../docs/fleet.md'), 'utf8');
const at = page.indexOf('<!-- tested: scripts/fleet-doc.test.ts runs this block');
const block = /```sh\n([\s\S]*?)```/.exec(page.slice(at))?.[1] ?? '';

/** A TCP port nothing listens on now. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

let db: TestDatabase | undefined;
let shell: ChildProcess | undefined;
afterAll(async () => {
  // The block's two servers are the shell's children, in its process group.
  if (shell?.pid) process.kill(-shell.pid, 'SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  await db?.drop();
});

test('two instances on one PostgreSQL and one Redis, started as docs/fleet.md writes it', async () => {
  db = await freshDatabase(testPostgresUrl(), `petstore_fleet_doc_${process.pid}`);
  const keys = writeKeysFile([{ name: 'acme', plan: 'enterprise', limits: { perMinute: 3, perDay: 100 } }]);
  const [a, b] = [await freePort(), await freePort()];
  const script = block
    .replace(/postgres:\/\/\S+/, db.url)
    .replace(/redis:\/\/\S+/, testRedisUrl())
    .replace('/etc/petstore/keys.json', keys)
    .replaceAll('dist/petstore', serverCommand().join(' '))
    .replaceAll('8081', String(a))
    .replaceAll('8082', String(b));
  shell = spawn('bash', ['-euo', 'pipefail', '-c', `${script}\nwait`], { detached: true, stdio: 'ignore' });
  const ready = async (port: number) => {
    for (const end = Date.now() + 20_000; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
      if (res?.status === 200) return res.json();
    }
    throw new Error(`port ${port}: not ready within 20 s`);
  };
  expect(await ready(a)).toEqual({ status: 'ready', limiter: 'redis' });
  expect(await ready(b)).toEqual({ status: 'ready', limiter: 'redis' });

  const auth = { Authorization: `Bearer ${tokenOf('acme')}` };
  const created = await fetch(`http://127.0.0.1:${a}/v1/pets`, {
    method: 'POST',
    headers: { ...auth, 'Content-Type': 'application/json' },
    body: '{"name":"Rex","categoryId":1}',
  });
  expect(created.status).toBe(201);
  const pet = await created.json();
  const fromB = await fetch(`http://127.0.0.1:${b}/v1/pets/${pet.id}`, { headers: auth });
  expect([fromB.status, await fromB.json()]).toEqual([200, pet]);
  // 3 a minute in all, whichever instance answers: two spent above, so of four more at most one
  // is admitted (a refusal while the other instance holds units may come early, never late).
  const more = [];
  for (const port of [a, b, a, b])
    more.push((await fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: auth })).status);
  expect(more.filter((s) => s === 200).length).toBeLessThanOrEqual(1);
  expect(more.at(-1)).toBe(429);
}, 60_000);
