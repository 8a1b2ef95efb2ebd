import { describe, expect, test } from 'bun:test';
import { Hono, type MiddlewareHandler } from 'hono';
import type { AppEnv } from '../app-env.ts';
import { parseKeys } from '../keys/file.ts';
import { Metrics } from '../metrics/registry.ts';
import { requestCounter } from './count-requests.ts';

/** The counter's two steps around the rest, as the pipeline's outer step runs them. */
function counted(metrics: Metrics, now?: () => number): MiddlewareHandler<AppEnv> {
  const count = requestCounter(now ? { metrics, now } : { metrics });
  return async (c, next) => {
    const started = count.start();
    await next();
    count.finish(c, started, c.res.status);
  };
}

const lines = async (m: Metrics) => (await m.render()).split('\n');
const newMetrics = () => new Metrics({ version: '1.0.0', runtime: 'bun' });

describe('countRequests', () => {
  test('counts each request under its operation and status, timed by the injected clock', async () => {
    const metrics = newMetrics();
    let t = 1_000;
    const app = new Hono<AppEnv>();
    app.use(counted(metrics, () => t));
    app.get('/v1/pets', (c) => {
      c.set('operation', 'listPets');
      t += 30; // 0.03 s
      return c.json([]);
    });
    app.get('/v1/pets/:petId', (c) => {
      c.set('operation', 'getPet');
      throw new Error('boom');
    });
    app.onError((_, c) => c.json({ code: 'internal_error' }, 500));

    expect((await app.request('/v1/pets')).status).toBe(200);
    expect((await app.request('/v1/pets/1')).status).toBe(500);
    expect((await app.request('/nowhere')).status).toBe(404);

    const out = await lines(metrics);
    for (const line of [
      'petstore_http_requests_total{operation="listPets",status="200"} 1',
      'petstore_http_requests_total{operation="getPet",status="500"} 1',
      'petstore_http_requests_total{operation="other",status="404"} 1',
      'petstore_http_request_duration_seconds_bucket{le="0.025",operation="listPets"} 0',
      'petstore_http_request_duration_seconds_bucket{le="0.05",operation="listPets"} 1',
      'petstore_http_request_duration_seconds_sum{operation="listPets"} 0.03',
      'petstore_http_requests_in_flight 0',
    ]) {
      expect(out).toContain(line);
    }
  });
});

describe('countRequests and 429s', () => {
  test("counts each 429 by the caller's plan (anonymous without a key) and its Error code", async () => {
    const metrics = newMetrics();
    const [key] = parseKeys(JSON.stringify({ keys: [{ name: 'acme', sha256: 'a'.repeat(64), plan: 'business' }] }));
    const app = new Hono<AppEnv>();
    app.use(counted(metrics));
    app.get('/v1/pets', (c) => {
      c.set('operation', 'listPets');
      const code = c.req.query('code') as 'rate_limited' | 'key_banned' | 'too_many_concurrent_requests';
      if (c.req.query('key') && key) c.set('caller', { kind: 'consumer', consumer: key.consumer, key });
      else c.set('caller', { kind: 'keyless', address: '192.0.2.1', credential: 'none' });
      // As step 3 records the gateway's refusal before answering it.
      c.set('refusal', code);
      return c.json({}, 429);
    });
    for (const q of [
      'code=rate_limited&key=1',
      'code=rate_limited&key=1',
      'code=key_banned&key=1',
      'code=too_many_concurrent_requests&key=1',
      'code=rate_limited',
    ]) {
      expect((await app.request(`/v1/pets?${q}`)).status).toBe(429);
    }
    const out = await lines(metrics);
    for (const line of [
      'petstore_rate_limited_total{plan="business",reason="rate_limited"} 2',
      'petstore_rate_limited_total{plan="business",reason="key_banned"} 1',
      'petstore_rate_limited_total{plan="business",reason="too_many_concurrent_requests"} 1',
      'petstore_rate_limited_total{plan="anonymous",reason="rate_limited"} 1',
      'petstore_rate_limited_total{plan="anonymous",reason="key_banned"} 0',
      'petstore_http_requests_total{operation="listPets",status="429"} 5',
    ]) {
      expect(out).toContain(line);
    }
  });
});
