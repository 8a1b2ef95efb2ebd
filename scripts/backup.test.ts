/**
 * Backups that restore, under load: creates keep being acknowledged while `petstore backup`
 * runs; the backup, restored by the operations guide's steps into a new store served by a new server,
 * serves every pet acknowledged before the backup began, and a pet created there gets an id no
 * pet of the old store ever had.
 * - SQLite: `petstore backup --data FILE --to B --keys KEYS`, `petstore restore --from B --data NEW --keys NEWKEYS`.
 * - PostgreSQL (when PETSTORE_TEST_POSTGRES_URL is set): as docs/fleet.md's role (a LOGIN role, not a
 *   superuser, owning its database), keys in the store; `petstore backup` (pg_dump), a new
 *   database owned by the role, `petstore restore` (pg_restore).
 *
 * `make backup-test` (on a throwaway PostgreSQL).
 */
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { type Running, runCommand, startServer } from '../test/harness.ts';

const PG_SERVER = process.env.PETSTORE_TEST_POSTGRES_URL ?? '';
const dirs: string[] = [];
const tmp = () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-backup-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Ack {
  readonly id: number;
  readonly name: string;
  readonly at: number;
}

/** Creates pets through `server` with 4 clients until `stop()`; every 201 is recorded with when it arrived. */
function load(server: Running, token: string) {
  const acks: Ack[] = [];
  let running = true;
  let n = 0;
  const workers = Array.from({ length: 4 }, async () => {
    while (running) {
      const name = `pet-${n++}`;
      const res = await fetch(`${server.url}/v1/pets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name, categoryId: 1 }),
      });
      const body = (await res.json()) as { id: number };
      expect(res.status).toBe(201);
      acks.push({ id: body.id, name, at: performance.now() });
    }
  });
  return {
    acks,
    async until(count: number) {
      while (acks.length < count) await Bun.sleep(10);
    },
    async stop() {
      running = false;
      await Promise.all(workers);
    },
  };
}

/**
 * Runs `backup` under load and checks the restored store served by `restored()`: every pet
 * acknowledged before the backup began is there, creates were acknowledged while it ran, and
 * a new pet's id is past every id the old store gave.
 */
async function backupUnderLoad(
  server: Running,
  token: string,
  backup: () => Promise<{ code: number | null; stderr: string }>,
  restored: () => Promise<Running>,
) {
  const traffic = load(server, token);
  await traffic.until(300);
  const began = performance.now();
  const before = [...traffic.acks];
  const made = await backup();
  const ended = performance.now();
  await Bun.sleep(200);
  await traffic.stop();
  // A change after the backup: its tag must never name a state of the restored store.
  const patch = (url: string, name: string) =>
    fetch(`${url}/v1/pets/${before[0]?.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ name }),
    });
  const lost = await patch(server.url, 'lost');
  expect(lost.status).toBe(200);
  const lostTag = lost.headers.get('etag');
  expect([made.code, made.stderr]).toEqual([0, expect.stringContaining('backup: ')]);
  const during = traffic.acks.filter((a) => a.at > began && a.at < ended).length;
  expect(during).toBeGreaterThan(0);
  const oldMax = Math.max(...traffic.acks.map((a) => a.id));

  const fresh = await restored();
  try {
    const missing: number[] = [];
    for (const pet of before) {
      const res = await fetch(`${fresh.url}/v1/pets/${pet.id}`, { headers: { authorization: `Bearer ${token}` } });
      const body = (await res.json()) as { name?: string };
      if (res.status !== 200 || body.name !== pet.name) missing.push(pet.id);
    }
    expect([before.length, missing]).toEqual([before.length, []]);
    const changed = await patch(fresh.url, 'changed after the restore');
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(lostTag);
    const res = await fetch(`${fresh.url}/v1/pets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'after-restore', categoryId: 1 }),
    });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: number };
    expect(id).toBeGreaterThan(oldMax);
    console.log(
      `backup: ${before.length} pets acknowledged before it, ${during} while it ran; all served after the restore; the next id ${id} (old store's last ${oldMax})`,
    );
  } finally {
    expect(await fresh.stop()).toBe(0);
  }
}

/** Adds consumer `acme` to the keys at `where`, with quotas no run reaches. */
function addAcme(where: string[]) {
  return runCommand([
    'keys',
    'add',
    ...where,
    '--consumer',
    'acme',
    '--plan',
    'enterprise',
    '--per-minute',
    '100000',
    '--per-day',
    '1000000',
  ]);
}

describe('a backup under load, restored into a new server', () => {
  test('SQLite: petstore backup (VACUUM INTO) and petstore restore, with the keys file beside it', async () => {
    const dir = tmp();
    const keys = join(dir, 'keys.json');
    const add = await addAcme(['--keys', keys]);
    expect(add.code).toBe(0);
    const token = add.stdout.trim();
    const data = join(dir, 'petstore.db');
    const server = await startServer({ args: ['--keys', keys, '--data', data] });
    const backup = join(dir, 'backup.db');
    const elsewhere = tmp();
    try {
      await backupUnderLoad(
        server,
        token,
        () => runCommand(['backup', '--data', data, '--to', backup, '--keys', keys]),
        async () => {
          const restore = await runCommand([
            'restore',
            '--from',
            backup,
            '--data',
            join(elsewhere, 'petstore.db'),
            '--keys',
            join(elsewhere, 'keys.json'),
          ]);
          expect([restore.code, restore.stderr]).toEqual([
            0,
            expect.stringContaining(`restore: ${backup}.keys.json -> ${join(elsewhere, 'keys.json')}`),
          ]);
          return startServer({
            args: ['--keys', join(elsewhere, 'keys.json'), '--data', join(elsewhere, 'petstore.db')],
          });
        },
      );
    } finally {
      expect(await server.stop()).toBe(0);
    }
  }, 60_000);

  test.skipIf(!PG_SERVER)(
    "PostgreSQL: the fleet guide's role, keys in the store; petstore backup (pg_dump) and restore (pg_restore) into a new database",
    async () => {
      const role = `petstore_app_${process.pid}`;
      const source = `petstore_backup_${process.pid}`;
      const target = `petstore_restored_${process.pid}`;
      const admin = postgres(PG_SERVER, { max: 1, onnotice: () => {} });
      const urlOf = (db: string) => {
        const url = new URL(PG_SERVER);
        url.username = role;
        url.pathname = `/${db}`;
        return url.toString();
      };
      try {
        // As docs/fleet.md says: a LOGIN role (no superuser) owning its database.
        await admin.unsafe(`CREATE ROLE ${role} LOGIN`);
        await admin.unsafe(`CREATE DATABASE ${source} OWNER ${role}`);
        const add = await addAcme(['--data', urlOf(source)]);
        expect([add.code, add.stderr]).toEqual([0, expect.stringContaining('key id: ')]);
        const token = add.stdout.trim();
        const server = await startServer({ args: ['--keys', 'store', '--data', urlOf(source)] });
        const backup = join(tmp(), 'petstore.dump');
        try {
          await backupUnderLoad(
            server,
            token,
            () => runCommand(['backup', '--data', urlOf(source), '--to', backup]),
            async () => {
              await admin.unsafe(`CREATE DATABASE ${target} OWNER ${role}`);
              const restore = await runCommand(['restore', '--from', backup, '--data', urlOf(target)]);
              expect([restore.code, restore.stderr]).toEqual([0, expect.stringContaining('--id-gap 1000000000')]);
              return startServer({ args: ['--keys', 'store', '--data', urlOf(target)] });
            },
          );
        } finally {
          expect(await server.stop()).toBe(0);
        }
      } finally {
        await admin.unsafe(`DROP DATABASE IF EXISTS ${source} WITH (FORCE)`);
        await admin.unsafe(`DROP DATABASE IF EXISTS ${target} WITH (FORCE)`);
        await admin.unsafe(`DROP ROLE IF EXISTS ${role}`);
        await admin.end({ timeout: 5 });
      }
    },
    90_000,
  );
});
