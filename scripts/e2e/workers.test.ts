// `--workers N`: N event loops serving one port, one service to its operator, the limits exact
// for the host. Under Deno and Node (make e2e-runtimes), `--workers` above 1 is refused at start.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Running, runCommand, serverCommand, spawnServer, tokenOf, writeKeysFile } from '../../test/harness.ts';

/** Whether the server under test is the binary (Bun), which serves with workers. */
const binary = !/(^|\/)(node|deno)$/.test(serverCommand()[0] ?? '');
const dataFile = () => join(mkdtempSync(join(tmpdir(), 'petstore-workers-')), 'pets.db');

/** One request on a connection of its own: the kernel picks the worker that accepts it. */
async function alone(url: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set('Connection', 'close');
  return fetch(url, { ...init, headers });
}

/** `clients` clients, each sending `send()` until it is refused twice: every status, as they came. */
async function untilRefusedTwice(clients: number, send: () => Promise<Response>): Promise<number[]> {
  const statuses: number[] = [];
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let refused = 0; refused < 2; ) {
        const res = await send();
        await res.arrayBuffer();
        statuses.push(res.status);
        if (res.status !== 200) refused++;
      }
    }),
  );
  return statuses;
}

describe.if(!binary)('--workers on a runtime without them', () => {
  test('above 1 is refused at start (exit 2), naming the runtime that serves with several', async () => {
    const { code, stderr } = await runCommand(['--port', '0', '--workers', '2', '--data', dataFile()]);
    expect(code).toBe(2);
    expect(stderr).toContain('serves with one worker; the petstore binary (Bun) serves with several on one port');
  });
});

describe.if(binary)('--workers 4 on one port', () => {
  let server: Running;
  let keys: string;
  beforeAll(async () => {
    keys = writeKeysFile([
      { name: 'pro', plan: 'pro' },
      { name: 'bulk', plan: 'enterprise', limits: { perMinute: 1e9, perDay: 1e9 } },
      { name: 'banned', plan: 'free', limits: { perMinute: 5, perDay: 1000 }, ban: { seconds: 600, threshold: 3 } },
      { name: 'busy', plan: 'pro', limits: { perMinute: 4_000, perDay: 100_000 } },
    ]);
    server = await spawnServer({ args: ['--workers', '4', '--keys', keys, '--data', dataFile()] });
  });
  afterAll(async () => {
    await server.stop();
  });

  test('one process says it listens once, with its workers; /readyz is ready when every worker listens', async () => {
    const listening = server.lines.filter((l) => l.includes('"msg":"listening"'));
    expect(listening).toHaveLength(1);
    expect(JSON.parse(listening[0] as string)).toMatchObject({ workers: 4, runtime: 'bun' });
    const ready = await alone(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
  });

  test('200 clients at once on one 300-a-minute key: 300 admitted across the workers, never more', async () => {
    const auth = { Authorization: `Bearer ${tokenOf('pro')}` };
    // 200 clients, each sending on new connections.
    const statuses = await untilRefusedTwice(200, () => alone(`${server.url}/v1/pets?limit=1`, { headers: auth }));
    expect(statuses.filter((s) => s === 200)).toHaveLength(300);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
  }, 60_000);

  test('a key kept busy across seconds on four workers (each spending grants once it has a rate): exactly its limit admitted, never more', async () => {
    const auth = { Authorization: `Bearer ${tokenOf('busy')}` };
    // 16 clients on connections they keep (spread over the workers), paced for the first second
    // so that the workers have a rate to ask grants by.
    const started = Date.now();
    const outcomes = await untilRefusedTwice(16, async () => {
      if (Date.now() - started < 1_200) await Bun.sleep(20);
      return fetch(`${server.url}/v1/pets?limit=1`, { headers: auth });
    });
    // Clients that give up after two refusals still got every unit: none was left with a worker.
    expect(outcomes.filter((s) => s === 200)).toHaveLength(4_000);
    expect(outcomes.filter((s) => s !== 200 && s !== 429)).toEqual([]);
  }, 60_000);

  test('a ban started through one worker refuses on every worker from the next request', async () => {
    const auth = { Authorization: `Bearer ${tokenOf('banned')}` };
    const outcomes: string[] = [];
    for (let i = 0; i < 9; i++) {
      const res = await alone(`${server.url}/v1/pets`, { headers: auth });
      outcomes.push(res.status === 200 ? 'ok' : ((await res.json()) as { code: string }).code);
    }
    // 5 admitted, 3 refused (the threshold), then the ban: on whichever worker each lands.
    expect(outcomes).toEqual([...Array(5).fill('ok'), 'rate_limited', 'rate_limited', 'key_banned', 'key_banned']);
    const after = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const res = await alone(`${server.url}/v1/pets`, { headers: auth });
        return ((await res.json()) as { code: string }).code;
      }),
    );
    expect(new Set(after)).toEqual(new Set(['key_banned']));
  });

  test("the keyless clients' limit per address holds for the host: 60 failed keys a minute, then 429", async () => {
    const statuses = await Promise.all(
      Array.from({ length: 90 }, async (_, i) => {
        const res = await alone(`${server.url}/v1/pets`, { headers: { Authorization: `Bearer psk_not-a-key-${i}` } });
        await res.arrayBuffer();
        return res.status;
      }),
    );
    expect(statuses.filter((s) => s === 401)).toHaveLength(60);
    expect(statuses.filter((s) => s === 429)).toHaveLength(30);
  });

  test('1,000 create-then-read pairs, each read on a new connection: no read misses a write acknowledged before it', async () => {
    const auth = { Authorization: `Bearer ${tokenOf('bulk')}`, 'Content-Type': 'application/json' };
    /** The page of 100 that holds `id`: the same few pages are asked again and again, so their answers are memoised. */
    const pageOf = (id: number) => {
      const after = Math.floor((id - 1) / 100) * 100;
      return `${server.url}/v1/pets?limit=100${after > 0 ? `&cursor=${after.toString(36)}` : ''}`;
    };
    let acknowledged = 0;
    const stale: string[] = [];
    await Promise.all(
      Array.from({ length: 20 }, async (_, client) => {
        for (let i = 0; i < 50; i++) {
          const created = await alone(`${server.url}/v1/pets`, {
            method: 'POST',
            headers: auth,
            body: JSON.stringify({ name: `coherent-${client}-${i}`, categoryId: 1, status: 'available' }),
          });
          expect(created.status).toBe(201);
          const { id } = (await created.json()) as { id: number };
          acknowledged++;
          const [one, page] = await Promise.all([
            alone(`${server.url}/v1/pets/${id}`, { headers: auth }),
            alone(pageOf(id), { headers: auth }),
          ]);
          if (one.status !== 200) stale.push(`GET /v1/pets/${id}: ${one.status}`);
          await one.arrayBuffer();
          const ids = ((await page.json()) as { id: number }[]).map((p) => p.id);
          if (!ids.includes(id)) stale.push(`pet ${id} missing from ${pageOf(id)}`);
        }
      }),
    );
    expect(acknowledged).toBe(1_000);
    expect(stale).toEqual([]);
  }, 120_000);

  test('a SIGHUP reloads the keys of every worker', async () => {
    writeKeysFile(
      [
        { name: 'pro', plan: 'pro' },
        { name: 'bulk', plan: 'enterprise', limits: { perMinute: 1e9, perDay: 1e9 } },
        { name: 'newcomer', plan: 'free' },
      ],
      join(keys, '..'),
    );
    server.child.kill('SIGHUP');
    const deadline = Date.now() + 5_000;
    while (!server.lines.some((l) => l.includes('"msg":"keys reloaded"')) && Date.now() < deadline) await Bun.sleep(20);
    const statuses = await Promise.all(
      Array.from({ length: 24 }, async () => {
        const res = await alone(`${server.url}/v1/pets`, {
          headers: { Authorization: `Bearer ${tokenOf('newcomer')}` },
        });
        await res.arrayBuffer();
        return res.status;
      }),
    );
    expect(statuses).toEqual(Array(24).fill(200));
  });
});

describe.if(binary)('--workers: the port, the store, the shutdown', () => {
  /** A petstore with two workers started on `port`, run to its exit. */
  const workersOn = (port: number) =>
    runCommand(['--port', String(port), '--host', '127.0.0.1', '--workers', '2', '--data', dataFile()]);

  test('a port in use still stops the start with exit 1, even by another petstore with workers', async () => {
    const first = await spawnServer({ args: ['--workers', '2', '--data', dataFile()] });
    try {
      const second = await workersOn(first.port);
      expect(second.code).toBe(1);
      expect(second.stderr).toContain(`Is port ${first.port} in use?`);
    } finally {
      expect(await first.stop()).toBe(0);
    }
    // A port held by another program (without SO_REUSEPORT) likewise.
    const other = createServer();
    const port = await new Promise<number>((resolve) =>
      other.listen(0, '127.0.0.1', () => resolve((other.address() as { port: number }).port)),
    );
    try {
      const refused = await workersOn(port);
      expect(refused.code).toBe(1);
    } finally {
      other.close();
    }
  });

  test('--data :memory: with more than one worker is refused at start (exit 2)', async () => {
    const { code, stderr } = await runCommand(['--port', '0', '--workers', '2', '--data', ':memory:']);
    expect(code).toBe(2);
    expect(stderr).toContain('--workers 2: needs --data with a SQLite file or a postgres:// URL, not :memory:');
  });

  test('SIGTERM drains every worker and exits 0 with one "stopped"', async () => {
    const server = await spawnServer({ args: ['--workers', '3', '--data', dataFile()] });
    const res = await alone(`${server.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await server.stop()).toBe(0);
    expect(server.lines.filter((l) => l.includes('"msg":"stopped"'))).toHaveLength(1);
    // Every line is whole JSON: the workers' lines never cut into each other's.
    for (const line of server.lines.filter((l) => l.startsWith('{'))) expect(() => JSON.parse(line)).not.toThrow();
  });

  test('to a log file, the workers write their own lines: every one whole, every request logged once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-workers-log-'));
    const logFile = join(dir, 'petstore.log');
    const out = openSync(logFile, 'a');
    const args = ['--port', '0', '--host', '127.0.0.1', '--log-format', 'json', '--workers', '3'];
    const [cmd, ...rest] = [...serverCommand(), ...args, '--data', join(dir, 'pets.db')];
    // stdout alone: stderr carries the development key's notice, which is not a log line.
    const child = spawn(cmd as string, rest, { stdio: ['ignore', out, 'ignore'] });
    closeSync(out);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      let port: string | undefined;
      for (let tries = 0; !port && tries < 300; tries++) {
        await Bun.sleep(50);
        port = /"msg":"listening".*?"address":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(readFileSync(logFile, 'utf8'))?.[1];
      }
      expect(port).toBeDefined();
      // 64 clients, 2,000 requests, each on a connection of its own: every worker writes at once.
      const paths = Array.from({ length: 2_000 }, (_, i) => `/healthz?n=${i}`);
      await Promise.all(
        Array.from({ length: 64 }, async (_, c) => {
          for (let i = c; i < paths.length; i += 64) {
            const res = await alone(`http://127.0.0.1:${port}${paths[i]}`);
            expect(res.status).toBe(200);
            await res.arrayBuffer();
          }
        }),
      );
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    const lines = readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((l) => l !== '');
    const parsed = lines.map((l) => JSON.parse(l) as { msg: string; route?: string });
    expect(parsed.filter((l) => l.msg === 'request' && l.route === '/healthz')).toHaveLength(2_000);
    expect(parsed.filter((l) => l.msg === 'stopped')).toHaveLength(1);
  });

  test('a worker that crashes is logged, counted and replaced; requests go on being answered', async () => {
    const server = await spawnServer({
      args: ['--workers', '2', '--data', dataFile(), '--metrics-port', '0'],
      env: { PETSTORE_TEST_WORKER_CRASH_MS: '400' },
    });
    try {
      const statuses: number[] = [];
      const until = Date.now() + 1_500;
      while (Date.now() < until) {
        const res = await alone(`${server.url}/healthz`).catch(() => undefined);
        statuses.push(res?.status ?? 0);
        await res?.arrayBuffer();
      }
      const replaced = server.lines.filter((l) => l.includes('"msg":"worker exited; starting another in its place"'));
      expect(replaced).toHaveLength(1);
      expect(JSON.parse(replaced[0] as string)).toMatchObject({ level: 'error', worker: 0 });
      // Only what the crashing worker held or had queued can fail; every other request is answered.
      expect(statuses.filter((s) => s !== 200).length).toBeLessThanOrEqual(3);
      expect(statuses.length).toBeGreaterThan(20);
      const after = await Promise.all(
        Array.from({ length: 30 }, () => alone(`${server.url}/readyz`).then((r) => r.status)),
      );
      expect(after).toEqual(Array(30).fill(200));
      const metricsPort = /"metrics":"http:\/\/127\.0\.0\.1:(\d+)\/metrics"/.exec(server.lines.join('\n'))?.[1];
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(text).toContain('\npetstore_workers_replaced_total 1\n');
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
