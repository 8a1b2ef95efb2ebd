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
 * And docs/operations.md's SQLite backup and restore block, run as written.
 *
 * `make backup-test` (on a throwaway PostgreSQL).
 */
import { afterAll, describe, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { type Running, runCommand, spawnServer, writeLauncher } from '../test/harness.ts';

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
    const server = await spawnServer({ args: ['--keys', keys, '--data', data] });
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
          return spawnServer({
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
        const server = await spawnServer({ args: ['--keys', 'store', '--data', urlOf(source)] });
        const backup = join(tmp(), 'petstore.dump');
        try {
          await backupUnderLoad(
            server,
            token,
            () => runCommand(['backup', '--data', urlOf(source), '--to', backup]),
            async () => {
              // docs/operations.md's PostgreSQL restore, as written: psql as the server's superuser.
              const page = readFileSync(join(import.meta.dir, '../docs/operations.md'), 'utf8');
              const at = page.indexOf('<!-- tested: scripts/backup.test.ts runs this block with psql');
              const block = (/```sh\n([\s\S]*?)```/.exec(page.slice(at))?.[1] ?? '')
                .replaceAll('petstore_restored OWNER petstore', `${target} OWNER ${role}`)
                .replace(/postgres:\/\/petstore:secret@db\.internal:5432\/petstore_restored/, urlOf(target))
                .replace('/backup/petstore.dump', backup);
              const pg = new URL(PG_SERVER);
              const bin = writeLauncher(join(tmp(), 'bin/petstore'));
              const restore = Bun.spawn(['bash', '-euo', 'pipefail', '-c', block], {
                env: {
                  ...process.env,
                  PATH: `${bin}:${process.env.PATH}`,
                  PGHOST: pg.hostname,
                  PGPORT: pg.port,
                  PGUSER: decodeURIComponent(pg.username),
                  PGPASSWORD: decodeURIComponent(pg.password),
                  PGDATABASE: pg.pathname.slice(1),
                },
                stdout: 'pipe',
                stderr: 'pipe',
              });
              const [out, err] = [await new Response(restore.stdout).text(), await new Response(restore.stderr).text()];
              expect([await restore.exited, out, err]).toEqual([
                0,
                'CREATE DATABASE\n',
                expect.stringContaining('--id-gap 1000000000'),
              ]);
              return spawnServer({ args: ['--keys', 'store', '--data', urlOf(target)] });
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

describe("the operations guide's SQLite backup and restore, as written", () => {
  test('the backup says what it holds and its copies; the restored file serves its pets, and a new pet gets a new id', async () => {
    const page = readFileSync(join(import.meta.dir, '../docs/operations.md'), 'utf8');
    const at = page.indexOf('<!-- tested: scripts/backup.test.ts runs this block as written');
    const block = /```sh\n([\s\S]*?)```/.exec(page.slice(at))?.[1] ?? '';
    const [backupPart = '', restorePart = ''] = block.split('systemctl stop petstore\n');
    // The page's folders under a temporary one; petstore is the build under test.
    const root = tmp();
    for (const folder of ['backup', 'var/lib/petstore', 'etc/petstore'])
      mkdirSync(join(root, folder), { recursive: true });
    const bin = writeLauncher(join(root, 'bin/petstore'));
    const here = (text: string) =>
      text
        .replaceAll(' /backup/', ` ${root}/backup/`)
        .replaceAll('=/backup/', `=${root}/backup/`)
        .replaceAll('/var/lib/petstore/', `${root}/var/lib/petstore/`)
        .replaceAll('/etc/petstore/', `${root}/etc/petstore/`);
    const keys = `${root}/etc/petstore/keys.json`;
    const data = `${root}/var/lib/petstore/petstore.db`;
    const add = await addAcme(['--keys', keys]);
    expect(add.code).toBe(0);
    const token = add.stdout.trim();
    const server = await spawnServer({ args: ['--keys', keys, '--data', data] });
    const ids: number[] = [];
    for (const name of ['Rex', 'Tom', 'Kiwi']) ids.push((await create(server, token, name)).id);
    const shell = (script: string) =>
      spawnSync('bash', ['-euo', 'pipefail', '-c', script], {
        env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
        encoding: 'utf8',
      });
    // The backup while the server serves; the variable it sets is kept for the restore.
    const backup = shell(`${here(backupPart)}\necho "$BACKUP"`);
    expect(backup.status).toBe(0);
    const shown = backupPart
      .split('\n')
      .filter((l) => l.startsWith('# backup: '))
      .map((l) => here(l.slice(2)));
    const normal = (lines: string[]) =>
      lines.map((l) =>
        l.replace(/\d{4}-\d{2}-\d{2}/, 'DATE').replace(/\d+ pets, ids up to \d+/, 'N pets, ids up to M'),
      );
    expect(normal(backup.stderr.trimEnd().split('\n'))).toEqual(normal(shown));
    expect(backup.stderr).toContain(`(3 pets, ids up to ${Math.max(...ids)}, `);
    // A pet created after the backup is lost with the store the restore replaces.
    const late = await create(server, token, 'late');
    expect(await server.stop()).toBe(0);
    const restore = shell(
      `BACKUP=${backup.stdout.trim()}\n${here(restorePart).replace('systemctl start petstore', '').replace('chown petstore:', 'chown "$(id -un):"')}`,
    );
    expect([restore.status, restore.stderr]).toEqual([0, expect.stringContaining(`${data}.replaced-`)]);
    const restored = await spawnServer({ args: ['--keys', keys, '--data', data] });
    try {
      const listed = (await (
        await fetch(`${restored.url}/v1/pets?limit=100`, { headers: { authorization: `Bearer ${token}` } })
      ).json()) as { id: number }[];
      expect(listed.map((p) => p.id)).toEqual(ids);
      expect((await create(restored, token, 'after')).id).toBeGreaterThan(late.id);
    } finally {
      expect(await restored.stop()).toBe(0);
    }
  }, 60_000);
});

/** `POST /v1/pets` on `server` with `token`: its status and id. */
async function create(server: Running, token: string, name: string): Promise<{ status: number; id: number }> {
  const res = await fetch(`${server.url}/v1/pets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, categoryId: 1 }),
  });
  return { status: res.status, id: ((await res.json()) as { id: number }).id };
}
