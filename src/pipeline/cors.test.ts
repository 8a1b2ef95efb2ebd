import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { fakeClock, tokenFor } from '../../test/testing.ts';
import { createApp } from '../app.ts';
import { ConfigError, parseConfig } from '../config.ts';
import { SlidingWindowLimiter } from '../gateway/gateway.ts';
import { parseKeys } from '../keys/file.ts';
import { hashToken } from '../keys/records.ts';
import { KeyTable } from '../keys/table.ts';
import { MemoryStore } from '../store/memory-store.ts';
import { ALLOW_HEADERS, ALLOW_METHODS, EXPOSED_HEADERS } from './cors.ts';

const APP = 'https://app.example';

function corsApp(corsOrigins: string[]) {
  const clock = fakeClock();
  const keys = [{ name: 'acme', plan: 'enterprise', limits: { perMinute: 2, perDay: 100 } }];
  const table = new KeyTable(
    parseKeys(
      JSON.stringify({ keys: keys.map((k) => ({ ...k, sha256: hashToken(tokenFor(k.name)).toString('hex') })) }),
    ),
  );
  const limiter = new SlidingWindowLimiter({ clock });
  return createApp({
    store: new MemoryStore(),
    keyTable: () => table,
    limiter,
    clock,
    clientAddress: () => '192.0.2.1',
    corsOrigins,
  });
}

const auth = { Authorization: `Bearer ${tokenFor('acme')}` };
const preflight = {
  Origin: APP,
  'Access-Control-Request-Method': 'POST',
  'Access-Control-Request-Headers': 'Authorization, Content-Type',
};
const corsHeaders = (res: Response) => [...res.headers.keys()].filter((k) => k.startsWith('access-control-'));

describe('addCorsHeaders and answerPreflight', () => {
  test('a preflight from an allowed origin is 204, before the gateway: no key, no quota', async () => {
    const app = corsApp([APP]);
    for (let i = 0; i < 5; i++) {
      const res = await app.request('/v1/pets', { method: 'OPTIONS', headers: preflight });
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe(APP);
      expect(res.headers.get('access-control-allow-methods')).toBe('GET,HEAD,POST,PATCH,DELETE');
      expect(res.headers.get('access-control-allow-headers')).toBe(
        'Authorization,Content-Type,Idempotency-Key,If-Match,If-None-Match,traceparent,tracestate',
      );
      expect(res.headers.get('x-ratelimit-remaining')).toBeNull();
    }
    const first = await app.request('/v1/pets', { headers: { ...auth, Origin: APP } });
    expect([first.status, first.headers.get('x-ratelimit-remaining')]).toEqual([200, '1']);
  });

  test('401 and 429 to an allowed origin carry the CORS headers', async () => {
    const app = corsApp(['https://other.example', APP]);
    const anonymous = await app.request('/v1/pets', { headers: { Origin: APP } });
    expect(anonymous.status).toBe(401);
    await app.request('/v1/pets', { headers: { ...auth, Origin: APP } });
    await app.request('/v1/pets', { headers: { ...auth, Origin: APP } });
    const limited = await app.request('/v1/pets', { headers: { ...auth, Origin: APP } });
    expect(limited.status).toBe(429);
    for (const res of [anonymous, limited]) {
      expect(res.headers.get('access-control-allow-origin')).toBe(APP);
      expect(res.headers.get('access-control-expose-headers')).toBe(EXPOSED_HEADERS.join(','));
      expect(res.headers.get('vary')).toContain('Origin');
    }
  });

  test('another origin gets no CORS headers, its preflight neither; * allows any origin', async () => {
    const app = corsApp([APP]);
    const other = await app.request('/v1/pets', { headers: { ...auth, Origin: 'https://evil.example' } });
    const otherPreflight = await app.request('/v1/pets', {
      method: 'OPTIONS',
      headers: { ...preflight, Origin: 'https://evil.example' },
    });
    expect([other.status, corsHeaders(other), other.headers.get('vary')]).toEqual([200, [], 'Origin, Accept-Encoding']);
    expect([otherPreflight.status, corsHeaders(otherPreflight)]).toEqual([204, []]);
    const any = await corsApp(['*']).request('/v1/pets', { headers: { ...auth, Origin: 'https://evil.example' } });
    expect(any.headers.get('access-control-allow-origin')).toBe('https://evil.example');
  });

  test('without origins, no CORS at all: OPTIONS goes to the gateway like any method', async () => {
    const app = corsApp([]);
    const res = await app.request('/v1/pets', { method: 'OPTIONS', headers: preflight });
    expect([res.status, corsHeaders(res)]).toEqual([401, []]);
  });
});

describe('--cors-origin and PETSTORE_CORS_ORIGINS', () => {
  test('repeatable, comma separated, * allowed; anything but an origin refused', () => {
    expect(parseConfig(['--cors-origin', APP, '--cors-origin', 'http://localhost:3000'], {}).corsOrigins).toEqual([
      APP,
      'http://localhost:3000',
    ]);
    expect(parseConfig([], { PETSTORE_CORS_ORIGINS: `${APP},*` }).corsOrigins).toEqual([APP, '*']);
    expect(parseConfig([], {}).corsOrigins).toEqual([]);
    for (const bad of ['app.example', 'https://app.example/', 'https://app.example/path', 'ftp://x.example']) {
      expect(() => parseConfig(['--cors-origin', bad], {})).toThrow(ConfigError);
    }
  });
});

describe('what a preflight allows, held to contract/openapi.yaml', () => {
  interface Parameter {
    name: string;
    in: string;
  }
  interface ResponseObject {
    headers?: Record<string, unknown>;
  }
  const contract = YAML.parse(readFileSync(join(import.meta.dir, '../../contract/openapi.yaml'), 'utf8')) as {
    paths: Record<
      string,
      Record<string, { parameters?: (Parameter | { $ref: string })[]; responses?: Record<string, ResponseObject> }>
    >;
    components: { parameters?: Record<string, Parameter>; responses?: Record<string, ResponseObject> };
  };
  const operations = Object.values(contract.paths).flatMap((methods) => Object.entries(methods));

  test("the methods are the contract's, with HEAD beside GET", () => {
    const methods = new Set(operations.map(([method]) => method.toUpperCase()));
    if (methods.has('GET')) methods.add('HEAD');
    expect(new Set(ALLOW_METHODS.split(','))).toEqual(methods);
  });

  test("every header parameter of the contract's operations may be sent", () => {
    const byRef = (ref: string) => contract.components.parameters?.[ref.replace('#/components/parameters/', '')];
    const headers = operations
      .flatMap(([, op]) => op.parameters ?? [])
      .map((p) => ('$ref' in p ? byRef(p.$ref) : p))
      .filter((p): p is Parameter => p?.in === 'header')
      .map((p) => p.name);
    expect(headers.length).toBeGreaterThan(1);
    expect(headers.filter((name) => !ALLOW_HEADERS.split(',').includes(name))).toEqual([]);
  });

  test("the exposed headers are the contract's response headers, and the two every answer carries", () => {
    // A `$ref` response is one of components.responses, so reading both finds every header.
    const responses = [
      ...operations.flatMap(([, op]) => Object.values(op.responses ?? {})),
      ...Object.values(contract.components.responses ?? {}),
    ];
    const documented = new Set(responses.flatMap((r) => Object.keys(r.headers ?? {})));
    expect(documented.has('Accept-Patch')).toBe(true);
    expect(new Set<string>(EXPOSED_HEADERS)).toEqual(new Set([...documented, 'X-Request-Id', 'traceresponse']));
  });
});
