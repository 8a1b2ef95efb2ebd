/**
 * docs/operations.md's upgrade "from the release before this one" and its rollback, followed on
 * PostgreSQL: the previous release (PETSTORE_UPGRADE_BASE, which `make upgrade-test` sets to the
 * last commit landed before readable_from and `petstore migrate`; else the parent of the commit
 * that added src/cli/migrate.ts; built as `make bench` builds its base, in dist/bench-base-<commit>/)
 * serves two instances under steady traffic; a backup is taken; the instances are replaced one
 * by one with this build, then back with the previous one. No request is answered 5xx, and every
 * pet acknowledged at any point is served at the end, by both builds.
 *
 * Needs PETSTORE_TEST_POSTGRES_URL and git history: `make upgrade-test` (~1 min with the base's build).
 */
import { afterAll, describe, expect, test } from 'bun:test';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildBase } from '../bench/lib/base.ts';
import { type Running, runCommand, serverCommand, startServer, tokenOf, writeKeysFile } from '../test/harness.ts';
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

const BASE_REF = previousRelease();
if (PG_SERVER && !BASE_REF)
  console.warn('upgrade-previous.test.ts: no git history to find the previous release; skipped');
let db: TestDatabase | undefined;
const dir = mkdtempSync(join(tmpdir(), 'petstore-upgrade-'));
afterAll(async () => {
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** `startServer` with `command` instead of PETSTORE_CMD. */
async function startWith(command: string, args: string[]): Promise<Running> {
  const saved = process.env.PETSTORE_CMD;
  process.env.PETSTORE_CMD = command;
  try {
    return await startServer({ args });
  } finally {
    if (saved === undefined) delete process.env.PETSTORE_CMD;
    else process.env.PETSTORE_CMD = saved;
  }
}

describe.skipIf(!PG_SERVER || !BASE_REF)('from the previous release to this one and back, on PostgreSQL', () => {
  test('instance by instance under steady traffic: no 5xx, every acknowledged pet kept, both ways', async () => {
    const base = buildBase(BASE_REF as string);
    const current = serverCommand().join(' ');
    db = await freshDatabase(PG_SERVER, `petstore_upgrade_${process.pid}`);
    const keys = writeKeysFile([
      { name: 'acme', plan: 'enterprise', limits: { perMinute: 1_000_000, perDay: 10_000_000 } },
    ]);
    const args = ['--keys', keys, '--data', db.url];
    const live: Running[] = [await startWith(base.binary, args), await startWith(base.binary, args)];
    const traffic = steadyTraffic(live, tokenOf('acme'));
    /** Out of the balancer, stopped, started on `command`, back in: each instance in turn. */
    const replaceAll = async (command: string) => {
      for (let i = 0; i < 2; i++) {
        const old = live.shift() as Running;
        await traffic.drain(old);
        expect(await old.stop()).toBe(0);
        live.push(await startWith(command, args));
        await Bun.sleep(400);
      }
    };
    try {
      await Bun.sleep(400);
      // The steps: a backup first, what the new build says of the store, then instance by instance.
      const backup = await runCommand(['backup', '--data', db.url, '--to', join(dir, 'before-upgrade.dump')]);
      expect(backup.code).toBe(0);
      const status = await runCommand(['migrate', 'status', '--data', db.url, '--json']);
      expect(JSON.parse(status.stdout)).toMatchObject({ pending: [], verdict: 'serves it' });
      await replaceAll(current);
      expect(live.every((s) => s.lines.some((l) => l.includes(`"version":`)))).toBe(true);
      // And back: the rollback, the same way with the previous release's binary.
      await replaceAll(base.binary);
    } finally {
      await traffic.stop();
    }
    const { statuses, acks } = traffic;
    expect(Object.keys(statuses).sort()).toEqual(['200', '201']);
    expect([acks.length > 50, await notServed(live[0] as Running, tokenOf('acme'), acks)]).toEqual([true, []]);
    console.log(
      `upgrade from ${BASE_REF} (${base.commit}) and back: ${JSON.stringify(statuses)}; ${acks.length} pets acknowledged, all served`,
    );
    for (const server of live) expect(await server.stop()).toBe(0);
  }, 240_000);
});
