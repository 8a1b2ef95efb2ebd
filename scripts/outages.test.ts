/**
 * Database and Redis outages under load, as an operator would break them. Two instances of the
 * built binary share a throwaway PostgreSQL and Redis while 16 clients write and read without
 * pause; then Redis is killed and restarted, PostgreSQL is restarted fast, stopped for 5 s, and
 * its pets table is locked by another session for 4 s. Throughout:
 * - every request is answered (no reset, no hang) within 2.5 s, with 2xx, or 503 with
 *   `Retry-After: 1` and the Error body;
 * - every acknowledged create is in the database, and the creates answered 503, retried with
 *   the same Idempotency-Key, are there exactly once;
 * - Redis's return puts both instances back on the shared limits within 2 s, logged once each.
 * And on SQLite: a create while another process holds the file's write lock for 5 s is answered
 * 503 within the bound, reads go on meanwhile, and the next create after the release is stored.
 *
 * The longest answer per fault and the time from the database's return to each instance's
 * first 201 are printed at the end (bench/README.md#outages-under-load).
 *
 * Needs PETSTORE_TEST_POSTGRES_URL/_DIR and PETSTORE_TEST_REDIS_URL/_DIR: `make outage-test`.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { type Running, runCommand, spawnServer, tokenOf, writeKeysFile } from '../test/harness.ts';
import { freshDatabase, pgCtl as pgCtlIn, pgStartOptions, run, type TestDatabase } from '../test/postgres.ts';

const PG_SERVER = process.env.PETSTORE_TEST_POSTGRES_URL ?? '';
const PG_DIR = process.env.PETSTORE_TEST_POSTGRES_DIR ?? '';
const REDIS = process.env.PETSTORE_TEST_REDIS_URL ?? '';
const REDIS_DIR = process.env.PETSTORE_TEST_REDIS_DIR ?? '';
const READY = Boolean(PG_SERVER && PG_DIR && REDIS && REDIS_DIR);
if (!READY) {
  console.warn(
    'outages.test.ts: needs PETSTORE_TEST_POSTGRES_URL/_DIR and PETSTORE_TEST_REDIS_URL/_DIR; the PostgreSQL and ' +
      'Redis part is skipped. Run it with: make outage-test',
  );
}

/** The requirement: every answer within this, whatever the fault. */
const ANSWER_BOUND_MS = 2_500;
/** Redis's return puts every instance back on the shared limits within this. */
const REDIS_BACK_MS = 2_000;
const CLIENTS = 16;
/** Each client's pause between requests, so that two cores shared by everything keep up. */
const PAUSE_MS = 20;
const AUTH = { Authorization: `Bearer ${tokenOf('load')}` };
const UNAVAILABLE = {
  code: 'service_unavailable',
  message: 'The pet store is temporarily unavailable; retry shortly.',
  status: 503,
};
const REDIS_BACK = 'rate limiter: Redis reachable again; limits are shared again';
const STORE_AWAY = 'store unreachable; answering 503 at once until a probe finds it again';
const STORE_BACK = 'store reachable again; serving';

interface Answer {
  readonly fault: string;
  readonly server: number;
  readonly op: 'create' | 'list';
  readonly key?: string;
  readonly started: number;
  readonly ended: number;
  readonly status: number;
  readonly retryAfter: string | null;
  readonly body: unknown;
  readonly error?: string;
}

/** One request, timed; a reset or a hang (10 s) is an answer with `error` and status 0. */
async function send(server: Running, index: number, fault: string, op: 'create' | 'list', key?: string) {
  const started = Date.now();
  const init: RequestInit =
    op === 'create'
      ? {
          method: 'POST',
          headers: { ...AUTH, 'Content-Type': 'application/json', 'Idempotency-Key': key as string },
          body: JSON.stringify({ name: key, categoryId: 1 }),
        }
      : { headers: AUTH };
  const asked = { fault, server: index, op, key, started };
  try {
    const res = await fetch(`${server.url}/v1/pets${op === 'list' ? '?limit=5' : ''}`, {
      ...init,
      signal: AbortSignal.timeout(10_000),
    });
    const body: unknown = await res.json();
    return {
      ...asked,
      ended: Date.now(),
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body,
    } satisfies Answer;
  } catch (err) {
    const error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    return { ...asked, ended: Date.now(), status: 0, retryAfter: null, body: null, error } satisfies Answer;
  }
}

const pgCtl = (...args: string[]) => pgCtlIn(PG_DIR, ...args);

const logged = (server: Running, msg: string) =>
  server.lines.filter((l) => l.includes(`"msg":"${msg}"`)).map((l) => JSON.parse(l) as Record<string, unknown>);

async function waitFor(what: string, done: () => boolean | Promise<boolean>, ms = 20_000, everyMs = 25) {
  const until = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(everyMs);
  }
}

async function readyz(server: Running): Promise<{ status: number; limiter?: string }> {
  const res = await fetch(`${server.url}/readyz`);
  const body = (await res.json()) as { limiter?: string };
  return { status: res.status, limiter: body.limiter };
}

describe.skipIf(!READY)('two instances on PostgreSQL and Redis, under load, through outages', () => {
  const database = `petstore_outages_${process.pid}`;
  const servers: Running[] = [];
  let db: TestDatabase;
  let url: string;

  beforeAll(async () => {
    db = await freshDatabase(PG_SERVER, database);
    url = db.url;
    const keys = writeKeysFile([
      { name: 'load', plan: 'enterprise', limits: { perMinute: 1_000_000, perDay: 100_000_000 } },
    ]);
    const args = ['--keys', keys, '--data', url, '--redis', REDIS];
    servers.push(await spawnServer({ args }));
    servers.push(await spawnServer({ args }));
  });

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await db?.drop();
  });

  test('every request answered within 2.5 s, 2xx or 503 with Retry-After; every acknowledged create stored once', async () => {
    const answers: Answer[] = [];
    let fault = 'steady';
    let stopping = false;
    /** Keys answered 503 (or not at all), to be sent again with the same body. */
    const unanswered = new Set<string>();
    const clients = Array.from({ length: CLIENTS }, async (_, client) => {
      const server = servers[client % 2] as Running;
      let n = 0;
      let retry: string | undefined;
      while (!stopping) {
        const op = n % 2 === 0 ? 'create' : 'list';
        const key = op === 'create' ? (retry ?? `c${client}-${n}`) : undefined;
        const answer = await send(server, client % 2, fault, op, key);
        answers.push(answer);
        if (key) {
          retry = answer.status === 201 ? undefined : key;
          if (retry) unanswered.add(key);
          else unanswered.delete(key);
        }
        n++;
        await Bun.sleep(PAUSE_MS);
      }
    });
    const [a] = servers as [Running, Running];
    const recovered: Record<string, number[]> = {};
    /** Ms from `since` to the first 201 on each instance that was sent after it. */
    const firstCreated = async (since: number) => {
      await waitFor('a 201 on each instance', () =>
        [0, 1].every((s) => answers.some((x) => x.server === s && x.status === 201 && x.started >= since)),
      );
      return [0, 1].map(
        (s) =>
          Math.min(
            ...answers.filter((x) => x.server === s && x.status === 201 && x.started >= since).map((x) => x.ended),
          ) - since,
      );
    };

    try {
      await Bun.sleep(2_000);

      // Redis killed, and back 2 s later: each instance limits on its own, then shares again.
      fault = 'redis';
      const pid = readFileSync(join(REDIS_DIR, 'redis.pid'), 'utf8').trim();
      expect((await run('kill', ['-9', pid])).code).toBe(0);
      await waitFor('both instances on local limits', async () =>
        (await Promise.all(servers.map(readyz))).every((r) => r.limiter === 'local'),
      );
      await Bun.sleep(2_000);
      expect((await run('redis-server', [join(REDIS_DIR, 'redis.conf')])).code).toBe(0);
      const port = new URL(REDIS).port;
      await waitFor(
        'Redis to answer',
        async () => (await run('redis-cli', ['-p', port, 'ping'])).output.trim() === 'PONG',
      );
      const redisBack = Date.now();
      const shared: number[] = [];
      await waitFor('both instances on shared limits', async () => {
        const states = await Promise.all(servers.map(readyz));
        for (const [i, r] of states.entries())
          if (r.limiter === 'redis' && shared[i] === undefined) shared[i] = Date.now() - redisBack;
        return shared.filter((x) => x !== undefined).length === 2;
      });
      recovered.redis = shared;
      for (const s of servers) {
        expect(logged(s, REDIS_BACK)).toHaveLength(1);
        expect(logged(s, REDIS_BACK)[0]).toMatchObject({ level: 'info', downSeconds: expect.any(Number) });
      }
      await Bun.sleep(1_000);

      // PostgreSQL restarted fast: about a second without a server.
      fault = 'pg-restart';
      const restart = await pgCtl('restart', '-m', 'fast', '-w', '-t', '60');
      expect(restart.code).toBe(0);
      recovered['pg-restart'] = await firstCreated(Date.now());
      await Bun.sleep(1_000);

      // PostgreSQL stopped for 5 s.
      fault = 'pg-stop';
      const restartOptions = pgStartOptions(PG_DIR);
      expect((await pgCtl('stop', '-m', 'fast', '-w', '-t', '60')).code).toBe(0);
      await Bun.sleep(5_000);
      const start = await pgCtl('start', '-w', '-t', '60', '-l', join(PG_DIR, 'server.log'), '-o', restartOptions);
      expect(start.code).toBe(0);
      recovered['pg-stop'] = await firstCreated(Date.now());
      await Bun.sleep(1_000);

      // A query that never returns: the pets table locked by another session for 4 s.
      fault = 'lock';
      const holder = postgres(url, { max: 1, onnotice: () => {} });
      await holder.begin(async (tx) => {
        await tx`LOCK TABLE pets IN ACCESS EXCLUSIVE MODE`;
        await Bun.sleep(4_000);
      });
      await holder.end();
      recovered.lock = await firstCreated(Date.now());
      await Bun.sleep(1_000);
    } catch (err) {
      // What the clients saw until the step that failed, and what each instance said last.
      const tally = new Map<string, number>();
      for (const x of answers) {
        const what = `${x.fault} instance ${x.server} ${x.op} ${x.status} ${x.error ?? ''}`;
        tally.set(what, (tally.get(what) ?? 0) + 1);
      }
      console.log([...tally].map(([what, n]) => `${n} x ${what}`).join('\n'));
      for (const s of servers)
        console.log(
          s.lines
            .filter((l) => !l.includes('"msg":"request"'))
            .slice(-10)
            .join('\n'),
        );
      throw err;
    } finally {
      stopping = true;
      await Promise.all(clients);
    }

    // No reset, no hang, nothing slower than the bound; each answer 2xx, or 503 as the contract says.
    expect(answers.filter((x) => x.error !== undefined)).toEqual([]);
    expect(answers.filter((x) => x.ended - x.started >= ANSWER_BOUND_MS)).toEqual([]);
    const unexpected = answers.filter(
      (x) =>
        !(x.status >= 200 && x.status < 300) &&
        !(x.status === 503 && x.retryAfter === '1' && JSON.stringify(x.body) === JSON.stringify(UNAVAILABLE)),
    );
    expect(unexpected).toEqual([]);
    // Each fault was felt: requests were refused during the database's outages.
    for (const p of ['pg-restart', 'pg-stop', 'lock']) {
      expect(answers.some((x) => x.fault === p && x.status === 503)).toBe(true);
    }

    // The creates answered 503 are sent again with the same key, as a client would: after
    // Retry-After, a few times.
    for (const key of unanswered) {
      let again = await send(a, 0, 'settle', 'create', key);
      for (let attempt = 1; again.status === 503 && attempt < 5; attempt++) {
        await Bun.sleep(Number(again.retryAfter) * 1_000);
        again = await send(a, 0, 'settle', 'create', key);
      }
      expect(again.status).toBe(201);
      answers.push(again);
    }
    const acknowledged = new Map<string, number>();
    for (const x of answers) {
      if (x.status === 201 && x.key) {
        const id = (x.body as { id: number }).id;
        expect(acknowledged.get(x.key) ?? id).toBe(id);
        acknowledged.set(x.key, id);
      }
    }
    const retried = new Set(answers.filter((x) => x.op === 'create' && x.status === 503).map((x) => x.key));
    expect(retried.size).toBeGreaterThan(0);
    const db = postgres(url, { max: 1, onnotice: () => {} });
    const rows = await db<{ name: string; n: number; id: number }[]>`
      SELECT name, count(*)::int AS n, min(id)::int AS id FROM pets GROUP BY name`;
    await db.end();
    const byName = new Map(rows.map((r) => [r.name, r]));
    // Every acknowledged create is there, once, with the id it was answered with; a 503 and a
    // retry with the same key made exactly one pet.
    const wrong = [...acknowledged].filter(([key, id]) => byName.get(key)?.n !== 1 || byName.get(key)?.id !== id);
    expect(wrong).toEqual([]);
    expect(rows.filter((r) => r.n !== 1)).toEqual([]);
    expect(rows.length).toBe(acknowledged.size);

    // Each instance saw the database go away and come back, one line each time.
    for (const [i, s] of servers.entries()) {
      const changes = s.lines.filter((l) => l.includes(STORE_AWAY) || l.includes(STORE_BACK));
      console.log(`instance ${i}:\n${changes.map((l) => `  ${l.slice(11, 220)}`).join('\n')}`);
      expect(logged(s, STORE_AWAY).length).toBeGreaterThanOrEqual(1);
      await waitFor(
        'the instance to serve',
        () => logged(s, STORE_BACK).length === logged(s, STORE_AWAY).length,
        5_000,
      );
    }

    // Why the 503s were answered, as each instance logged it (numbers and ids left out).
    const causes = new Map<string, number>();
    for (const [i, s] of servers.entries()) {
      for (const line of logged(s, 'store unavailable')) {
        const cause = `instance ${i}: ${String(line.error)
          .replace(/[0-9a-f-]{8,}|\d+/g, 'N')
          .slice(0, 150)}`;
        causes.set(cause, (causes.get(cause) ?? 0) + 1);
      }
    }
    console.log([...causes].map(([cause, n]) => `  ${n} x ${cause}`).join('\n'));
    const longest = (p: string) => Math.max(...answers.filter((x) => x.fault === p).map((x) => x.ended - x.started));
    const count = (p: string, status: number) => answers.filter((x) => x.fault === p && x.status === status).length;
    const unknown = servers.map((s) => s.lines.filter((l) => l.includes('the outcome is unknown')).length);
    console.log(
      [
        `outages: ${answers.length} answers, ${acknowledged.size} pets created, ${retried.size} creates answered 503 and retried; writes logged with an unknown outcome per instance: ${unknown.join(', ')}`,
        ...['steady', 'redis', 'pg-restart', 'pg-stop', 'lock'].map(
          (p) =>
            `  ${p}: longest answer ${longest(p)} ms; ${count(p, 201) + count(p, 200)} 2xx, ${count(p, 503)} 503; ` +
            `back on each instance after ${(recovered[p] ?? []).join(' and ')} ms`,
        ),
      ].join('\n'),
    );
    for (const ms of recovered.redis ?? []) expect(ms).toBeLessThan(REDIS_BACK_MS);
  }, 120_000);
});

describe('SQLite while another process holds the write lock for 5 s', () => {
  let server: Running;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'petstore-outages-'));
    const keys = writeKeysFile([{ name: 'load', plan: 'free' }], dir);
    server = await spawnServer({ args: ['--keys', keys, '--data', join(dir, 'pets.db'), '--metrics'] });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a create is answered 503 within the bound, reads go on, the next create after the release is stored', async () => {
    const create = (id: string) =>
      fetch(`${server.url}/v1/pets`, {
        method: 'POST',
        headers: { ...AUTH, 'Content-Type': 'application/json', 'X-Request-Id': id },
        body: JSON.stringify({ name: id, categoryId: 1 }),
      });
    expect((await create('before')).status).toBe(201);

    const script = `
      const { Database } = require('bun:sqlite');
      const db = new Database(${JSON.stringify(join(dir, 'pets.db'))});
      db.exec('BEGIN IMMEDIATE');
      console.log('locked');
      setTimeout(() => { db.exec('COMMIT'); db.close(); console.log('released'); }, 5000);`;
    const holder = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let said = '';
    holder.stdout.on('data', (d: Buffer) => {
      said += d;
    });
    const released = new Promise((resolve) => holder.once('exit', resolve));
    await waitFor('the other process to take the lock', () => said.includes('locked'));

    const started = Date.now();
    const refused = await create('locked-1');
    const ms = Date.now() - started;
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toEqual(UNAVAILABLE);
    expect(ms).toBeLessThan(ANSWER_BOUND_MS);
    const read = await fetch(`${server.url}/v1/pets`, { headers: AUTH });
    expect(read.status).toBe(200);
    expect(((await read.json()) as { name: string }[]).map((p) => p.name)).toEqual(['before']);
    expect(said).not.toContain('released');

    await released;
    const after = await create('after');
    expect(after.status).toBe(201);
    expect(await after.json()).toEqual({ id: 2, name: 'after', categoryId: 1, status: 'available' });

    expect(logged(server, 'store unavailable').map((l) => [l.requestId, l.error])).toEqual([
      [
        'locked-1',
        'StoreTimeoutError: store pet: the database file stayed locked by another process for 1800 ms; nothing was stored',
      ],
    ]);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toContain('petstore_store_errors_total{operation="create",kind="timeout"} 1');
    console.log(`outages: SQLite, a create while another process held the write lock answered 503 in ${ms} ms`);
  }, 30_000);
});

test('--store-timeout is checked at start: a whole number of seconds, shorter than --idle-timeout', async () => {
  const zero = await runCommand(['--data', ':memory:', '--store-timeout', '0']);
  expect(zero.code).toBe(2);
  expect(zero.stderr).toContain('--store-timeout: expected a whole number from 1 to 60, got "0"');
  const idle = await runCommand(['--data', ':memory:', '--port', '0', '--idle-timeout', '2'], {
    PETSTORE_STORE_TIMEOUT: '2',
  });
  expect(idle.code).toBe(2);
  expect(idle.stderr).toContain(
    'petstore: configuration: --idle-timeout (2) must be longer than --store-timeout (2), or a connection could be closed while its request waits for the store',
  );
});
