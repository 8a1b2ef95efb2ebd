/**
 * A rolling upgrade on PostgreSQL, as docs/operations.md ("Upgrades and rollbacks") describes it:
 * two instances of this build serve steady traffic while a later release migrates the database
 * one step further (simulated: an additive migration that alters `pets` and builds an index,
 * applied by the same code a release runs, recording readable_from = this build's version); a
 * third instance starts on the later schema, one of the first two restarts on it, and no request
 * is answered 5xx; every acknowledged pet is served at the end. A later contract migration (one
 * not readable by this build) makes a new instance refuse to start, exit 2, naming the version
 * it needs.
 *
 * Needs PETSTORE_TEST_POSTGRES_URL: `make rolling-upgrade-test`.
 */
import { afterAll, describe, expect, test } from 'bun:test';
import postgres from 'postgres';
import { migratePostgres } from '../src/store/postgres/postgres-migrate.ts';
import { MIGRATIONS, SCHEMA_VERSION } from '../src/store/sql/migrations.ts';
import { type Running, runCommand, spawnServer, tokenOf, writeKeysFile } from '../test/harness.ts';
import { freshDatabase, laterMigration, type TestDatabase } from '../test/postgres.ts';
import { notServed, steadyTraffic } from '../test/traffic.ts';

const PG_SERVER = process.env.PETSTORE_TEST_POSTGRES_URL ?? '';
let db: TestDatabase | undefined;
afterAll(async () => db?.drop());

describe.skipIf(!PG_SERVER)('a rolling upgrade on PostgreSQL', () => {
  test('this build serves a schema a later release migrated, under steady traffic on two instances and a third: no 5xx, every pet kept', async () => {
    db = await freshDatabase(PG_SERVER, `petstore_rolling_${process.pid}`);
    const keys = writeKeysFile([
      { name: 'acme', plan: 'enterprise', limits: { perMinute: 1_000_000, perDay: 10_000_000 } },
    ]);
    const args = ['--keys', keys, '--data', db.url];
    const live: Running[] = [await spawnServer({ args }), await spawnServer({ args })];
    const traffic = steadyTraffic(live, tokenOf('acme'));
    try {
      await Bun.sleep(500);
      // The later release's migration, by the code a release runs: expand pets, index it concurrently.
      const later = laterMigration();
      const conn = postgres(db.url, { max: 1, onnotice: () => {} });
      expect(await migratePostgres(conn, 'later release', { migrations: [...MIGRATIONS, later] })).toEqual({
        migrated: [SCHEMA_VERSION + 1],
        version: SCHEMA_VERSION + 1,
      });
      await conn.end();
      // A third instance on the later schema.
      const third = await spawnServer({ args });
      expect(third.lines.some((l) => l.includes('serving a newer schema'))).toBe(true);
      live.push(third);
      await Bun.sleep(500);
      // One of the first two restarts on it (out of the balancer first, as a rolling restart does).
      const first = live.shift() as Running;
      await traffic.drain(first);
      expect(await first.stop()).toBe(0);
      const restarted = await spawnServer({ args });
      live.push(restarted);
      await Bun.sleep(500);
    } finally {
      await traffic.stop();
    }
    const { statuses, acks } = traffic;
    expect(Object.keys(statuses).sort()).toEqual(['200', '201']);
    const reader = live[0] as Running;
    expect([acks.length > 50, await notServed(reader, tokenOf('acme'), acks)]).toEqual([true, []]);
    console.log(`rolling upgrade: ${JSON.stringify(statuses)}; ${acks.length} pets acknowledged, all served`);

    // A contract migration of a later major release: this build no longer serves the schema.
    const admin = postgres(db.url, { max: 1, onnotice: () => {} });
    await admin`INSERT INTO schema_migrations (version, name, applied_at, readable_from)
      VALUES (${SCHEMA_VERSION + 2}, 'later_contract', ${new Date().toISOString()}, ${SCHEMA_VERSION + 2})`;
    await admin.end();
    const refused = await runCommand([...args, '--port', '0', '--host', '127.0.0.1']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `the database has schema version ${SCHEMA_VERSION + 2}, which a petstore of schema version ${SCHEMA_VERSION + 2} or later serves`,
    );
    // The instances already running keep serving: a migration never stops them.
    const auth = { authorization: `Bearer ${tokenOf('acme')}` };
    expect((await fetch(`${reader.url}/v1/pets?limit=1`, { headers: auth })).status).toBe(200);
    for (const server of live) expect(await server.stop()).toBe(0);
  }, 90_000);
});
