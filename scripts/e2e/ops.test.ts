// What an operator sees of the server started by PETSTORE_CMD (the binary, Deno or Node): logs,
// health, metrics, SIGHUP, SIGTERM and the healthcheck command. `make e2e-runtimes` runs it on all three.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OPTIONS } from '../../src/config.ts';
import {
  defaultData,
  type KeySpec,
  type Running,
  runCommand,
  serverCommand,
  serverLacksSqlite,
  spawnServer,
  tokenOf,
  WORKERS,
  writeKeysFile,
} from '../../test/harness.ts';
import { flagsTable, pageTable } from '../docs-flags.ts';
import { RawConnection } from './raw-http.ts';

type LogLine = Record<string, unknown>;

const bearer = (name: string) => ({ Authorization: `Bearer ${tokenOf(name)}` });
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

function jsonLines(server: Running): LogLine[] {
  return server.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine);
}

/** The first log line matching `fields`, waiting for it: lines are written after the response. */
async function logLine(server: Running, fields: LogLine, timeoutMs = 5_000): Promise<LogLine> {
  const matches = (line: LogLine) => Object.entries(fields).every(([k, v]) => Bun.deepEquals(line[k], v));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = jsonLines(server).find(matches);
    if (found) return found;
    if (Date.now() > deadline)
      throw new Error(`no log line with ${JSON.stringify(fields)}:\n${server.lines.join('\n')}`);
    await Bun.sleep(20);
  }
}

/** The runtime the server says it runs on: bun (the binary), deno or node. */
const runtimeOf = (server: Running) => jsonLines(server).find((l) => l.msg === 'listening')?.runtime;

const exitWithin = (server: Running, ms: number) =>
  server.child.exitCode !== null
    ? Promise.resolve(server.child.exitCode)
    : Promise.race([
        new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code))),
        Bun.sleep(ms).then(() => 'still running' as const),
      ]);

const SERVE_IN_MEMORY = ['--port', '0', '--host', '127.0.0.1', '--data', defaultData()];

/** Runs `file` in a process group of its own until it logs `listening`, then ends the group. */
async function stdoutUntilListening(file: string, args: string[]): Promise<string> {
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d;
  });
  for (let i = 0; i < 250 && !out.includes('listening'); i++) await Bun.sleep(20);
  process.kill(-(child.pid as number), 'SIGTERM');
  return out;
}

const keysOf = (...names: [string, string][]): KeySpec[] => names.map(([name, plan]) => ({ name, plan }));

describe('logs', () => {
  let server: Running;
  beforeAll(async () => {
    server = await spawnServer({
      args: ['--keys', writeKeysFile(keysOf(['acme', 'pro'], ['b', 'free'], ['c', 'free']))],
    });
  });
  afterAll(() => server.stop());

  test('a start-up line names version, runtime, address, data and keys per plan', () => {
    const line = jsonLines(server).find((l) => l.msg === 'listening') as LogLine;
    expect(line).toEqual({
      time: expect.stringMatching(ISO_TIME),
      level: 'info',
      msg: 'listening',
      version: '1.0.0',
      runtime: expect.stringMatching(/^(bun|deno|node)$/),
      ...(WORKERS > 1 ? { workers: WORKERS } : {}),
      address: server.url,
      data: WORKERS > 1 ? expect.stringMatching(/pets\.db$/) : ':memory:',
      keysByPlan: { pro: 1, free: 2 },
    });
  });

  test('one JSON line per request, with the key name and the client id echoed', async () => {
    const res = await fetch(`${server.url}/v1/pets?limit=5`, {
      headers: { ...bearer('acme'), 'X-Request-Id': 'req-42.a:b' },
    });
    expect([res.status, res.headers.get('x-request-id')]).toEqual([200, 'req-42.a:b']);
    // The trace the answer names (traceresponse) is the one the line names.
    const [, traceId, spanId] =
      /^00-([0-9a-f]{32})-([0-9a-f]{16})-00$/.exec(res.headers.get('traceresponse') ?? '') ?? [];
    const line = await logLine(server, { requestId: 'req-42.a:b' });
    expect(line).toEqual({
      time: expect.stringMatching(ISO_TIME),
      level: 'info',
      msg: 'request',
      requestId: 'req-42.a:b',
      traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
      spanId: expect.stringMatching(/^[0-9a-f]{16}$/),
      method: 'GET',
      route: '/v1/pets',
      status: 200,
      durationMs: expect.any(Number),
      consumer: 'acme',
      key: 'acme',
    });
    expect([line.traceId, line.spanId]).toEqual([traceId, spanId]);
    expect(server.lines.join('\n')).not.toContain(tokenOf('acme'));
  });

  test('an unusable X-Request-Id is replaced by a fresh UUID; without a key the client address is logged', async () => {
    const res = await fetch(`${server.url}/v1/pets/7`, { headers: { 'X-Request-Id': 'no spaces <please>' } });
    expect(res.status).toBe(401);
    const id = res.headers.get('x-request-id') as string;
    expect(id).toMatch(UUID);
    const line = await logLine(server, { requestId: id });
    expect([line.route, line.status, line.client, 'key' in line]).toEqual(['/v1/pets/:petId', 401, '127.0.0.1', false]);
  });

  test('json is the default log format when stdout is not a terminal', async () => {
    const [cmd, ...pre] = serverCommand();
    const out = await stdoutUntilListening(cmd as string, [...pre, ...SERVE_IN_MEMORY]);
    const lines = out.trim().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
  });

  test('pretty is the default on a terminal', async () => {
    // script(1) gives the server a pseudo-terminal as stdout.
    const out = await stdoutUntilListening('script', [
      '-qfec',
      [...serverCommand(), ...SERVE_IN_MEMORY].join(' '),
      '/dev/null',
    ]);
    expect(out).toMatch(
      /^\d{4}-\d\d-\d\dT[\d:.]+Z INFO {2}listening version=1\.0\.0 runtime=(bun|deno|node)( workers=\d+)? address=http:\/\/127\.0\.0\.1:\d+ data=(:memory:|\S+pets\.db) keysByPlan=\{"free":1\}\r?$/m,
    );
  });
});

describe('runtimes', () => {
  // Node before 22.13 has no node:sqlite (the `node` that PETSTORE_CMD runs is this one).
  const noSqlite = serverLacksSqlite();

  test.skipIf(noSqlite)('the default SQLite store opens and keeps what is created', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-ops-'));
    const server = await spawnServer({
      args: ['--keys', writeKeysFile(keysOf(['acme', 'pro']))],
      env: { PETSTORE_DATA: join(dir, 'petstore.db') },
    });
    try {
      const created = await fetch(`${server.url}/v1/pets`, {
        method: 'POST',
        headers: { ...bearer('acme'), 'Content-Type': 'application/json' },
        body: '{"name":"Rex","categoryId":1}',
      });
      expect(created.status).toBe(201);
      expect(existsSync(join(dir, 'petstore.db'))).toBe(true);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  test.if(noSqlite)(
    'a runtime without SQLite refuses a data file, the default included: exit 2, naming the runtimes that have it',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'petstore-ops-'));
      const version = spawnSync('node', ['--version'], { encoding: 'utf8' }).stdout.trim();
      const refusal = (data: string) =>
        `petstore: data store: --data ${data}: this runtime (Node ${version}) has no built-in SQLite; ` +
        'run the petstore binary (Bun), Deno 2, or Node 22.13 or later, ' +
        'or keep pets in PostgreSQL (--data postgres://...) or in memory only (--data :memory:)\n';
      const given = await runCommand(['--port', '0', '--host', '127.0.0.1', '--data', join(dir, 'x.db')]);
      expect([given.code, given.stderr]).toEqual([2, refusal(join(dir, 'x.db'))]);
      const byDefault = spawnSync(serverCommand()[0] ?? '', [...serverCommand().slice(1), '--port', '0'], {
        cwd: dir,
        encoding: 'utf8',
        // A refusal comes at once; a server that started instead is stopped rather than waited for.
        timeout: 10_000,
        env: Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'PETSTORE_DATA')),
      });
      expect([byDefault.status, byDefault.stderr]).toEqual([2, refusal('./data/petstore.db')]);
      expect(readdirSync(dir)).toEqual([]);
      // --data :memory: still serves.
      const server = await spawnServer({
        args: ['--keys', writeKeysFile(keysOf(['acme', 'pro'])), '--data', ':memory:'],
      });
      const listed = await fetch(`${server.url}/v1/pets`, { headers: bearer('acme') });
      expect(listed.status).toBe(200);
      expect(await server.stop()).toBe(0);
    },
  );
});

describe('health', () => {
  let server: Running;
  beforeAll(async () => {
    server = await spawnServer({ args: ['--keys', writeKeysFile(keysOf(['acme', 'pro']))] });
  });
  afterAll(() => server.stop());

  test.each([
    ['/healthz', { status: 'ok' }],
    ['/readyz', { status: 'ready', limiter: 'memory' }],
  ])('%s answers 200 without a key and without rate-limit headers', async (path, body) => {
    const res = await fetch(`${server.url}${path}`);
    expect([res.status, res.headers.get('content-type'), res.headers.get('cache-control')]).toEqual([
      200,
      'application/json',
      'no-store',
    ]);
    expect(await res.json()).toEqual(body);
    const rateHeaders = [...res.headers.keys()].filter((h) => /ratelimit|retry-after/i.test(h));
    expect(rateHeaders).toEqual([]);
  });

  test('/readyz is 503 with the Error body while no keys are loaded; /healthz stays 200', async () => {
    const empty = await spawnServer({ args: ['--keys', writeKeysFile([])] });
    try {
      const ready = await fetch(`${empty.url}/readyz`);
      expect([ready.status, ready.headers.get('content-type')]).toEqual([503, 'application/json']);
      expect(await ready.json()).toEqual({
        code: 'service_unavailable',
        message: 'No API keys are loaded.',
        status: 503,
      });
      expect((await fetch(`${empty.url}/healthz`)).status).toBe(200);
    } finally {
      await empty.stop();
    }
  });
});

describe('metrics', () => {
  test('/metrics is not served without --metrics', async () => {
    const server = await spawnServer({ args: ['--keys', writeKeysFile(keysOf(['acme', 'pro']))] });
    try {
      const res = await fetch(`${server.url}/metrics`);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ code: 'not_found', message: 'No resource exists at this path.', status: 404 });
    } finally {
      await server.stop();
    }
  });

  test('--metrics counts requests by operation and status, 429s and bans by plan', async () => {
    const tiny: KeySpec = {
      name: 'tiny',
      plan: 'pro',
      limits: { perMinute: 2, perDay: 100 },
      ban: { seconds: 60, threshold: 2 },
    };
    const server = await spawnServer({
      args: ['--metrics', '--keys', writeKeysFile([tiny, { name: 'acme', plan: 'free' }])],
    });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++)
        statuses.push((await fetch(`${server.url}/v1/pets`, { headers: bearer('tiny') })).status);
      expect(statuses).toEqual([200, 200, 429, 429]);
      const created = await fetch(`${server.url}/v1/pets`, {
        method: 'POST',
        headers: { ...bearer('acme'), 'Content-Type': 'application/json' },
        body: '{"name":"Rex","categoryId":1}',
      });
      expect(created.status).toBe(201);
      expect((await fetch(`${server.url}/v1/pets/1`, { headers: bearer('acme') })).status).toBe(200);
      expect((await fetch(`${server.url}/v1/pets/1`)).status).toBe(401);

      const ban = await logLine(server, { msg: 'ban started' });
      expect(ban).toEqual({
        time: expect.stringMatching(ISO_TIME),
        level: 'warn',
        msg: 'ban started',
        // Written while serving the request that started it: its ids.
        requestId: expect.any(String),
        traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
        spanId: expect.stringMatching(/^[0-9a-f]{16}$/),
        subject: 'tiny',
        plan: 'pro',
        until: expect.stringMatching(ISO_TIME),
      });

      const res = await fetch(`${server.url}/metrics`);
      expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
      const text = await res.text();
      const samples = text.split('\n').filter((l) => l && !l.startsWith('#'));
      for (const line of [
        'petstore_http_requests_total{operation="listPets",status="200"} 2',
        'petstore_http_requests_total{operation="listPets",status="429"} 2',
        'petstore_http_requests_total{operation="createPet",status="201"} 1',
        'petstore_http_requests_total{operation="getPet",status="200"} 1',
        'petstore_http_requests_total{operation="getPet",status="401"} 1',
        'petstore_http_request_duration_seconds_count{operation="listPets"} 4',
        'petstore_http_request_duration_seconds_bucket{le="+Inf",operation="createPet"} 1',
        'petstore_http_requests_in_flight 1',
        'petstore_rate_limited_total{plan="pro",reason="rate_limited"} 1',
        'petstore_rate_limited_total{plan="pro",reason="key_banned"} 1',
        'petstore_rate_limited_total{plan="free",reason="rate_limited"} 0',
        'petstore_bans_total{plan="pro"} 1',
        'petstore_bans_total{plan="anonymous"} 0',
        'petstore_store_errors_total{operation="create",kind="unavailable"} 0',
        'petstore_keys{plan="pro"} 1',
        'petstore_keys{plan="free"} 1',
        `petstore_build_info{version="1.0.0",runtime="${runtimeOf(server)}"} 1`,
      ]) {
        expect(samples).toContain(line);
      }
      // The scrape in progress counts only once it is answered.
      expect(samples.some((l) => l.startsWith('petstore_http_requests_total{operation="metrics"'))).toBe(false);
    } finally {
      await server.stop();
    }
  });

  test('--metrics-port serves /metrics there and not on the API port', async () => {
    const server = await spawnServer({
      args: ['--metrics-port', '0', '--keys', writeKeysFile(keysOf(['acme', 'pro']))],
    });
    try {
      const listening = jsonLines(server).find((l) => l.msg === 'listening') as LogLine;
      const metricsUrl = listening.metrics as string;
      expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      expect(metricsUrl).not.toBe(`${server.url}/metrics`);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${server.url}/metrics`)).status).toBe(404);
      const res = await fetch(metricsUrl);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('petstore_http_requests_total{operation="healthz",status="200"} 1\n');
      const other = await fetch(metricsUrl.replace('/metrics', '/v1/pets'));
      expect([other.status, await other.json()]).toEqual([
        404,
        { code: 'not_found', message: 'No resource exists at this path.', status: 404 },
      ]);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});

describe('SIGHUP reloads the keys file', () => {
  test('a changed file is reloaded by the watcher, and again on SIGHUP; a bad file keeps the old keys and says why', async () => {
    const keysFile = writeKeysFile(keysOf(['acme', 'pro']));
    const server = await spawnServer({ args: ['--metrics', '--keys', keysFile] });
    try {
      const conn = await RawConnection.open(server.port);
      expect((await conn.get('/v1/pets', bearer('newco'))).status).toBe(401);

      writeKeysFile(keysOf(['acme', 'pro'], ['newco', 'business']), keysFile.replace(/keys\.json$/, ''));
      const reloaded = {
        time: expect.stringMatching(ISO_TIME),
        level: 'info',
        msg: 'keys reloaded',
        file: keysFile,
        keysByPlan: { pro: 1, business: 1 },
      };
      expect(await logLine(server, { msg: 'keys reloaded', trigger: 'file change' })).toEqual({
        ...reloaded,
        trigger: 'file change',
      });
      server.child.kill('SIGHUP');
      expect(await logLine(server, { msg: 'keys reloaded', trigger: 'SIGHUP' })).toEqual({
        ...reloaded,
        trigger: 'SIGHUP',
      });
      expect((await conn.get('/v1/pets', bearer('newco'))).status).toBe(200);
      expect((await conn.get('/v1/pets', bearer('acme'))).status).toBe(200);

      writeFileSync(keysFile, JSON.stringify({ keys: [{ name: 'acme', sha256: 'nothex', plan: 'pro' }] }));
      const failed = {
        time: expect.stringMatching(ISO_TIME),
        level: 'error',
        msg: 'keys reload failed; keeping the previous keys',
        file: keysFile,
        error: 'keys[0] ("acme").sha256: must be 64 lowercase hex digits, got "nothex"',
      };
      expect(await logLine(server, { msg: failed.msg, trigger: 'file change' })).toEqual({
        ...failed,
        trigger: 'file change',
      });
      server.child.kill('SIGHUP');
      expect(await logLine(server, { msg: failed.msg, trigger: 'SIGHUP' })).toEqual({ ...failed, trigger: 'SIGHUP' });
      expect((await conn.get('/v1/pets', bearer('newco'))).status).toBe(200);

      const metrics = (await conn.get('/metrics')).body;
      expect(metrics).toContain(
        'petstore_keys_reloads_total{result="ok"} 2\npetstore_keys_reloads_total{result="failed"} 2\n',
      );
      expect(metrics).toContain('petstore_keys{plan="business"} 1\n');
      conn.close();
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  test('without a keys file SIGHUP is logged and the server keeps serving', async () => {
    const server = await spawnServer();
    try {
      server.child.kill('SIGHUP');
      await logLine(server, { level: 'warn', msg: 'SIGHUP: no keys file to reload (started without --keys)' });
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});

describe('SIGTERM', () => {
  const body = '{"name":"Slowpoke","categoryId":79}';
  const slowPost = async (port: number) => {
    const conn = await RawConnection.open(port);
    conn.write(
      `POST /v1/pets HTTP/1.1\r\nHost: petstore\r\nAuthorization: Bearer ${tokenOf('acme')}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    return conn;
  };

  test('stops accepting, finishes the request in flight, closes idle connections, exits 0', async () => {
    const server = await spawnServer({ args: ['--keys', writeKeysFile(keysOf(['acme', 'pro']))] });
    const conn = await slowPost(server.port);
    await Bun.sleep(300);
    server.child.kill('SIGTERM');
    await logLine(server, { msg: 'shutting down', signal: 'SIGTERM', deadlineSeconds: 10 });
    await Bun.sleep(200);
    const late = await RawConnection.open(server.port).then(
      async (c) => {
        const r = await c.get('/v1/pets', bearer('acme'));
        c.close();
        return `${r.status} ${r.body}`;
      },
      (e: NodeJS.ErrnoException) => e.code,
    );
    // Deno drains before it closes its listener: see src/serve/deno.ts.
    expect(late).toBe(
      runtimeOf(server) === 'deno'
        ? '503 {"code":"service_unavailable","message":"The server is shutting down.","status":503}'
        : 'ECONNREFUSED',
    );

    conn.write(body.slice(10));
    const res = await conn.response();
    expect([res.status, JSON.parse(res.body)]).toEqual([
      201,
      { id: 1, name: 'Slowpoke', categoryId: 79, status: 'available' },
    ]);
    // The client keeps its socket open; the server must not wait for it until the deadline.
    expect(await exitWithin(server, 3_000)).toBe(0);
    await conn.closed;
    const msgs = jsonLines(server).map((l) => l.msg);
    expect(msgs.slice(msgs.indexOf('shutting down'))).toEqual(['shutting down', 'request', 'stopped']);
  });

  test('a request still unfinished at --shutdown-timeout is cut off, and the server exits 0', async () => {
    const server = await spawnServer({
      args: ['--shutdown-timeout', '1', '--keys', writeKeysFile(keysOf(['acme', 'pro']))],
    });
    const conn = await slowPost(server.port);
    await Bun.sleep(300);
    const started = Date.now();
    server.child.kill('SIGTERM');
    expect(await exitWithin(server, 4_000)).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    await conn.closed;
    await expect(conn.response(100)).rejects.toThrow('connection closed');
    await logLine(server, {
      level: 'warn',
      msg: 'shutdown deadline passed; closing open connections',
      deadlineSeconds: 1,
    });
    expect(jsonLines(server).at(-1)?.msg).toBe('stopped');
  });
});

describe('petstore healthcheck', () => {
  // A server and six commands, each a runtime's start: seconds under Node on a loaded machine.
  test('exits 0 while the server answers, 1 once it is gone, 2 on a bad option', async () => {
    const server = await spawnServer();
    const port = String(server.port);
    const byFlag = await runCommand(['healthcheck', '--port', port]);
    // As the container's HEALTHCHECK runs it: no flags, the server's own environment.
    const byEnv = await runCommand(['healthcheck'], { PORT: port, HOST: '0.0.0.0' });
    const byHost = await runCommand(['healthcheck'], { PORT: port, HOST: '127.0.0.1' });
    expect(await server.stop()).toBe(0);
    const down = await runCommand(['healthcheck', '--port', port]);
    const bad = await runCommand(['healthcheck', '--timeout', '3']);
    const badPort = await runCommand(['healthcheck', '--port', 'http']);
    expect([byFlag.code, byEnv.code, byHost.code, down.code, bad.code, badPort.code]).toEqual([0, 0, 0, 1, 2, 2]);
    expect(bad.stderr).toContain('unknown option "--timeout"; expected --port, --host');
    expect(badPort.stderr).toContain('--port: expected a port number, got "http"');
  }, 30_000);
});

describe('the command line', () => {
  test('--help lists every flag with its env var and default', async () => {
    const r = await runCommand(['--help']);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    for (const o of Object.values(OPTIONS) as {
      flag: string;
      env?: string;
      arg?: string;
      fallback: unknown;
      shownDefault?: string;
    }[]) {
      const line = lines.find((l) => l.startsWith(`  ${o.flag} `));
      expect(line, o.flag).toBeDefined();
      const shown = o.shownDefault ?? (o.arg ? String(o.fallback) : undefined);
      if (o.env) expect(line).toEndWith(`(env ${o.env}${shown === undefined ? '' : `, default ${shown}`})`);
    }
  });

  test.each([
    [['--metrics-port', 'nine'], '--metrics-port: expected a whole number from 0 to 65535, got "nine"'],
    [['--log-format', 'xml'], '--log-format: expected one of json, pretty, got "xml"'],
    [['--metrics=maybe'], '--metrics: takes no value, got "--metrics=maybe"'],
  ])('%p exits 2: %s', async (args, message) => {
    const r = await runCommand(args);
    expect([r.code, r.stderr]).toEqual([2, `petstore: configuration: ${message}\nRun petstore --help for usage.\n`]);
  });

  test("docs/operations.md's table of flags is the one --help's option table makes", () => {
    // Refresh it with: node_modules/.bin/bun scripts/docs-flags.ts
    expect(pageTable()).toBe(flagsTable());
  });

  test('a second server on a port in use exits 1 and says so, and the first one keeps serving', async () => {
    const first = await spawnServer();
    try {
      const second = await runCommand(['--port', String(first.port), '--host', '127.0.0.1', '--data', defaultData()]);
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(/^petstore: failed to start: .*(in use|EADDRINUSE)/im);
      expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    } finally {
      await first.stop();
    }
  });

  test('a bad PETSTORE_METRICS value exits 2 naming the variable', async () => {
    const r = await runCommand([], { PETSTORE_METRICS: 'maybe' });
    expect([r.code, r.stderr.split('\n')[0]]).toEqual([
      2,
      'petstore: configuration: PETSTORE_METRICS: expected true or false, got "maybe"',
    ]);
  });
});
