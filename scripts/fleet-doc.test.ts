/**
 * docs/fleet.md's fleet, run as the page writes it: the database made as a superuser (psql with
 * the throwaway server in its PG* variables; the role and database named for this run, the host
 * the throwaway one), the first admin key in it, then the two instances behind a balancer as that
 * role (its Redis URL, keys file, ports and binary replaced by the throwaway servers' and the
 * build under test). Both instances answer /readyz, share the pets and share one quota.
 *
 * Needs PETSTORE_TEST_POSTGRES_URL and PETSTORE_TEST_REDIS_URL (make scale-out-test).
 */
import { afterAll, expect, test } from 'bun:test';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { serverCommand, tokenOf, writeKeysFile, writeLauncher } from '../test/harness.ts';
import { testPostgresUrl } from '../test/postgres.ts';
import { testRedisUrl } from '../test/redis.ts';

const page = readFileSync(join(import.meta.dir, '../docs/fleet.md'), 'utf8');
/** The `sh` block after the marker that starts with `marker`. */
const blockAfter = (marker: string) => {
  const at = page.indexOf(marker);
  if (at < 0) throw new Error(`docs/fleet.md: no marker "${marker}"`);
  return /```sh\n([\s\S]*?)```/.exec(page.slice(at))?.[1] ?? '';
};
const database = blockAfter('<!-- tested: scripts/fleet-doc.test.ts runs this block with psql');
const instances = blockAfter('<!-- tested: scripts/fleet-doc.test.ts runs this block with its');

/** A TCP port nothing listens on now. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

const server = new URL(testPostgresUrl());
const admin = postgres(server.toString(), { max: 1, onnotice: () => {} });
// The page's role and database `petstore`, named for this run so that no earlier one is in the way.
const name = `petstore_fleet_doc_${process.pid}`;
/** The page's text with the run's role, database and server in place of the page's. */
const onThrowaway = (text: string) =>
  text
    .replaceAll('ROLE petstore ', `ROLE ${name} `)
    .replaceAll('DATABASE petstore OWNER petstore', `DATABASE ${name} OWNER ${name}`)
    .replaceAll(
      'postgres://petstore:secret@db.internal:5432/petstore',
      `postgres://${name}:secret@${server.host}/${name}`,
    );

let shell: ChildProcess | undefined;
afterAll(async () => {
  // The block's two servers are the shell's children, in its process group.
  if (shell?.pid) process.kill(-shell.pid, 'SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.unsafe(`DROP ROLE IF EXISTS ${name}`);
  await admin.end({ timeout: 5 });
});

test('the database, its first admin key, then two instances on it and one Redis, as docs/fleet.md writes them', async () => {
  // The database: psql as the server's superuser, petstore on PATH.
  const dir = mkdtempSync(join(tmpdir(), 'petstore-fleet-doc-'));
  const made = spawnSync('bash', ['-euo', 'pipefail', '-c', onThrowaway(database)], {
    env: {
      ...process.env,
      PATH: `${writeLauncher(join(dir, 'bin/petstore'))}:${process.env.PATH}`,
      PGHOST: server.hostname,
      PGPORT: server.port,
      PGUSER: decodeURIComponent(server.username),
      PGPASSWORD: decodeURIComponent(server.password),
      PGDATABASE: server.pathname.slice(1),
    },
    encoding: 'utf8',
  });
  expect([made.status, made.stdout, made.stderr]).toEqual([
    0,
    expect.stringMatching(/^CREATE ROLE\nCREATE DATABASE\npsk_[0-9A-Za-z]{38}\n$/),
    expect.stringContaining('(consumer ops;'),
  ]);
  // A LOGIN role that is no superuser, owning its database.
  const [role] = await admin.unsafe(
    `SELECT r.rolsuper, r.rolcreaterole, r.rolcanlogin, pg_get_userbyid(d.datdba) AS owner
       FROM pg_roles r, pg_database d WHERE r.rolname = '${name}' AND d.datname = '${name}'`,
  );
  expect({ ...role }).toEqual({ rolsuper: false, rolcreaterole: false, rolcanlogin: true, owner: name });

  // The two instances, as that role on that database.
  const keys = writeKeysFile([{ name: 'acme', plan: 'enterprise', limits: { perMinute: 3, perDay: 100 } }]);
  const [a, b] = [await freePort(), await freePort()];
  const script = onThrowaway(instances)
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
