/**
 * Keys for a fleet: two instances of the built binary with `--keys store` and `--admin-port` on
 * one PostgreSQL database (limits shared through Redis):
 * - a consumer and key made through A's admin API answer 200 on B within 2 s; a key revoked on B
 *   is 401 on A within 2 s; a rotation keeps one quota across old and new key on both; the audit
 *   trail on either shows every change with its actor;
 * - B's connections to PostgreSQL killed during a change: B converges within 2 s of reconnecting;
 * - kill -9 in the middle of 200 admin writes: every write answered 201 is in the store and in the
 *   audit trail, and no change is there without its record or the other way round;
 * - the time from an admin write on A to its effect on B, over 50 writes (p50, p99: printed);
 * - the database stopped: B keeps its keys, says so in /readyz and its log, and catches up after.
 *
 * Needs PETSTORE_TEST_POSTGRES_URL and PETSTORE_TEST_REDIS_URL: `make keys-store-test`.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { type Running, runCommand, spawnServer } from '../test/harness.ts';
import { freshDatabase, type TestDatabase } from '../test/postgres.ts';

const PG_SERVER = process.env.PETSTORE_TEST_POSTGRES_URL ?? '';
const REDIS = process.env.PETSTORE_TEST_REDIS_URL ?? '';
const PG_DIR = process.env.PETSTORE_TEST_POSTGRES_DIR ?? '';
const READY = Boolean(PG_SERVER && REDIS);
if (!READY)
  console.warn(
    'keys-store.test.ts: needs PETSTORE_TEST_POSTGRES_URL and PETSTORE_TEST_REDIS_URL; skipped. Run it with: make keys-store-test',
  );

/** The bound for a change made on one instance to be in force on another. */
const FLEET_MS = 2_000;
/** Longer than a grant's term (at most 1 s) and the sweep that hands its unused units back (0.5 s). */
const LEASE_SETTLED_MS = 1_600;
const database = `petstore_keys_${process.pid}`;
let db: TestDatabase | undefined;
let url = '';
let adminToken = '';
let a: Running;
let b: Running;

const adminUrl = (server: Running) => {
  const line = server.lines.find((l) => l.includes('"msg":"listening"')) ?? '{}';
  return String((JSON.parse(line) as { admin?: string }).admin);
};

async function admin(server: Running, method: string, path: string, body?: unknown) {
  const res = await fetch(adminUrl(server) + path, {
    method,
    headers: { Authorization: `Bearer ${adminToken}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

async function get(server: Running, token: string) {
  const res = await fetch(`${server.url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res;
}

/** Milliseconds until `token` answers `status` on `server`; throws past the bound and a margin. */
async function until(server: Running, token: string, status: number, bound = FLEET_MS): Promise<number> {
  const started = performance.now();
  while ((await get(server, token)).status !== status) {
    if (performance.now() - started > bound + 2_000)
      throw new Error(`not ${status} in time:\n${server.lines.slice(-20).join('\n')}`);
    await Bun.sleep(10);
  }
  return performance.now() - started;
}

const serve = (extra: string[] = []) =>
  spawnServer({ args: ['--keys', 'store', '--data', url, '--redis', REDIS, '--admin-port', '0', ...extra] });

beforeAll(async () => {
  if (!READY) return;
  db = await freshDatabase(PG_SERVER, database);
  url = db.url;
  // The first admin key, from the CLI (it also applies the migrations).
  const add = await runCommand([
    'keys',
    'add',
    '--data',
    url,
    '--consumer',
    'ops',
    '--plan',
    'enterprise',
    '--per-minute',
    '100000',
    '--per-day',
    '10000000',
    '--scopes',
    'admin',
    '--id',
    'a1',
  ]);
  expect(add.code).toBe(0);
  adminToken = add.stdout.trim();
  [a, b] = await Promise.all([serve(), serve()]);
});

afterAll(async () => {
  await Promise.all([a, b].map((s) => s?.stop()));
  await db?.drop();
});

describe.skipIf(!READY)('two instances, one key store', () => {
  test('made on A, in force on B within 2 s; revoked on B, refused on A within 2 s; a rotation keeps one quota; both show the trail', async () => {
    expect((await admin(a, 'POST', '/consumers', { name: 'shop', plan: 'free' })).status).toBe(201);
    const made = await admin(a, 'POST', '/consumers/shop/keys', { id: 'k1' });
    expect(made.status).toBe(201);
    const k1 = String(made.body?.token);
    // In force on A when A answers 201; on B within 2 s.
    expect((await get(a, k1)).status).toBe(200);
    expect(await until(b, k1, 200)).toBeLessThanOrEqual(FLEET_MS);

    const rotated = await admin(b, 'POST', '/consumers/shop/rotate', { overlap: '1h', id: 'k2' });
    expect(rotated.status).toBe(201);
    const k2 = String(rotated.body?.token);
    expect(await until(a, k2, 200)).toBeLessThanOrEqual(FLEET_MS);
    // Old and new key, on A and on B: one quota (Redis), falling by one each time. Each request
    // comes after every grant's term is over and its unused units are back (quota leases: docs/fleet.md),
    // so each instance reads Redis's remaining.
    const remaining: number[] = [];
    for (const [server, token] of [
      [a, k1],
      [b, k2],
      [b, k1],
      [a, k2],
    ] as const) {
      await Bun.sleep(LEASE_SETTLED_MS);
      remaining.push(Number((await get(server, token)).headers.get('x-ratelimit-remaining')));
    }
    expect(remaining.map((r) => (remaining[0] as number) - r)).toEqual([0, 1, 2, 3]);

    expect((await admin(b, 'DELETE', '/consumers/shop/keys/k1')).status).toBe(204);
    expect(await until(a, k1, 401)).toBeLessThanOrEqual(FLEET_MS);
    expect((await get(a, k2)).status).toBe(200);

    const actor = { kind: 'admin', consumer: 'ops', key: 'a1' };
    for (const server of [a, b]) {
      const trail = (await admin(server, 'GET', '/audit?after=1')).body as unknown as Record<string, unknown>[];
      expect(trail.map((r) => [r.action, r.consumer, r.key, r.actor])).toEqual([
        ['consumer.create', 'shop', undefined, actor],
        ['key.add', 'shop', 'k1', actor],
        ['key.rotate', 'shop', 'k2', actor],
        ['key.revoke', 'shop', 'k1', actor],
      ]);
    }
    // No token and no hash in the store's trail, nor in either server's log.
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    const trail = (await sql`SELECT record FROM keys_audit`).map((r) => String(r.record)).join('\n');
    await sql.end();
    for (const t of [k1, k2, adminToken]) {
      const hash = createHash('sha256').update(t).digest('hex');
      for (const secret of [t.slice(4, 20), hash, hash.slice(0, 16)]) {
        expect(trail.includes(secret)).toBe(false);
        for (const server of [a, b]) expect(server.lines.filter((l) => l.includes(secret))).toEqual([]);
      }
    }
  });

  test('the time from an admin write on A to its effect on B, over 50 writes', async () => {
    expect((await admin(a, 'POST', '/consumers', { name: 'timed', plan: 'business' })).status).toBe(201);
    const times: number[] = [];
    for (let i = 0; i < 50; i++) {
      const started = performance.now();
      const made = await admin(a, 'POST', '/consumers/timed/keys', { id: `t${i}` });
      expect(made.status).toBe(201);
      const token = String(made.body?.token);
      while ((await get(b, token)).status !== 200) await Bun.sleep(2);
      times.push(performance.now() - started);
    }
    times.sort((x, y) => x - y);
    const p50 = times[24] as number;
    const p99 = times[49] as number;
    console.log(`admin write on A -> in force on B, 50 writes: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`);
    expect(p99).toBeLessThanOrEqual(FLEET_MS);
  });

  test("B's connections to PostgreSQL killed during a change: B converges within 2 s of reconnecting", async () => {
    const made = await admin(a, 'POST', '/consumers', { name: 'cut', plan: 'free' });
    expect(made.status).toBe(201);
    const killed = await killBackendsOf(b);
    expect(killed).toBeGreaterThan(0);
    const key = await admin(a, 'POST', '/consumers/cut/keys', { id: 'c1' });
    expect(key.status).toBe(201);
    // B's next version check reconnects (its pool and its LISTEN connection open again).
    expect(await until(b, String(key.body?.token), 200, FLEET_MS + 1_000)).toBeLessThanOrEqual(FLEET_MS + 1_000);
  });
  test('a webhook, thresholds, costs and enforce set on A are shown on B (the URL, never the secret); null on B removes the webhook on A', async () => {
    const secret = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
    const webhook = { url: 'https://hooks.example/petstore', secret };
    const terms = { costs: { createPet: 3 }, enforce: false, thresholds: [60, 100] };
    const made = await admin(a, 'POST', '/consumers', { name: 'hooked', plan: 'pro', webhook, ...terms });
    expect(made.status).toBe(201);
    const shown = { name: 'hooked', plan: 'pro', webhook: { url: webhook.url }, ...terms };
    expect(made.body).toMatchObject(shown);
    expect((await admin(b, 'GET', '/consumers/hooked')).body).toMatchObject(shown);
    const removed = await admin(b, 'PATCH', '/consumers/hooked', { webhook: null });
    expect(removed.status).toBe(200);
    const after = await admin(a, 'GET', '/consumers/hooked');
    expect(after.body).toMatchObject({ costs: { createPet: 3 }, enforce: false, thresholds: [60, 100] });
    expect(after.body).not.toHaveProperty('webhook');
    const audit = JSON.stringify((await admin(a, 'GET', '/audit?limit=100')).body);
    expect(audit).toContain('"secret":"(set)"');
    const everything = [audit, JSON.stringify(made.body), ...a.lines, ...b.lines].join('\n');
    expect(everything).not.toContain(secret.slice(6, 30));
  });
});

describe.skipIf(!READY)('kill -9 in the middle of admin writes', () => {
  test('every write answered 201 is in the store and in the audit trail; none is half done', async () => {
    const c = await serve();
    const acknowledged: string[] = [];
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop && i < 50; i++) {
        const name = `w${w}-${i}`;
        try {
          const res = await admin(c, 'POST', '/consumers', { name, plan: 'free' });
          if (res.status === 201) acknowledged.push(name);
        } catch {
          return; // the server is gone
        }
      }
    };
    const writers = Promise.all([0, 1, 2, 3].map(writer));
    while (acknowledged.length < 100) await Bun.sleep(5);
    c.child.kill('SIGKILL');
    stop = true;
    await writers;
    await c.stop();
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const consumers = (await sql`SELECT name FROM key_consumers WHERE name LIKE 'w%'`).map((r) => String(r.name));
      const created = (await sql`SELECT record FROM keys_audit`)
        .map((r) => JSON.parse(String(r.record)) as { action: string; consumer: string })
        .filter((r) => r.action === 'consumer.create' && r.consumer.startsWith('w'))
        .map((r) => r.consumer);
      expect(acknowledged.length).toBeGreaterThanOrEqual(100);
      expect(acknowledged.filter((n) => !consumers.includes(n))).toEqual([]);
      // Every consumer there has its record and every record its consumer: no change half done.
      expect([...created].sort()).toEqual([...consumers].sort());
      await expect(sql`DELETE FROM keys_audit`).rejects.toThrow('keys_audit is append-only');
      await expect(sql`UPDATE keys_audit SET record = '{}'`).rejects.toThrow('keys_audit is append-only');
    } finally {
      await sql.end();
    }
  });
});

describe('--keys store on SQLite (one host)', () => {
  test('keys add and keys import --data FILE while a server serves from it: in force within 2 s; a second import changes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-keys-sqlite-'));
    const db = join(dir, 'pets.db');
    const first = await runCommand(['keys', 'add', '--data', db, '--consumer', 'one', '--plan', 'free', '--id', 'o1']);
    expect(first.code).toBe(0);
    const server = await spawnServer({ args: ['--keys', 'store', '--data', db] });
    try {
      expect((await get(server, first.stdout.trim())).status).toBe(200);
      const add = await runCommand(['keys', 'add', '--data', db, '--consumer', 'two', '--plan', 'pro']);
      expect(await until(server, add.stdout.trim(), 200)).toBeLessThanOrEqual(FLEET_MS);
      const file = join(dir, 'keys.json');
      writeFileSync(
        file,
        JSON.stringify({
          keys: [
            { name: 'legacy', sha256: createHash('sha256').update('psk_legacy-token').digest('hex'), plan: 'free' },
          ],
        }),
      );
      const imports = [
        await runCommand(['keys', 'import', file, '--data', db]),
        await runCommand(['keys', 'import', file, '--data', db]),
      ];
      expect(imports.map((r) => [r.code, r.stderr])).toEqual([
        [0, `imported ${file}: 1 of 1 consumers changed\n`],
        [0, `imported ${file}: 0 of 1 consumers changed\n`],
      ]);
      expect(await until(server, 'psk_legacy-token', 200)).toBeLessThanOrEqual(FLEET_MS);
      const audit = await runCommand(['keys', 'audit', '--data', db, '--json']);
      expect((JSON.parse(audit.stdout) as { records: { action: string }[] }).records.map((r) => r.action)).toEqual([
        'key.add',
        'key.add',
        'keys.import',
      ]);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});

describe.skipIf(!READY || !PG_DIR)('the database down', () => {
  test('the keys in force stay, /readyz and the log say so; when it is back the instance catches up', async () => {
    const made = await admin(a, 'POST', '/consumers/shop/keys', { id: 'k9' });
    expect(made.status).toBe(201);
    const token = String(made.body?.token);
    expect(await until(b, token, 200)).toBeLessThanOrEqual(FLEET_MS);
    // Only the lines written after the stop count: an earlier test (B's connections killed) may
    // have logged the same outage and its end already.
    const before = b.lines.length;
    const logged = (msg: string) => b.lines.slice(before).some((l) => l.includes(`"msg":"${msg}"`));
    pgCtl('stop', '-m', 'immediate');
    try {
      await waitFor(() => logged('keys store unreachable; serving with the keys in force'));
      const keysDown = 'The key store is not reachable; serving with the keys loaded before.';
      const ready = await readyz(b);
      expect([ready.status, ready.body]).toEqual([
        503,
        {
          code: 'service_unavailable',
          message: keysDown,
          status: 503,
        },
      ]);
      // The key is still known (the pets are not reachable: 503, not 401); a made-up one is 401.
      expect((await get(b, token)).status).toBe(503);
      expect((await get(b, `psk_${'Z'.repeat(43)}`)).status).toBe(401);
    } finally {
      pgCtl('start', '-w', '-t', '30', '-l', `${PG_DIR}/server.log`, '-o', pgOptions());
    }
    await waitFor(() => logged('keys store reachable again'), 15_000);
    // The pets come back when the store's own probe finds the database
    // (src/store/wrappers/bound-and-traced.ts).
    const deadline = Date.now() + 15_000;
    let ready = (await fetch(`${b.url}/readyz`)).status;
    while (ready !== 200 && Date.now() < deadline) {
      await Bun.sleep(100);
      ready = (await fetch(`${b.url}/readyz`)).status;
    }
    expect(ready).toBe(200);
    expect((await get(b, token)).status).toBe(200);
  });
});

async function readyz(server: Running): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.url}/readyz`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function waitFor(done: () => boolean, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!done()) {
    if (Date.now() > until) throw new Error(`timed out:\n${b.lines.slice(-10).join('\n')}`);
    await Bun.sleep(50);
  }
}

/** Runs pg_ctl on the throwaway cluster of scripts/with-postgres.sh, as its owner. */
function pgCtl(...args: string[]): void {
  const bin = readFileSync(`${PG_DIR}/.petstore-pg`, 'utf8').split('\n')[1] as string;
  const command = [`${bin}/pg_ctl`, '-D', `${PG_DIR}/data`, ...args];
  const asRoot = process.getuid?.() === 0;
  const run = spawnSync(
    asRoot ? 'runuser' : (command[0] as string),
    asRoot ? ['-u', 'postgres', '--', ...command] : command.slice(1),
    {
      encoding: 'utf8',
    },
  );
  if (run.status !== 0) throw new Error(`pg_ctl ${args[0]}: ${run.stderr}`);
}

/** The server options scripts/with-postgres.sh started the cluster with. */
function pgOptions(): string {
  return `-c listen_addresses=127.0.0.1 -p ${new URL(PG_SERVER).port} -c unix_socket_directories=${PG_DIR}`;
}

/** Terminates the PostgreSQL backends of `server`'s connections (found by their local ports); returns how many. */
async function killBackendsOf(server: Running): Promise<number> {
  const pid = server.child.pid as number;
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1] as string);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && inodes.has(cols[9] as string))
        ports.push(Number.parseInt((cols[1] as string).split(':')[1] as string, 16));
    }
  }
  if (!db) throw new Error('no PostgreSQL connection');
  const rows = await db.admin`
    SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
    WHERE datname = ${database} AND client_port = ANY(${ports})`;
  return rows.length;
}
