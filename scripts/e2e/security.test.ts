// Security properties of the server PETSTORE_CMD starts (the binary by default), as a client
// and an operator see them: no token in any log line of a whole run, a warning for a keys file
// other users can read or write, API data neither cached nor sniffed, no internals in error
// bodies, and a key-guessing run stopped by the per-address limit and the ban (which never
// applies to a valid key: SECURITY.md "Failed authentication"), nothing in the working
// directory read or run, no token-shaped value in an exported span, a log line or a header, and
// a Redis that answers with 20 MB unable to fill the log (test/fake-redis.ts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeRedis } from '../../test/fake-redis.ts';
import { type Running, serverCommand, spawnServer, tokenOf, writeKeysFile } from '../../test/harness.ts';
import { KIND, startOtlpReceiver } from '../../test/otlp-receiver.ts';

type LogLine = Record<string, unknown>;

/** A stack frame, a source or install path: what an error body must never show. */
const INTERNALS = /^\s*at .+:\d+|\/work\/|\/tmp\/|\/home\/|node_modules|\.[cm]?[jt]s:\d+/m;
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const jsonLines = (server: Running): LogLine[] =>
  server.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine);

async function waitForLog(server: Running, msg: string, timeoutMs = 5_000): Promise<LogLine> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = jsonLines(server).find((l) => l.msg === msg);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no "${msg}" line:\n${server.lines.join('\n')}`);
    await Bun.sleep(20);
  }
}

/** Every kind of response a client can provoke, with the headers and body it got. */
async function provokeEverything(url: string, token: string) {
  const json = { ...bearer(token), 'Content-Type': 'application/json' };
  const calls: Array<[string, string, RequestInit]> = [
    ['list', '/v1/pets', { headers: bearer(token) }],
    ['create', '/v1/pets', { method: 'POST', headers: json, body: '{"name":"Rex","categoryId":1}' }],
    ['get', '/v1/pets/1', { headers: bearer(token) }],
    ['token in the query', `/v1/pets?api_key=${token}`, { headers: bearer(token) }],
    ['400 query', '/v1/pets?limit=0', { headers: bearer(token) }],
    ['400 body', '/v1/pets', { method: 'POST', headers: json, body: '{"name":' }],
    ['400 huge number', '/v1/pets', { method: 'POST', headers: json, body: '{"name":"a","categoryId":1e999}' }],
    ['401 near miss', '/v1/pets', { headers: bearer(`${token.slice(0, -1)}x`) }],
    ['401 other scheme', '/v1/pets', { headers: { Authorization: `Basic ${btoa(`user:${token}`)}` } }],
    ['404', '/v1/pets/999999', { headers: bearer(token) }],
    ['405', '/v1/pets', { method: 'DELETE', headers: bearer(token) }],
    ['413', '/v1/pets', { method: 'POST', headers: json, body: `"${'x'.repeat(70_000)}"` }],
    ['414', `/v1/pets?pad=${'a'.repeat(9_000)}`, { headers: bearer(token) }],
    ['415', '/v1/pets', { method: 'POST', headers: { ...bearer(token), 'Content-Type': 'text/plain' }, body: 'x' }],
  ];
  const out = [];
  for (const [what, path, init] of calls) {
    const res = await fetch(`${url}${path}`, init);
    out.push({ what, status: res.status, headers: res.headers, text: await res.text() });
  }
  return out;
}

describe('tokens never reach the logs', () => {
  let server: Running;
  const keys = writeKeysFile([
    { name: 'acme', plan: 'free' },
    { name: 'tiny', plan: 'free', limits: { perMinute: 2, perDay: 100 } },
  ]);
  beforeAll(async () => {
    server = await spawnServer({ args: ['--keys', keys, '--log-level', 'debug'] });
  });

  test('a whole run at debug level, bans, a reload and shutdown included: no token, no hash', async () => {
    const seen = await provokeEverything(server.url, tokenOf('acme'));
    // Over the quota, then banned: both are logged with the key's name.
    for (let i = 0; i < 6; i++) await fetch(`${server.url}/v1/pets`, { headers: bearer(tokenOf('tiny')) });
    await waitForLog(server, 'ban started');
    server.child.kill('SIGHUP');
    await waitForLog(server, 'keys reloaded');
    expect(await server.stop()).toBe(0);

    expect(seen.map((s) => s.status)).toEqual([200, 201, 200, 200, 400, 400, 400, 401, 401, 404, 405, 413, 414, 415]);
    const requestLines = jsonLines(server).filter((l) => l.msg === 'request');
    expect(requestLines.length).toBe(seen.length + 6);
    expect(requestLines.filter((l) => l.key === 'acme').length).toBeGreaterThanOrEqual(8);
    for (const secret of [tokenOf('acme'), tokenOf('tiny'), sha256(tokenOf('acme')), sha256(tokenOf('tiny'))]) {
      // The token less its prefix too, and a long prefix of it: a truncated token is still a leak.
      for (const piece of [secret, secret.replace(/^psk_/, ''), secret.slice(0, 24)]) {
        expect(server.lines.filter((line) => line.includes(piece))).toEqual([]);
      }
    }
  });
});

describe('a keys file other users can read or write is warned about', () => {
  const modes: Array<[string, string | undefined]> = [
    ['0600', undefined],
    ['0640', undefined],
    ['0644', 'the keys file is readable by every user (mode 0644); run chmod 600 or 640 on it'],
    [
      '0666',
      'the keys file is writable by group or others (mode 0666): anyone who can write it can add a key; run chmod 600 on it',
    ],
  ];
  test.each(modes)('mode %s at start', async (mode, warning) => {
    const keys = writeKeysFile([{ name: 'acme', plan: 'free' }]);
    chmodSync(keys, Number.parseInt(mode, 8));
    const server = await spawnServer({ args: ['--keys', keys] });
    await server.stop();
    const warned = jsonLines(server).filter((l) => String(l.msg).startsWith('the keys file is'));
    expect(warned).toEqual(warning ? [expect.objectContaining({ level: 'warn', msg: warning, file: keys })] : []);
  });

  test('and again when SIGHUP reloads a file that was opened up meanwhile', async () => {
    const keys = writeKeysFile([{ name: 'acme', plan: 'free' }]);
    const server = await spawnServer({ args: ['--keys', keys] });
    chmodSync(keys, 0o644);
    server.child.kill('SIGHUP');
    await waitForLog(server, 'keys reloaded');
    const warning = await waitForLog(
      server,
      'the keys file is readable by every user (mode 0644); run chmod 600 or 640 on it',
    );
    expect(warning.level).toBe('warn');
    await server.stop();
  });
});

describe('the working directory configures nothing', () => {
  // A compiled Bun program reads `.env` and `bunfig.toml` where it starts unless built not to; a
  // bunfig's `preload` would run any script found there, with the server's rights.
  test('a .env and a bunfig.toml with a preload, where the server starts, are neither read nor run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-cwd-'));
    const keys = writeKeysFile([{ name: 'planted', plan: 'pro' }]);
    writeFileSync(join(dir, '.env'), `PETSTORE_KEYS_FILE=${keys}\n`);
    writeFileSync(
      join(dir, 'preload.ts'),
      `require('node:fs').writeFileSync(${JSON.stringify(join(dir, 'ran'))}, 'x')\n`,
    );
    writeFileSync(join(dir, 'bunfig.toml'), 'preload = ["./preload.ts"]\n');
    const server = await spawnServer({ cwd: dir });
    await server.stop();
    expect(jsonLines(server).find((l) => l.msg === 'listening')?.keysByPlan).toEqual({ free: 1 });
    expect(existsSync(join(dir, 'ran'))).toBe(false);
  });
});

describe('responses and error bodies', () => {
  let server: Running;
  let seen: Awaited<ReturnType<typeof provokeEverything>>;
  beforeAll(async () => {
    server = await spawnServer({ args: ['--keys', writeKeysFile([{ name: 'acme', plan: 'pro' }])] });
    seen = await provokeEverything(server.url, tokenOf('acme'));
  });
  afterAll(async () => {
    await server.stop();
  });

  test('every /v1 response, error or not, says Cache-Control: no-store and X-Content-Type-Options: nosniff', () => {
    const marked = seen.map((s) => [s.what, s.headers.get('cache-control'), s.headers.get('x-content-type-options')]);
    expect(marked).toEqual(seen.map((s) => [s.what, 'no-store', 'nosniff']));
  });

  test('every error body is exactly {code, message, status}, with no stack trace or internal path', () => {
    const errors = seen.filter((s) => s.status >= 400);
    expect(errors.length).toBe(10);
    for (const { status, text, headers } of errors) {
      expect(headers.get('content-type')).toBe('application/json');
      const body = JSON.parse(text) as Record<string, unknown>;
      expect(Object.keys(body).sort()).toEqual(['code', 'message', 'status']);
      expect(body.status).toBe(status);
      expect(text).not.toMatch(INTERNALS);
    }
  });
});

describe('a key-guessing run is stopped; a valid key is not', () => {
  let server: Running;
  beforeAll(async () => {
    // From loopback X-Forwarded-For is believed, so one test plays several client addresses.
    server = await spawnServer({
      args: ['--keys', writeKeysFile([{ name: 'victim', plan: 'pro' }]), '--trust-proxy', '127.0.0.1'],
    });
  });
  afterAll(async () => {
    await server.stop();
  });

  test('2,000 guesses from one address: 60 are checked, the rest refused; a valid key from it is admitted', async () => {
    const from = (address: string, token: string) =>
      fetch(`${server.url}/v1/pets`, { headers: { ...bearer(token), 'X-Forwarded-For': address } });
    const outcomes = new Map<string, number>();
    let rightGuess = '';
    for (let i = 0; i < 2_000; i++) {
      // The right token is guess number 1,000: long after the address was banned.
      const guess =
        i === 1_000 ? tokenOf('victim') : `psk_${createHash('sha256').update(String(i)).digest('base64url')}`;
      const res = await from('203.0.113.66', guess);
      const code = ((await res.json()) as { code?: string }).code ?? String(res.status);
      if (i === 1_000) rightGuess = code;
      outcomes.set(code, (outcomes.get(code) ?? 0) + 1);
    }
    // 60 checked (the free plan's minute); the 60th refusal starts a 15-minute ban and is
    // already answered key_banned. The valid key is judged by its own quota only: the address's
    // failed-auth limits must not let a neighbour behind the same NAT lock it out.
    expect(Object.fromEntries(outcomes)).toEqual({ unauthorized: 60, rate_limited: 59, key_banned: 1_880, '200': 1 });
    expect(rightGuess).toBe('200');
    const ban = await waitForLog(server, 'ban started');
    expect([ban.subject, ban.plan]).toEqual(['203.0.113.66', 'anonymous']);
    // The key itself still works from anywhere else.
    expect((await from('198.51.100.7', tokenOf('victim'))).status).toBe(200);
  }, 60_000);
});

const underDeno = serverCommand().some((part) => /(^|\/)deno$/.test(part));

/** Anything shaped like a token: its prefix and a character of its body. */
const TOKEN_SHAPED = /psk_[0-9A-Za-z_-]/i;

describe('tokens never reach spans, log lines or headers', () => {
  test('a token in the path, with a key and without one, and inside an X-Request-Id: redacted in url.path, never echoed, never logged', async () => {
    const otlp = await startOtlpReceiver();
    const server = await spawnServer({
      args: [
        '--keys',
        writeKeysFile([{ name: 'acme', plan: 'pro' }]),
        '--otel-endpoint',
        otlp.url,
        '--log-level',
        'debug',
      ],
    });
    const token = tokenOf('acme');
    const scanned = `psk_${'A1b2C3d4E5'.repeat(3)}f6G7h8i9`;
    try {
      const calls: Array<[string, RequestInit]> = [
        [`/v1/pets/${token}`, { headers: bearer(token) }],
        [`/v1/pets/${scanned}`, { headers: bearer(token) }],
        [`/${token}`, {}],
        [`/v1/pets/x.${scanned}.y`, {}],
        ['/v1/pets', { headers: { ...bearer(token), 'X-Request-Id': `x.${token}` } }],
        ['/v1/pets', { headers: { ...bearer(token), 'X-Request-Id': `x.${scanned}` } }],
        ['/v1/pets', { headers: { ...bearer(token), 'X-Request-Id': 'trace:PSK_abc' } }],
      ];
      const answers = [];
      for (const [path, init] of calls) {
        const res = await fetch(`${server.url}${path}`, init);
        await res.arrayBuffer();
        answers.push({ status: res.status, headers: [...res.headers], trace: res.headers.get('traceresponse') ?? '' });
      }
      expect(answers.map((a) => a.status)).toEqual([400, 400, 404, 401, 200, 200, 200]);
      // No header of any answer holds one; a request id with one was replaced by a fresh UUID.
      expect(answers.flatMap((a) => a.headers.filter(([, v]) => TOKEN_SHAPED.test(v)))).toEqual([]);
      for (const a of answers.slice(4)) {
        expect(a.headers.find(([k]) => k === 'x-request-id')?.[1]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);
      }
      // Every request is exported (the default sampler, no caller's decision): url.path is redacted.
      const traceIds = answers.map((a) => a.trace.split('-')[1] ?? '');
      const servers = await otlp.waitFor((spans) => {
        const found = traceIds.map((id) => spans.find((s) => s.traceId === id && s.kind === KIND.server));
        return found.every(Boolean) ? found : undefined;
      });
      expect(servers.map((s) => s?.attributes['url.path'])).toEqual([
        '/v1/pets/***',
        '/v1/pets/***',
        '/***',
        '/v1/pets/x.***.y',
        '/v1/pets',
        '/v1/pets',
        '/v1/pets',
      ]);
      expect(server.lines.length).toBeGreaterThan(7);
      expect(await server.stop()).toBe(0);
      const exported = JSON.stringify(otlp.spans, (_k, v) => (typeof v === 'bigint' ? String(v) : v));
      expect(TOKEN_SHAPED.test(exported)).toBe(false);
      expect(server.lines.filter((l) => TOKEN_SHAPED.test(l))).toEqual([]);
    } finally {
      await server.stop('SIGKILL');
      await otlp.close();
    }
  });
});

describe('a peer cannot fill the log', () => {
  test('a Redis answering EVALSHA with a 20 MB string: each failover is logged in one bounded line, requests served', async () => {
    const redis = await startFakeRedis('x'.repeat(20_000_000));
    const server = await spawnServer({
      args: ['--keys', writeKeysFile([{ name: 'acme', plan: 'pro' }]), '--redis', redis.url],
    });
    try {
      const statuses: number[] = [];
      // Over 6 s, so the limiter's probe (every second) takes Redis back and the next request fails over again.
      for (const end = Date.now() + 6_000; Date.now() < end; await Bun.sleep(300)) {
        const res = await fetch(`${server.url}/v1/pets`, { headers: bearer(tokenOf('acme')) });
        await res.arrayBuffer();
        statuses.push(res.status);
      }
      expect(await server.stop()).toBe(0);
      expect(new Set(statuses)).toEqual(new Set([200]));
      expect(redis.scriptCalls).toBeGreaterThan(2);
      const failovers = jsonLines(server).filter((l) => String(l.msg).startsWith('rate limiter: Redis unreachable'));
      expect(failovers.length).toBeGreaterThan(2);
      // The reply, cut; or, where the runtime reads 20 MB slower than the command's time-out (Deno,
      // or a busy host), that time-out.
      const cut = `unexpected reply from the rate-limit script: ${'x'.repeat(256)}… (20000000 characters)`;
      const timedOut = 'no answer within 500 ms';
      expect(failovers.filter((l) => l.reason !== cut && l.reason !== timedOut)).toEqual([]);
      if (!underDeno) expect(failovers.some((l) => l.reason === cut)).toBe(true);
      const longest = Math.max(...server.lines.map((l) => l.length));
      expect(longest).toBeLessThan(2_000);
    } finally {
      await server.stop('SIGKILL');
      await redis.close();
    }
  }, 30_000);
});
