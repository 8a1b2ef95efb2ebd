/**
 * The gateway with a Redis limiter, against the built binary:
 * - Redis slow (0.3 s per call, through a delaying proxy): `--max-in-flight 3` keeps exactly
 *   3 requests in flight; the rest are answered 429 `too_many_concurrent_requests` at once;
 * - Redis stopped: with `--redis-fail closed` /readyz is 503 naming the limiter while /v1
 *   answers 503; with `--redis-fail open` /readyz stays 200 saying `"limiter":"local"`; Redis
 *   back: both 200 within 10 s, without a restart;
 * - traced (`--otel-endpoint`): the limiter's Redis run is a client span inside the decision's.
 *
 * Needs PETSTORE_TEST_REDIS_URL and PETSTORE_TEST_REDIS_DIR: `make scale-out-test`
 * (scripts/with-redis.sh starts a throwaway redis-server).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { type Running, spawnServer, tokenOf, writeKeysFile } from '../test/harness.ts';
import { KIND, startOtlpReceiver } from '../test/otlp-receiver.ts';
import { type TcpProxy, tcpProxy } from '../test/proxy.ts';

const REDIS = process.env.PETSTORE_TEST_REDIS_URL ?? '';
const REDIS_DIR = process.env.PETSTORE_TEST_REDIS_DIR ?? '';
const READY = Boolean(REDIS && REDIS_DIR);
if (!READY) {
  console.warn(
    'redis-gateway.test.ts: needs PETSTORE_TEST_REDIS_URL and PETSTORE_TEST_REDIS_DIR; skipped. ' +
      'Run it with: make scale-out-test',
  );
}

const DELAY_MS = 300;
const auth = (name: string) => ({ Authorization: `Bearer ${tokenOf(name)}` });

describe.skipIf(!READY)('--max-in-flight under a slow Redis', () => {
  let proxy: TcpProxy;
  let server: Running;
  beforeAll(async () => {
    // Each command held 0.3 s on its way to Redis: every Redis call takes at least that.
    const target = new URL(REDIS);
    proxy = await tcpProxy({ host: target.hostname, port: Number(target.port) }, 'requests', DELAY_MS);
    const keys = writeKeysFile([{ name: 'busy', plan: 'pro' }]);
    const url = `redis://127.0.0.1:${proxy.port}`;
    server = await spawnServer({ args: ['--keys', keys, '--redis', url, '--max-in-flight', '3'] });
  });
  afterAll(async () => {
    await server?.stop();
    proxy?.close();
  });

  test('10 at once: exactly 3 are admitted (201), the other 7 get 429 before any of them is done', async () => {
    const t0 = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const res = await fetch(`${server.url}/v1/pets`, {
          method: 'POST',
          headers: { ...auth('busy'), 'Content-Type': 'application/json' },
          body: JSON.stringify({ name: `Busy ${i}`, categoryId: 1 }),
        });
        const body = (await res.json()) as { code?: string };
        return {
          status: res.status,
          code: body.code,
          ms: performance.now() - t0,
          retry: res.headers.get('retry-after'),
        };
      }),
    );
    const admitted = answers.filter((a) => a.status === 201);
    const refused = answers.filter((a) => a.status === 429);
    expect(admitted).toHaveLength(3);
    expect(refused).toHaveLength(7);
    expect(new Set(refused.map((a) => `${a.code} ${a.retry}`))).toEqual(new Set(['too_many_concurrent_requests 1']));
    // Refused at once: not one of them waited for Redis, which every admitted one did.
    const firstDone = Math.min(...admitted.map((a) => a.ms));
    expect(firstDone).toBeGreaterThanOrEqual(DELAY_MS);
    for (const r of refused) expect(r.ms).toBeLessThan(firstDone);
    // The slots are given back: the next one is admitted.
    const after = await fetch(`${server.url}/v1/pets?limit=1`, { headers: auth('busy') });
    expect(after.status).toBe(200);
  }, 30_000);
});

describe.skipIf(!READY)('/readyz tells whether the limiter can decide', () => {
  let open: Running;
  let closed: Running;
  beforeAll(async () => {
    const keys = writeKeysFile([{ name: 'ready', plan: 'pro' }]);
    [open, closed] = await Promise.all([
      spawnServer({ args: ['--keys', keys, '--redis', REDIS] }),
      spawnServer({ args: ['--keys', keys, '--redis', REDIS, '--redis-fail', 'closed'] }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([open, closed].map((s) => s?.stop()));
  });

  const ready = async (s: Running) => {
    const res = await fetch(`${s.url}/readyz`);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const api = async (s: Running) => (await fetch(`${s.url}/v1/pets?limit=1`, { headers: auth('ready') })).status;

  async function within(ms: number, what: string, done: () => Promise<boolean>) {
    const until = Date.now() + ms;
    while (!(await done())) {
      if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
      await Bun.sleep(100);
    }
  }

  test('Redis down: fail-closed is not ready and says why, fail-open is; Redis back: both ready in 10 s', async () => {
    expect(await ready(open)).toEqual({ status: 200, body: { status: 'ready', limiter: 'redis' } });
    expect(await ready(closed)).toEqual({ status: 200, body: { status: 'ready', limiter: 'redis' } });

    const port = new URL(REDIS).port;
    expect(spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', port, 'shutdown', 'nosave']).status).toBe(0);
    try {
      await within(10_000, 'fail-closed /readyz 503', async () => (await ready(closed)).status === 503);
      expect(await ready(closed)).toEqual({
        status: 503,
        body: {
          code: 'service_unavailable',
          message: 'The rate limiter cannot reach Redis (--redis-fail closed).',
          status: 503,
        },
      });
      expect(await api(closed)).toBe(503);
      expect(await ready(open)).toEqual({ status: 200, body: { status: 'ready', limiter: 'local' } });
      expect(await api(open)).toBe(200);
    } finally {
      expect(spawnSync('redis-server', [join(REDIS_DIR, 'redis.conf')]).status).toBe(0);
    }
    const back = Date.now();
    await within(10_000, 'both ready on Redis again', async () => {
      const [o, c] = await Promise.all([ready(open), ready(closed)]);
      return o.status === 200 && c.status === 200 && o.body.limiter === 'redis' && c.body.limiter === 'redis';
    });
    expect(Date.now() - back).toBeLessThan(10_000);
    expect([await api(closed), await api(open)]).toEqual([200, 200]);
  }, 60_000);
});

describe.skipIf(!READY)('traces', () => {
  test("the limiter's Redis run is a client span inside the gateway's decision", async () => {
    const otlp = await startOtlpReceiver();
    const server = await spawnServer({
      args: [
        ...['--keys', writeKeysFile([{ name: 'acme', plan: 'pro' }]), '--redis', REDIS],
        ...['--otel-endpoint', otlp.url],
      ],
    });
    try {
      const res = await fetch(`${server.url}/v1/pets`, { headers: auth('acme') });
      expect(res.status).toBe(200);
      const traceId = /^00-([0-9a-f]{32})-/.exec(res.headers.get('traceresponse') ?? '')?.[1];
      const spans = await otlp.waitFor((all) => {
        const mine = all.filter((s) => s.traceId === traceId);
        return mine.some((s) => s.kind === KIND.server) ? mine : undefined;
      });
      const decide = spans.find((s) => s.name === 'gateway decide');
      const redis = spans.find((s) => s.name === 'EVALSHA');
      expect(redis).toMatchObject({
        kind: KIND.client,
        parentSpanId: decide?.spanId,
        attributes: { 'db.system.name': 'redis', 'db.operation.name': 'EVALSHA' },
      });
      expect((redis?.start ?? 0n) >= (decide?.start ?? 0n) && (redis?.end ?? 0n) <= (decide?.end ?? 0n)).toBe(true);
    } finally {
      await server.stop('SIGKILL');
      await otlp.close();
    }
  }, 20_000);
});
