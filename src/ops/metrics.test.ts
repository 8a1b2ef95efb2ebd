import { describe, expect, test } from 'bun:test';
import { createApp, metricsApp } from '../app.ts';
import { SlidingWindowLimiter } from '../gateway/index.ts';
import { KeyTable } from '../keys/table.ts';
import { Metrics } from '../metrics/registry.ts';
import { MemoryStore } from '../store/memory.ts';

const NOT_FOUND = { code: 'not_found', message: 'No resource exists at this path.', status: 404 };

function app(options: { metrics?: Metrics; serveMetrics?: boolean }) {
  return createApp({
    store: new MemoryStore(),
    keys: () => new KeyTable([]),
    limiter: new SlidingWindowLimiter(),
    ...options,
  });
}

describe('GET /metrics', () => {
  test('served by the app with metrics, in the text format, counting the requests before it', async () => {
    const metrics = new Metrics({ version: '1.0.0', runtime: 'bun' });
    const a = app({ metrics });
    await a.request('/healthz');
    await a.request('/v1/pets');
    const res = await a.request('/metrics');
    expect([res.status, res.headers.get('content-type'), res.headers.get('cache-control')]).toEqual([
      200,
      'text/plain; version=0.0.4; charset=utf-8',
      'no-store',
    ]);
    const text = await res.text();
    expect(text).toContain('\npetstore_http_requests_total{operation="healthz",status="200"} 1\n');
    expect(text).toContain('\npetstore_http_requests_total{operation="listPets",status="401"} 1\n');
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
  });

  test('404 with the Error body without metrics, or when they have a port of their own', async () => {
    for (const a of [app({}), app({ metrics: new Metrics({ version: '1', runtime: 'bun' }), serveMetrics: false })]) {
      const res = await a.request('/metrics');
      expect([res.status, await res.json()]).toEqual([404, NOT_FOUND]);
    }
  });

  test('the separate listener serves /metrics and the Error body elsewhere', async () => {
    const m = metricsApp(new Metrics({ version: '1.0.0', runtime: 'bun' }));
    expect((await m.request('/metrics')).status).toBe(200);
    const other = await m.request('/v1/pets');
    expect([other.status, other.headers.get('content-type'), await other.json()]).toEqual([
      404,
      'application/json',
      NOT_FOUND,
    ]);
  });
});
