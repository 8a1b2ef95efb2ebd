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
import { MIGRATIONS, SCHEMA_VERSION } from '../src/store/migrations.ts';
import { migratePostgres } from '../src/store/postgres.ts';
import { type Running, runCommand, startServer, tokenOf, writeKeysFile } from '../test/harness.ts';
import { freshDatabase, type TestDatabase } from '../test/postgres.ts';

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
    const live: Running[] = [await startServer({ args }), await startServer({ args })];
    const statuses: Record<number, number> = {};
    const acks: { id: number; name: string }[] = [];
    let running = true;
    let n = 0;
    const auth = { authorization: `Bearer ${tokenOf('acme')}` };
    const clients = Array.from({ length: 4 }, async (_, c) => {
      while (running) {
        const server = live[n % live.length] as Running;
        const name = `pet-${n++}`;
        const res =
          c % 2 === 0
            ? await fetch(`${server.url}/v1/pets`, {
                method: 'POST',
                headers: { ...auth, 'content-type': 'application/json' },
                body: JSON.stringify({ name, categoryId: 1 }),
              })
            : await fetch(`${server.url}/v1/pets?limit=20`, { headers: auth });
        const body = (await res.json()) as { id: number };
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        if (res.status === 201) acks.push({ id: body.id, name });
      }
    });
    try {
      await Bun.sleep(500);
      // The later release's migration, by the code a release runs: expand pets, index it concurrently.
      const later = {
        version: SCHEMA_VERSION + 1,
        name: 'later_pets_note',
        sqlite: '',
        postgres: 'ALTER TABLE pets ADD COLUMN later_note TEXT',
        readableFrom: SCHEMA_VERSION,
        indexes: [{ name: 'pets_later_note', on: 'ON pets (later_note)' }],
      };
      const conn = postgres(db.url, { max: 1, onnotice: () => {} });
      expect(await migratePostgres(conn, 'later release', { migrations: [...MIGRATIONS, later] })).toEqual({
        migrated: [SCHEMA_VERSION + 1],
        version: SCHEMA_VERSION + 1,
      });
      await conn.end();
      // A third instance on the later schema.
      const third = await startServer({ args });
      expect(third.lines.some((l) => l.includes('serving a newer schema'))).toBe(true);
      live.push(third);
      await Bun.sleep(500);
      // One of the first two restarts on it (out of the balancer first, as a rolling restart does).
      const first = live.shift() as Running;
      expect(await first.stop()).toBe(0);
      const restarted = await startServer({ args });
      live.push(restarted);
      await Bun.sleep(500);
    } finally {
      running = false;
      await Promise.all(clients);
    }
    expect(Object.keys(statuses).sort()).toEqual(['200', '201']);
    const reader = live[0] as Running;
    const missing: number[] = [];
    for (const pet of acks) {
      const res = await fetch(`${reader.url}/v1/pets/${pet.id}`, { headers: auth });
      if (res.status !== 200 || ((await res.json()) as { name: string }).name !== pet.name) missing.push(pet.id);
    }
    expect([acks.length > 50, missing]).toEqual([true, []]);
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
    expect((await fetch(`${reader.url}/v1/pets?limit=1`, { headers: auth })).status).toBe(200);
    for (const server of live) expect(await server.stop()).toBe(0);
  }, 90_000);
});
