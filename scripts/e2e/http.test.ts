// What integrators' tools, browsers, proxies and caches expect of the binary.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { connect } from 'node:net';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { weakEtagOf } from '../../src/pipeline/etag.ts';
import { type Running, spawnServer, tokenOf, writeKeysFile } from '../../test/harness.ts';
import { send, upload } from './http-client.ts';

const KEY = `Bearer ${tokenOf('acme')}`;
const json = { Authorization: KEY, 'Content-Type': 'application/json' };
const APP = 'https://app.example';

async function createPets(port: number, count: number, prefix = 'Pet'): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const res = await send(port, 'POST', '/v1/pets', json, JSON.stringify({ name: `${prefix} ${i}`, categoryId: 1 }));
    expect(res.status).toBe(201);
    ids.push((JSON.parse(res.body.toString()) as { id: number }).id);
  }
  return ids;
}

describe('bodies over the limit', () => {
  let server: Running;
  beforeAll(async () => {
    server = await spawnServer({
      args: [
        '--keys',
        writeKeysFile([{ name: 'acme', plan: 'enterprise', limits: { perMinute: 1000, perDay: 100000 } }]),
      ],
    });
  });
  afterAll(async () => {
    await server.stop();
  });

  const head = `POST /v1/pets HTTP/1.1\r\nHost: petstore\r\nAuthorization: ${KEY}\r\nContent-Type: application/json\r\n`;
  test.each([
    ['100 KiB', 100 * 1024, false],
    ['100 KiB chunked', 100 * 1024, true],
    ['2 MiB', 2 * 1024 * 1024, false],
    ['2 MiB chunked', 2 * 1024 * 1024, true],
    ['64 MiB', 64 * 1024 * 1024, false],
    ['64 MiB chunked', 64 * 1024 * 1024, true],
  ])(
    '%s: the whole JSON 413 with rate-limit headers, then a normal POST is 201',
    async (_, bytes, chunked) => {
      const got = await upload(server.port, head, bytes, { chunked });
      const end = got.received.indexOf('\r\n\r\n');
      expect(got.received.slice(0, 12)).toBe('HTTP/1.1 413');
      const headers = got.received.slice(0, end).toLowerCase();
      expect(headers).toContain('content-type: application/json');
      expect(headers).toMatch(/\r\nx-ratelimit-remaining: \d+\r\n/);
      expect(headers).toMatch(/\r\nratelimit-policy: /);
      const body = got.received.slice(end + 4);
      expect(JSON.parse(body)).toEqual({
        code: 'payload_too_large',
        message: 'The request body is larger than 65536 bytes.',
        status: 413,
      });
      const next = await send(server.port, 'POST', '/v1/pets', json, '{"name":"Rex","categoryId":1}');
      expect(next.status).toBe(201);
    },
    60_000,
  );

  /**
   * Sends `head`, then `bytes` of chunked body in 64 KiB chunks, with its last chunk when `end`,
   * and then `after` once the first answer is in. Resolves with what came back, when the
   * connection closed, or 5 s after the last write.
   */
  const onDeno = (process.env.PETSTORE_CMD ?? '').includes('deno');
  async function chunked(bytes: number, end: boolean, after = ''): Promise<{ received: string; closed: boolean }> {
    const socket = connect(server.port, '127.0.0.1');
    let received = '';
    let closed = false;
    socket.on('data', (d: Buffer) => {
      received += d.toString('latin1');
    });
    socket.on('error', () => {});
    const gone = new Promise<void>((resolve) =>
      socket.on('close', () => {
        closed = true;
        resolve();
      }),
    );
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`${head}Transfer-Encoding: chunked\r\n\r\n`);
    const piece = Buffer.alloc(64 * 1024, 0x20);
    for (let sent = 0; sent < bytes && !closed; ) {
      const size = Math.min(piece.length, bytes - sent);
      sent += size;
      const wire = Buffer.concat([
        Buffer.from(`${size.toString(16)}\r\n`),
        piece.subarray(0, size),
        Buffer.from('\r\n'),
      ]);
      if (!socket.write(wire)) await new Promise((resolve) => socket.once('drain', resolve));
    }
    if (end) socket.write('0\r\n\r\n');
    const answered = async () => {
      while (!closed && !received.includes('}')) await Bun.sleep(10);
    };
    await Promise.race([answered(), Bun.sleep(5_000)]);
    if (after !== '' && !closed) socket.write(after);
    await Promise.race([gone, Bun.sleep(5_000)]);
    socket.destroy();
    return { received, closed };
  }

  test('a chunked body 4 MiB over the limit: 413, and the connection serves the next request', async () => {
    const next = `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: petstore\r\nAuthorization: ${KEY}\r\nConnection: close\r\n\r\n`;
    const got = await chunked(4 * 1024 * 1024, true, next);
    const answers = got.received.split(/(?=HTTP\/1\.1 )/).map((a) => a.slice(0, 12));
    expect(answers).toEqual(['HTTP/1.1 413', 'HTTP/1.1 200']);
    expect(got.received.toLowerCase().split('\r\n\r\n')[0]).not.toContain('connection: close');
  }, 60_000);

  test('a chunked body past 1 GiB that does not end: 413 with Connection: close, then the close', async () => {
    const got = await chunked(1024 * 1024 * 1024 + 64 * 1024 + 1, false);
    expect(got.received.slice(0, 12)).toBe('HTTP/1.1 413');
    expect(got.received.toLowerCase()).toContain('\r\nconnection: close\r\n');
    // Deno's server sends the 413 but keeps the connection while the client still owes the rest
    // of its chunked body (docs/operations.md, "Resource bounds"); Bun and Node close it.
    expect(got.closed).toBe(!onDeno);
  }, 120_000);
});

describe('HEAD, conditional GET and compression', () => {
  let server: Running;
  beforeAll(async () => {
    server = await spawnServer({ args: ['--keys', writeKeysFile([{ name: 'acme', plan: 'pro' }])] });
    await createPets(server.port, 25);
  });
  afterAll(async () => {
    await server.stop();
  });

  /** Headers whose values legitimately differ between two requests. */
  const VOLATILE = ['date', 'x-request-id', 'traceresponse', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit'];
  const stable = (h: Record<string, string>) =>
    Object.fromEntries(Object.entries(h).filter(([k]) => !VOLATILE.includes(k) && k !== 'keep-alive'));

  test.each(['/v1/pets', '/v1/pets/1', '/healthz', '/openapi.json', '/openapi.yaml', '/docs'])(
    'HEAD %s: the GET status and headers, Content-Length included, no body',
    async (path) => {
      for (const extra of [{}, { 'Accept-Encoding': 'br' }] as Record<string, string>[]) {
        const headers = { Authorization: KEY, ...extra };
        const get = await send(server.port, 'GET', path, headers);
        const head = await send(server.port, 'HEAD', path, headers);
        expect(head.status).toBe(get.status);
        expect(get.status).toBe(200);
        expect(head.body.length).toBe(0);
        expect(get.headers['content-length']).toBe(String(get.body.length));
        expect(stable(head.headers)).toEqual(stable(get.headers));
        // RFC 9110 section 6.6.1: an origin server with a clock sends Date, HEAD included.
        expect(Math.abs(Date.parse(head.headers.date ?? '') - Date.now())).toBeLessThan(60_000);
      }
    },
  );

  test('GET /v1/pets/{id} and /v1/pets: If-None-Match gives 304 that counts against the quota', async () => {
    for (const path of ['/v1/pets/1', '/v1/pets?limit=5']) {
      const first = await send(server.port, 'GET', path, { Authorization: KEY });
      const etag = first.headers.etag as string;
      // The tag this test's own process computes for the same page (body and next link): every
      // runtime, every instance alike. /v1/pets/1's Link is the deprecation's, not part of it.
      const link = first.headers.link as string | undefined;
      const body = first.body.toString();
      // A pet's tag is strong, from its id and version (a pet created once: version 1 or, on
      // PostgreSQL, the sequence's); a page's is weak, from its body and next link.
      if (path === '/v1/pets/1') expect(etag).toMatch(/^"1-[1-9][0-9]*"$/);
      else expect(etag).toBe(link?.includes('rel="next"') ? weakEtagOf(body, link) : weakEtagOf(body));
      const again = await send(server.port, 'GET', path, { Authorization: KEY, 'If-None-Match': etag });
      expect(again.status).toBe(304);
      expect(again.body.length).toBe(0);
      expect(again.headers.etag).toBe(etag);
      expect(Number(again.headers['x-ratelimit-remaining'])).toBe(Number(first.headers['x-ratelimit-remaining']) - 1);
      const other = await send(server.port, 'GET', path, { Authorization: KEY, 'If-None-Match': 'W/"other"' });
      expect(other.status).toBe(200);
    }
  });

  test("a new pet changes the list's ETag", async () => {
    const before = (await send(server.port, 'GET', '/v1/pets?limit=100', { Authorization: KEY })).headers.etag;
    await createPets(server.port, 1, 'Newcomer');
    const after = await send(server.port, 'GET', '/v1/pets?limit=100', {
      Authorization: KEY,
      'If-None-Match': before as string,
    });
    expect(after.status).toBe(200);
    expect(after.headers.etag).not.toBe(before);
  });

  test('the contract has ETags; the docs assets are immutable with a strong ETag', async () => {
    for (const path of ['/openapi.json', '/openapi.yaml']) {
      const first = await send(server.port, 'GET', path);
      expect(first.headers.etag).toMatch(/^(W\/)?"[A-Za-z0-9_-]+"$/);
      const again = await send(server.port, 'GET', path, { 'If-None-Match': first.headers.etag as string });
      expect([again.status, again.body.length]).toEqual([304, 0]);
    }
    const page = (await send(server.port, 'GET', '/docs')).body.toString();
    const assets = [...page.matchAll(/(?:src|href)="(\/docs\/assets\/[^"]+)"/g)].map((m) => m[1] as string);
    expect(assets.length).toBe(3);
    for (const asset of assets) {
      const res = await send(server.port, 'GET', asset, { 'Accept-Encoding': 'gzip' });
      expect(res.status).toBe(200);
      expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(res.headers.etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
      const again = await send(server.port, 'GET', asset, {
        'Accept-Encoding': 'gzip',
        'If-None-Match': res.headers.etag as string,
      });
      expect([again.status, again.body.length, again.headers.etag]).toEqual([304, 0, res.headers.etag]);
    }
  });

  test('JSON of 1 KiB or more is compressed (br, gzip) and decodes to the same bytes', async () => {
    const plain = await send(server.port, 'GET', '/v1/pets?limit=20', { Authorization: KEY });
    expect(plain.body.length).toBeGreaterThan(1024);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toContain('Accept-Encoding');
    const br = await send(server.port, 'GET', '/v1/pets?limit=20', { Authorization: KEY, 'Accept-Encoding': 'br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers.vary).toContain('Accept-Encoding');
    expect(brotliDecompressSync(br.body).toString()).toBe(plain.body.toString());
    const gz = await send(server.port, 'GET', '/v1/pets?limit=20', {
      Authorization: KEY,
      'Accept-Encoding': 'gzip, deflate',
    });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.body).toString()).toBe(plain.body.toString());
  });

  test('small answers and errors stay readable', async () => {
    const one = await send(server.port, 'GET', '/v1/pets/1', { Authorization: KEY, 'Accept-Encoding': 'br, gzip' });
    expect(one.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(one.body.toString()).id).toBe(1);
    const err = await send(server.port, 'GET', '/v1/pets', { 'Accept-Encoding': 'br, gzip' });
    expect(err.status).toBe(401);
    expect(err.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(err.body.toString()).code).toBe('unauthorized');
  });

  test('the docs bundle is served gzipped, to browsers that also take br alike', async () => {
    const page = (await send(server.port, 'GET', '/docs')).body.toString();
    const bundle = /src="(\/docs\/assets\/scalar\.[^"]+)"/.exec(page)?.[1] as string;
    const plain = await send(server.port, 'GET', bundle);
    const br = await send(server.port, 'GET', bundle, { 'Accept-Encoding': 'gzip, br' });
    const gz = await send(server.port, 'GET', bundle, { 'Accept-Encoding': 'gzip' });
    expect([br.headers['content-encoding'], gz.headers['content-encoding']]).toEqual(['gzip', 'gzip']);
    expect(gz.headers.vary).toContain('Accept-Encoding');
    expect(gunzipSync(gz.body).equals(plain.body)).toBe(true);
    expect(br.body.equals(gz.body)).toBe(true);
    expect(gz.headers.etag).not.toBe(plain.headers.etag);
  });
});

describe('CORS', () => {
  let server: Running;
  let plain: Running;
  const EXPOSED = [
    'X-RateLimit-Limit',
    'X-RateLimit-Remaining',
    'X-RateLimit-Reset',
    'RateLimit-Policy',
    'RateLimit',
    'Retry-After',
    'Link',
    'Location',
    'Deprecation',
    'Sunset',
    'ETag',
    'X-Request-Id',
  ];
  beforeAll(async () => {
    const keys = writeKeysFile([{ name: 'acme', plan: 'enterprise', limits: { perMinute: 3, perDay: 1000 } }]);
    server = await spawnServer({
      args: ['--keys', keys, '--cors-origin', APP, '--cors-origin', 'https://other.example'],
    });
    plain = await spawnServer({ args: ['--keys', keys] });
  });
  afterAll(async () => {
    await Promise.all([server.stop(), plain.stop()]);
  });

  const preflight = {
    Origin: APP,
    'Access-Control-Request-Method': 'POST',
    'Access-Control-Request-Headers': 'authorization, content-type, idempotency-key',
  };

  test('a preflight needs no key, is 204 and costs no quota of the key nor of the address', async () => {
    for (let i = 0; i < 10; i++) {
      const res = await send(server.port, 'OPTIONS', '/v1/pets', preflight);
      expect(res.status).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(APP);
      const methods = (res.headers['access-control-allow-methods'] ?? '').split(/, */);
      for (const m of ['GET', 'POST', 'HEAD', 'PATCH', 'DELETE']) expect(methods).toContain(m);
      const allowed = (res.headers['access-control-allow-headers'] ?? '').toLowerCase().split(/, */);
      for (const h of ['authorization', 'content-type', 'idempotency-key', 'if-match']) expect(allowed).toContain(h);
    }
    const keyed = await send(server.port, 'GET', '/v1/pets', { Origin: APP, Authorization: KEY });
    expect([keyed.status, keyed.headers['x-ratelimit-remaining']]).toEqual([200, '2']);
    const anonymous = await send(server.port, 'GET', '/v1/pets', { Origin: APP });
    expect([anonymous.status, anonymous.headers['x-ratelimit-remaining']]).toEqual([401, '59']);
    for (const res of [keyed, anonymous]) {
      expect(res.headers['access-control-allow-origin']).toBe(APP);
      expect(res.headers.vary).toContain('Origin');
      expect(res.headers['access-control-expose-headers']?.split(/, */)).toEqual(expect.arrayContaining(EXPOSED));
    }
  });

  test('a 429 carries the CORS headers; a disallowed origin gets none', async () => {
    let last = await send(server.port, 'GET', '/v1/pets', { Origin: APP, Authorization: KEY });
    for (let i = 0; i < 5 && last.status !== 429; i++) {
      last = await send(server.port, 'GET', '/v1/pets', { Origin: APP, Authorization: KEY });
    }
    expect(last.status).toBe(429);
    expect(last.headers['access-control-allow-origin']).toBe(APP);
    expect(last.headers['access-control-expose-headers']).toContain('Retry-After');
    const keyless = await send(server.port, 'GET', '/v1/pets', { Origin: 'https://evil.example', Authorization: KEY });
    const pre = await send(server.port, 'OPTIONS', '/v1/pets', { ...preflight, Origin: 'https://evil.example' });
    for (const res of [keyless, pre]) {
      expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    }
  });

  test('without --cors-origin no CORS headers at all; the contract and docs assets are public', async () => {
    const api = await send(plain.port, 'GET', '/v1/pets', { Origin: APP, Authorization: KEY });
    const pre = await send(plain.port, 'OPTIONS', '/v1/pets', preflight);
    for (const res of [api, pre]) {
      expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    }
    const page = (await send(plain.port, 'GET', '/docs')).body.toString();
    const assets = [...page.matchAll(/(?:src|href)="(\/docs\/assets\/[^"]+)"/g)].map((m) => m[1] as string);
    for (const path of ['/openapi.json', '/openapi.yaml', ...assets]) {
      const res = await send(plain.port, 'GET', path, { Origin: APP });
      expect(res.headers['access-control-allow-origin']).toBe('*');
    }
  });

  test('PETSTORE_CORS_ORIGINS takes a comma-separated list, * included', async () => {
    const keys = writeKeysFile([{ name: 'acme', plan: 'pro' }]);
    const star = await spawnServer({ args: ['--keys', keys], env: { PETSTORE_CORS_ORIGINS: 'https://a.example,*' } });
    try {
      const res = await send(star.port, 'GET', '/v1/pets', { Origin: 'https://any.example', Authorization: KEY });
      expect(res.headers['access-control-allow-origin']).toBeDefined();
      expect(res.headers['access-control-expose-headers']).toContain('X-RateLimit-Remaining');
    } finally {
      await star.stop();
    }
  });
});

describe('links behind a prefixing proxy', () => {
  let server: Running;
  let proxy: ReturnType<typeof Bun.serve>;
  beforeAll(async () => {
    server = await spawnServer({
      args: ['--keys', writeKeysFile([{ name: 'acme', plan: 'pro' }]), '--trust-proxy', '127.0.0.1/32'],
    });
    // Serves the API under /api, as an ingress with a path prefix does, and says so.
    proxy = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        const url = new URL(req.url);
        if (!url.pathname.startsWith('/api/')) return new Response('not here', { status: 404 });
        const headers = new Headers(req.headers);
        headers.set('X-Forwarded-Prefix', '/api');
        const upstream = await fetch(`${server.url}${url.pathname.slice(4)}${url.search}`, {
          method: req.method,
          headers,
          body: req.method === 'GET' || req.method === 'HEAD' ? undefined : await req.text(),
          redirect: 'manual',
          decompress: false,
        });
        return new Response(upstream.body, upstream);
      },
    });
  });
  afterAll(async () => {
    proxy.stop(true);
    await server.stop();
  });

  test.each([
    ['behind the proxy', () => `http://127.0.0.1:${proxy.port}/api`],
    ['directly', () => server.url],
  ])(
    '%s: Location gets the pet, next links give every pet once, in order, and the successor link works',
    async (_, base) => {
      const root = base();
      const ids: number[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${root}/v1/pets`, {
          method: 'POST',
          headers: json,
          body: JSON.stringify({ name: `Linked ${i}`, categoryId: 2 }),
        });
        expect(res.status).toBe(201);
        const pet = (await res.json()) as { id: number };
        ids.push(pet.id);
        const location = new URL(res.headers.get('location') as string, res.url);
        const fetched = await fetch(location, { headers: { Authorization: KEY } });
        expect([fetched.status, ((await fetched.json()) as { id: number }).id]).toEqual([200, pet.id]);
        const successor = /<([^>]+)>; rel="successor-version"/.exec(fetched.headers.get('link') ?? '')?.[1] as string;
        const list = await fetch(new URL(successor, fetched.url), { headers: { Authorization: KEY } });
        expect(list.status).toBe(200);
      }
      const seen: number[] = [];
      let next: URL | undefined = new URL(`${root}/v1/pets?limit=2`);
      while (next) {
        const res: Response = await fetch(next, { headers: { Authorization: KEY } });
        expect(res.status).toBe(200);
        seen.push(...((await res.json()) as { id: number }[]).map((p) => p.id));
        const link = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
        next = link === undefined ? undefined : new URL(link, res.url);
      }
      expect(seen.slice(-5)).toEqual(ids);
      expect(new Set(seen).size).toBe(seen.length);
      expect([...seen].sort((a, b) => a - b)).toEqual(seen);
    },
  );
});
