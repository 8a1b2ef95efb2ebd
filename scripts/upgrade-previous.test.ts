/**
 * docs/operations.md's upgrade "from the release before this one" (447dbb3, schema 7) and its
 * rollback, followed on PostgreSQL under steady traffic. The previous release
 * (PETSTORE_UPGRADE_BASE, which `make upgrade-test` sets; else the parent of the commit that added
 * src/cli/migrate.ts; built as `make bench` builds its base, in dist/bench-base-<commit>/) serves
 * two instances; a backup is taken; this build's `migrate up` applies its migrations (8
 * pet_versions, 9 orders) while the old instances keep serving; they are replaced one by one
 * with this build (an old one cannot restart: it refuses the newer schema). Back: the fleet
 * stopped, the backup restored into a new database, the pets of the upgraded one carried over
 * (the documented psql \copy), the previous release started on it. No request is answered 5xx,
 * and every pet acknowledged at any point is served at the end by the previous release; a pet
 * deleted after the upgrade stays deleted, and the next id is past every id given. And what the
 * docs say of the window: a create's Idempotency-Key used on an old instance after the migration
 * is not recognised by this build.
 *
 * Needs PETSTORE_TEST_POSTGRES_URL and git history: `make upgrade-test` (~1 min with the base's build).
 */
import { afterAll, describe, expect, test } from 'bun:test';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildBase } from '../bench/lib/base.ts';
import {
  type Running,
  runCommand,
  serverCommand,
  spawnServer,
  tokenOf,
  writeKeysFile,
  writeLauncher,
} from '../test/harness.ts';
import { freshDatabase, type TestDatabase } from '../test/postgres.ts';
import { notServed, steadyTraffic } from '../test/traffic.ts';

const PG_SERVER = process.env.PETSTORE_TEST_POSTGRES_URL ?? '';
const ROOT = join(import.meta.dir, '..');

/** The previous release: PETSTORE_UPGRADE_BASE, else the parent of the commit that added `petstore migrate`. */
function previousRelease(): string | undefined {
  if (process.env.PETSTORE_UPGRADE_BASE) return process.env.PETSTORE_UPGRADE_BASE;
  try {
    const added = execFileSync(
      'git',
      ['-C', ROOT, 'log', '--diff-filter=A', '--format=%H', '--', 'src/cli/migrate.ts'],
      {
        encoding: 'utf8',
      },
    )
      .trim()
      .split('\n')
      .at(-1);
    return added ? `${added}^` : undefined;
  } catch {
    return undefined;
  }
}

/** A `sh` block of docs/operations.md: the one after the marker that starts with `marker`. */
function operationsBlock(marker: string): string {
  const page = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
  const at = page.indexOf(marker);
  if (at < 0) throw new Error(`docs/operations.md: no block marked "${marker}"`);
  return /```sh\n([\s\S]*?)```/.exec(page.slice(at))?.[1] ?? '';
}

/**
 * The rollback block of docs/operations.md: its restore and psql lines, as written. Its
 * `systemctl` lines and the database's creation are the test's own (no systemd; a throwaway database).
 */
function rollbackBlock(): string {
  return operationsBlock("<!-- tested: scripts/upgrade-previous.test.ts runs this block's restore")
    .split('\n')
    .filter((line) => !line.startsWith('systemctl ') && !line.includes('CREATE DATABASE'))
    .join('\n');
}

const BASE_REF = previousRelease();
if (PG_SERVER && !BASE_REF)
  console.warn('upgrade-previous.test.ts: no git history to find the previous release; skipped');
let db: TestDatabase | undefined;
let back: TestDatabase | undefined;
const dir = mkdtempSync(join(tmpdir(), 'petstore-upgrade-'));
afterAll(async () => {
  await db?.drop();
  await back?.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** `spawnServer` with `command` instead of PETSTORE_CMD. */
async function startWith(command: string, args: string[]): Promise<Running> {
  const saved = process.env.PETSTORE_CMD;
  process.env.PETSTORE_CMD = command;
  try {
    return await spawnServer({ args });
  } finally {
    if (saved === undefined) delete process.env.PETSTORE_CMD;
    else process.env.PETSTORE_CMD = saved;
  }
}

/** `POST /v1/pets` (with an Idempotency-Key when given): its status and id. */
async function create(server: Running, name: string, key?: string): Promise<{ status: number; id: number }> {
  const res = await fetch(`${server.url}/v1/pets`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${tokenOf('acme')}`,
      'content-type': 'application/json',
      ...(key ? { 'idempotency-key': key } : {}),
    },
    body: JSON.stringify({ name, categoryId: 1 }),
  });
  return { status: res.status, id: ((await res.json()) as { id: number }).id };
}

describe.skipIf(!PG_SERVER || !BASE_REF)('from the previous release to this one and back, on PostgreSQL', () => {
  test('migrate up under the old fleet, instance by instance, then back by restore and carry-over: no 5xx, every acknowledged pet kept', async () => {
    const base = buildBase(BASE_REF as string);
    const current = serverCommand().join(' ');
    db = await freshDatabase(PG_SERVER, `petstore_upgrade_${process.pid}`);
    back = await freshDatabase(PG_SERVER, `petstore_rollback_${process.pid}`);
    const keys = writeKeysFile([
      { name: 'acme', plan: 'enterprise', limits: { perMinute: 1_000_000, perDay: 10_000_000 } },
    ]);
    const args = (url: string) => ['--keys', keys, '--data', url];
    const live: Running[] = [await startWith(base.binary, args(db.url)), await startWith(base.binary, args(db.url))];
    const traffic = steadyTraffic(live, tokenOf('acme'));
    const dump = join(dir, 'before-upgrade.dump');
    let retried = { status: 0, id: 0 };
    let gone = { status: 0, id: 0 };
    try {
      await Bun.sleep(400);
      // A pet from before the backup that is deleted after the upgrade: the rollback must not bring it back.
      gone = await create(live[0] as Running, 'deleted-after-the-upgrade');
      expect(gone.status).toBe(201);
      // Step 1: a backup. Step 2: this build migrates while the old instances serve.
      expect((await runCommand(['backup', '--data', db.url, '--to', dump])).code).toBe(0);
      const status = await runCommand(['migrate', 'status', '--data', db.url, '--json']);
      expect(JSON.parse(status.stdout)).toMatchObject({
        database: 7,
        verdict: 'migrates it',
        pending: [
          { version: 8, name: 'pet_versions' },
          { version: 9, name: 'orders' },
          { version: 10, name: 'consumer_ids' },
        ],
      });
      // The page's `migrate status` and `migrate up`, as written: what they print is what their comments say.
      const migrate = operationsBlock('<!-- tested: scripts/upgrade-previous.test.ts runs this block on');
      const shown = migrate
        .trimEnd()
        .split('\n')
        .flatMap((line) => line.slice(line.indexOf('# ') + 2).split(' / '));
      const run = Bun.spawn(['bash', '-euo', 'pipefail', '-c', migrate], {
        env: {
          ...process.env,
          PATH: `${writeLauncher(join(dir, 'bin/petstore'))}:${process.env.PATH}`,
          PETSTORE_DATA: db.url,
        },
        stdout: 'pipe',
        stderr: 'pipe',
      });
      const [out, err] = [await new Response(run.stdout).text(), await new Response(run.stderr).text()];
      // `migrate status` writes on stdout, `migrate up` on stderr: one after the other.
      expect([await run.exited, `${out}${err}`.trimEnd().split('\n')]).toEqual([0, shown]);
      await Bun.sleep(1500); // the old instances serve the migrated schema
      // A create keyed on an old instance after the migration is not recognised by this build (the key's scope form differs).
      const keyed = await create(live[0] as Running, 'keyed', 'upgrade-window-key');
      expect(keyed.status).toBe(201);
      // An old instance cannot restart on it: it refuses the newer schema.
      const refused = Bun.spawnSync([base.binary, ...args(db.url), '--port', '0']);
      expect([refused.exitCode, refused.stderr.toString()]).toEqual([2, expect.stringContaining('newer petstore')]);
      // Step 3: instance by instance, out of the balancer, stopped, this build started, back in.
      for (let i = 0; i < 2; i++) {
        const old = live.shift() as Running;
        await traffic.drain(old);
        expect(await old.stop()).toBe(0);
        live.push(await startWith(current, args(db.url)));
        await Bun.sleep(400);
      }
      retried = await create(live[1] as Running, 'keyed', 'upgrade-window-key');
      expect([retried.status, retried.id === keyed.id]).toEqual([201, false]);
      const deleted = await fetch(`${(live[0] as Running).url}/v1/pets/${gone.id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${tokenOf('acme')}` },
      });
      expect(deleted.status).toBe(204);
      await Bun.sleep(1000);
    } finally {
      await traffic.stop();
    }
    // Rollback, as documented: the fleet stopped, the backup restored into a new database, the
    // pets of the upgraded one carried over, the previous release started on it.
    for (const server of live.splice(0)) expect(await server.stop()).toBe(0);
    // The page's restore and carry-over, with this build as `petstore` and the backup of step 1.
    const bin = writeLauncher(join(dir, 'bin/petstore'));
    const carry = Bun.spawnSync(
      ['bash', '-euo', 'pipefail', '-c', rollbackBlock().replaceAll('/backup/before-upgrade.dump', dump)],
      { env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, ROLLBACK: back.url, PETSTORE_DATA: db.url } },
    );
    expect([carry.exitCode, carry.stderr.toString()]).toEqual([0, expect.stringContaining('--id-gap')]);
    const previous = await startWith(base.binary, args(back.url));
    const { statuses, acks } = traffic;
    expect(Object.keys(statuses).sort()).toEqual(['200', '201']);
    expect([acks.length > 50, await notServed(previous, tokenOf('acme'), acks)]).toEqual([true, []]);
    const stillGone = await fetch(`${previous.url}/v1/pets/${gone.id}`, {
      headers: { authorization: `Bearer ${tokenOf('acme')}` },
    });
    expect(stillGone.status).toBe(404);
    // Ids go on past every id the upgraded store gave.
    const { status: createdStatus, id } = await create(previous, 'after-rollback');
    expect(createdStatus).toBe(201);
    expect([retried.id, ...acks.map((a) => a.id)].every((known) => known < id)).toBe(true);
    console.log(
      `upgrade from ${BASE_REF} (${base.commit}) and back: ${JSON.stringify(statuses)}; ${acks.length} pets acknowledged, all served after the rollback`,
    );
    expect(await previous.stop()).toBe(0);
  }, 240_000);
});
