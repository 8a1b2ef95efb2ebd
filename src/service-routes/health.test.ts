import { describe, expect, test } from 'bun:test';
import { routesApp } from '../../test/testing.ts';
import type { LimiterStatus } from '../gateway/gateway.ts';
import { parseKeys } from '../keys/file.ts';
import { KeyTable } from '../keys/table.ts';
import { createLogger } from '../log.ts';
import { MemoryStore } from '../store/memory-store.ts';
import type { DataStore } from '../store/store.ts';
import { healthRoutes } from './health.ts';

const oneKey = new KeyTable(parseKeys(JSON.stringify({ keys: [{ name: 'a', sha256: 'a'.repeat(64), plan: 'free' }] })));

function setup({
  store = new MemoryStore() as DataStore,
  keys = oneKey,
  whyNotReady = (): string | undefined => undefined,
  limiter = undefined as LimiterStatus['backend'] | undefined,
} = {}) {
  const lines: string[] = [];
  const log = createLogger({ write: (l) => lines.push(l), now: () => 0 });
  const status = (backend: LimiterStatus['backend']): LimiterStatus => ({
    backend,
    ready: backend !== 'none',
    since: 0,
    outages: 0,
    localDecisions: 0,
    unavailableDecisions: 0,
  });
  const limiterStatus = limiter === undefined ? undefined : () => status(limiter);
  const app = routesApp(
    healthRoutes({
      store,
      keyTable: () => keys,
      log,
      whyNotReady,
      timeoutMs: 50,
      ...(limiterStatus ? { limiterStatus } : {}),
    }),
  );
  return { app, lines };
}

async function answer(res: Response) {
  return [res.status, res.headers.get('content-type'), res.headers.get('cache-control'), await res.json()];
}

const unavailable = (message: string) => ({ code: 'service_unavailable', message, status: 503 });

describe('health routes', () => {
  test('/healthz and /readyz answer 200 when the store answers and keys are loaded', async () => {
    const { app } = setup();
    expect(await answer(await app.request('/healthz'))).toEqual([
      200,
      'application/json',
      'no-store',
      { status: 'ok' },
    ]);
    expect(await answer(await app.request('/readyz'))).toEqual([
      200,
      'application/json',
      'no-store',
      { status: 'ready', limiter: 'memory' },
    ]);
  });

  test('/readyz is 503 without keys', async () => {
    const { app } = setup({ keys: new KeyTable([]) });
    expect(await answer(await app.request('/readyz'))).toEqual([
      503,
      'application/json',
      'no-store',
      unavailable('No API keys are loaded.'),
    ]);
  });

  test('/readyz is 503 when the store fails its ping; the reason is logged, not sent', async () => {
    const store = Object.assign(new MemoryStore(), {
      ping: () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.5:5432')),
    });
    const { app, lines } = setup({ store });
    const res = await app.request('/readyz');
    expect((await answer(res))[3]).toEqual(unavailable('The store is not reachable.'));
    // Not traced: the line names the request, with no trace.
    expect(lines).toEqual([
      `{"time":"1970-01-01T00:00:00.000Z","level":"warn","msg":"not ready: the store does not answer","requestId":"${res.headers.get('x-request-id')}","error":"connect ECONNREFUSED 10.0.0.5:5432"}`,
    ]);
    expect((await app.request('/healthz')).status).toBe(200);
  });

  test('/readyz is 503 when the store does not answer in time', async () => {
    const store = Object.assign(new MemoryStore(), { ping: () => new Promise<void>(() => {}) });
    const { app, lines } = setup({ store });
    expect((await answer(await app.request('/readyz')))[3]).toEqual(unavailable('The store is not reachable.'));
    expect(lines[0]).toContain('"error":"no answer within 50 ms"');
  });

  test('/readyz is 503 while shutting down', async () => {
    const { app } = setup({ whyNotReady: () => 'The server is shutting down.' });
    expect((await answer(await app.request('/readyz')))[3]).toEqual(unavailable('The server is shutting down.'));
  });

  test('/readyz names where limits are decided, and is 503 while they cannot be (Redis down, fail closed)', async () => {
    for (const backend of ['redis', 'local'] as const) {
      const { app } = setup({ limiter: backend });
      expect((await answer(await app.request('/readyz')))[3]).toEqual({ status: 'ready', limiter: backend });
    }
    const { app } = setup({ limiter: 'none' });
    expect(await answer(await app.request('/readyz'))).toEqual([
      503,
      'application/json',
      'no-store',
      unavailable('The rate limiter cannot reach Redis (--redis-fail closed).'),
    ]);
  });
});
