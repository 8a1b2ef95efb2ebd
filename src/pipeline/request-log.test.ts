import { describe, expect, test } from 'bun:test';
import { Hono } from 'hono';
import { fakeClock } from '../../test/testing.ts';
import { defineOperation } from '../api/operation-types.ts';
import type { AppEnv } from '../app-env.ts';
import { ApiError } from '../core/api-error.ts';
import type { Decision } from '../core/decision.ts';
import type { ServiceRoute } from '../core/service-route.ts';
import type { AdmissionCheck } from '../gateway/gateway.ts';
import { parseKeys } from '../keys/file.ts';
import { createLogger } from '../log.ts';
import { tableRouteHandlers } from './pipeline.ts';

const [acme] = parseKeys(JSON.stringify({ keys: [{ name: 'acme', sha256: 'a'.repeat(64), plan: 'pro' }] }));

/**
 * An API pipeline whose gateway admits a request with a key as acme's and refuses one without,
 * serving one operation whose handler takes 12 ms, and `/healthz`.
 */
function setup() {
  const lines: string[] = [];
  const clock = fakeClock();
  const log = createLogger({ write: (l) => lines.push(l), now: clock.now });
  const admissionCheck: AdmissionCheck = async (c, _op, serveAdmitted) => {
    if (c.req.header('authorization')) {
      const key = acme as NonNullable<typeof acme>;
      const caller = { kind: 'consumer', consumer: key.consumer, key } as const;
      c.set('caller', caller);
      return serveAdmitted({} as Decision, caller);
    }
    c.set('caller', { kind: 'keyless', address: '203.0.113.5', credential: 'none' });
    return new ApiError('unauthorized', 'no key');
  };
  const handlers = tableRouteHandlers({
    log,
    clock,
    newId: () => 'fresh-id',
    clientAddress: () => '198.51.100.9',
    maxBodyBytes: 1024,
    admissionCheck,
    deps: {},
    allowedMethods: () => undefined,
  });
  const getPet = defineOperation({
    id: 'getPet',
    method: 'GET',
    path: '/pets/:petId',
    weakEtag: false,
    memo: false,
    waitsForDueOrderExpiry: false,
    handler: async () => {
      clock.advance(12);
      return { status: 200, body: '{}', type: 'application/json' };
    },
  });
  const healthz: ServiceRoute = {
    id: 'healthz',
    method: 'GET',
    path: '/healthz',
    handler: () => ({ status: 200, body: '{"status":"ok"}', type: 'application/json' }),
  };
  const app = new Hono<AppEnv>();
  app.get('/v1/pets/:petId', handlers.handlerFor(getPet));
  app.get(healthz.path, handlers.serviceRoute(healthz));
  return { app, lines, json: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('requestLog', () => {
  test('one line per request: time, id, method, route pattern, status, duration and the key name', async () => {
    const t = setup();
    const res = await t.app.request('/v1/pets/42', {
      headers: {
        'X-Request-Id': 'abc-123',
        Authorization: 'Bearer psk_secret',
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      },
    });
    expect(res.headers.get('x-request-id')).toBe('abc-123');
    // The caller's trace is continued; without an exporter nothing is sampled, and the span id is
    // the request's own.
    const spanId = /^00-4bf92f3577b34da6a3ce929d0e0e4736-([0-9a-f]{16})-00$/.exec(
      res.headers.get('traceresponse') ?? '',
    )?.[1];
    expect(spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(spanId).not.toBe('00f067aa0ba902b7');
    expect(t.lines).toEqual([
      '{"time":"2026-11-22T12:00:00.012Z","level":"info","msg":"request","requestId":"abc-123",' +
        `"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"${spanId}","method":"GET",` +
        '"route":"/v1/pets/:petId","status":200,"durationMs":12,"consumer":"acme","key":"acme"}',
    ]);
  });

  test.each([
    ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7', 'no flags'],
    ['00-00000000000000000000000000000000-00f067aa0ba902b7-01', 'an all-zero trace id'],
    ['00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', 'an all-zero parent id'],
    ['ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'version ff'],
    ['00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01', 'upper-case hex'],
    ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x', 'version 00 with more'],
  ])('a malformed traceparent (%s: %s) starts a new trace and the request is answered', async (traceparent) => {
    const t = setup();
    const res = await t.app.request('/v1/pets/42', { headers: { Authorization: 'Bearer psk_secret', traceparent } });
    expect(res.status).toBe(200);
    const [, traceId, spanId] =
      /^00-([0-9a-f]{32})-([0-9a-f]{16})-00$/.exec(res.headers.get('traceresponse') ?? '') ?? [];
    expect(traceId).not.toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(t.json()[0]).toMatchObject({ traceId, spanId });
  });

  test.each([
    ['', 'empty'],
    ['has space', 'a space'],
    ['x'.repeat(65), '65 characters'],
    ['a\tb', 'a tab'],
    ['Bearer psk_secret', 'a bearer token'],
    ['psk_3q2-7wAbCdEfGhIjKlMnOpQrStUvWxYz0123456789', 'a bare API token'],
    ['x.psk_3q2-7wAbCdEfGhIjKlMnOpQrStUvWxYz0123456789', 'a token after a prefix'],
    ['trace:PSK_abc', 'a token prefix in capitals'],
    ['<script>', 'markup'],
    ['id\u00e9', 'a non-ASCII letter'],
  ])('a request id with %s (%s) is replaced, and the new one echoed', async (given) => {
    const t = setup();
    const res = await t.app.request('/healthz', { headers: { 'X-Request-Id': given } });
    expect(res.headers.get('x-request-id')).toBe('fresh-id');
    expect(t.json()[0]?.requestId).toBe('fresh-id');
  });

  test('a 64-character id of letters, digits and ._:- is kept', async () => {
    const t = setup();
    const id = `a.b_c:d-${'9'.repeat(56)}`;
    expect((await t.app.request('/healthz', { headers: { 'X-Request-Id': id } })).headers.get('x-request-id')).toBe(id);
  });

  test('without a key: the address the gateway counted, or else the client address', async () => {
    const t = setup();
    await t.app.request('/v1/pets/1');
    await t.app.request('/healthz');
    expect(t.json().map((l) => [l.status, l.client, 'key' in l])).toEqual([
      [401, '203.0.113.5', false],
      [200, '198.51.100.9', false],
    ]);
  });

  test('the bearer token never reaches the log', async () => {
    const t = setup();
    await t.app.request('/v1/pets/1', { headers: { Authorization: 'Bearer psk_secret' } });
    expect(t.lines.join('\n')).not.toContain('psk_secret');
  });
});
