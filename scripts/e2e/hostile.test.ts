// Hostile HTTP written by hand over node:net against the server PETSTORE_CMD starts (the
// binary by default): broken request lines, oversized headers and URLs, invalid UTF-8, NUL
// bytes, deep JSON, duplicate parameters, request smuggling shapes and slow-loris clients.
// Every answer must be a 4xx (the app's Error body wherever the request reaches the app), never
// a 5xx from the app, a crash or a hang, and the server must still answer /healthz afterwards.
//
// What the runtime answers before the app runs is its own (empty or plain-text bodies). The
// exceptions to "4xx" are the runtime's and are listed in docs/operations.md "Resource bounds": Bun answers 505
// to a request line whose version it cannot read (oven-sh/bun#19326), and closes the
// connection without an answer on an unknown method.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { connect } from 'node:net';
import { type Running, spawnServer, tokenOf, writeKeysFile } from '../../test/harness.ts';

const KEY = `Authorization: Bearer ${tokenOf('hostile')}\r\n`;
const CLOSED = 'closed without an answer';
/** A stack frame, a source or install path: what an error body must never show. */
const INTERNALS = /^\s*at .+:\d+|\/work\/|\/tmp\/|\/home\/|node_modules|\.[cm]?[jt]s:\d+/m;

interface Exchange {
  /** Status of the first response; undefined when the server closed without one. */
  readonly status: number | undefined;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly ms: number;
}

/**
 * Writes `bytes` on a fresh connection and resolves with the first response once it is whole
 * (by Content-Length), or when the server closes; rejects if neither happens in `timeoutMs`.
 */
function exchange(port: number, bytes: string | Buffer, timeoutMs = 5_000): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let got = Buffer.alloc(0);
    const done = (result: Exchange | Error) => {
      clearTimeout(timer);
      socket.destroy();
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    const timer = setTimeout(() => done(new Error(`hang: no answer and no close in ${timeoutMs} ms`)), timeoutMs);
    const parse = (closed: boolean) => {
      const text = got.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) {
        if (closed) done({ status: undefined, headers: {}, body: text, ms: Date.now() - started });
        return;
      }
      const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const body = got.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'));
      const length = Number(headers['content-length'] ?? Number.NaN);
      if (closed || body.length >= length) {
        done({
          status: Number(statusLine.split(' ')[1]),
          headers,
          body: body.toString('utf8'),
          ms: Date.now() - started,
        });
      }
    };
    socket.on('data', (chunk) => {
      got = Buffer.concat([got, Buffer.from(chunk)]);
      parse(false);
    });
    socket.on('close', () => parse(true));
    socket.on('error', () => {});
    socket.write(bytes);
  });
}

const post = (body: string | Buffer, extra = '') => {
  const head = `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${KEY}Content-Type: application/json\r\n${extra}`;
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  return Buffer.concat([Buffer.from(`${head}Content-Length: ${bytes.length}\r\n\r\n`), bytes]);
};
const get = (target: string, headers = '') => `GET ${target} HTTP/1.1\r\nHost: x\r\n${KEY}${headers}\r\n`;

/** Where the request reaches the app, the Error body with this code is required. */
type Expected = { status: number[]; code?: string } | typeof CLOSED;

/** [what, bytes, expected on bun, expected elsewhere when different]. */
const CASES: Array<[string, string | Buffer, Expected, Expected?]> = [
  // The request line.
  ['a request line that is not HTTP', 'HELLO\r\n\r\n', { status: [400] }],
  ['a method with a character a token cannot have', 'G@T /healthz HTTP/1.1\r\nHost: x\r\n\r\n', { status: [400] }],
  ['HTTP/1.1 without Host', 'GET /healthz HTTP/1.1\r\n\r\n', { status: [400] }],
  [
    'an HTTP version that does not exist',
    'GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n',
    { status: [505] },
    { status: [400, 505] },
  ],
  // Node reads it as HTTP/0.9 and serves it.
  ['no HTTP version', 'GET /healthz\r\nHost: x\r\n\r\n', { status: [505] }, { status: [200, 400] }],
  ['a NUL byte in the target', get('/v1/pets\0x'), { status: [505] }, { status: [400] }],
  [
    'a 10,000-character method',
    `${'A'.repeat(10_000)} /healthz HTTP/1.1\r\nHost: x\r\n\r\n`,
    CLOSED,
    // Node refuses it; Deno routes it (to a 404).
    { status: [400, 404, 431] },
  ],
  ['an unknown method', 'FOO /healthz HTTP/1.1\r\nHost: x\r\n\r\n', CLOSED, { status: [400, 404, 405, 501] }],
  ['a lower-case method', 'get /healthz HTTP/1.1\r\nHost: x\r\n\r\n', CLOSED, { status: [400, 404, 405, 501] }],
  // Headers.
  ['a 20 KiB header', get('/v1/pets', `X-Big: ${'a'.repeat(20_000)}\r\n`), { status: [431] }],
  // Bun takes at most 100 headers; Node 2,000 (these 5 KB are within its 16 KiB); Deno says 400.
  [
    '500 headers',
    get('/v1/pets', Array.from({ length: 500 }, (_, i) => `X-H${i}: v\r\n`).join('')),
    { status: [431] },
    { status: [200, 400, 431] },
  ],
  ['a NUL byte in a header value', get('/v1/pets', 'X-A: a\0b\r\n'), { status: [400] }],
  ['a control character in a header value', get('/v1/pets', 'X-A: a\x01b\r\n'), { status: [400] }],
  ['a bare CR in a header value', get('/v1/pets', 'X-A: a\rb\r\n'), { status: [400] }],
  ['a space in a header name', get('/v1/pets', 'Bad Header: x\r\n'), { status: [400] }],
  [
    'an 8 KiB bearer token',
    get('/v1/pets', '').replace(KEY, `Authorization: Bearer psk_${'a'.repeat(8_000)}\r\n`),
    { status: [401], code: 'unauthorized' },
  ],
  // URLs.
  ['a 9 KiB URL', get(`/v1/pets?pad=${'a'.repeat(9_000)}`), { status: [414], code: 'uri_too_long' }],
  ['a 20 KiB URL', get(`/v1/pets?pad=${'a'.repeat(20_000)}`), { status: [431] }, { status: [414, 431] }],
  ['a 100 KiB URL', get(`/v1/pets?pad=${'a'.repeat(100_000)}`), { status: [431] }],
  [
    'bytes that are not UTF-8 in the path',
    Buffer.concat([
      Buffer.from('GET /v1/pets/'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from(` HTTP/1.1\r\nHost: x\r\n${KEY}\r\n`),
    ]),
    { status: [400], code: 'invalid_request' },
    // @hono/node-server cannot build a URL of them and answers a bare 400 itself.
    { status: [400] },
  ],
  ['percent-encoded bytes that are not UTF-8', get('/v1/pets/%ff%fe'), { status: [400], code: 'invalid_request' }],
  ['a broken percent escape', get('/v1/pets?status=%zz'), { status: [400], code: 'invalid_request' }],
  [
    'duplicate query parameters',
    get('/v1/pets?limit=1&limit=2&status=sold&status=pending'),
    { status: [400], code: 'invalid_request' },
  ],
  ['a path that climbs out of /v1', get('/v1/../../etc/passwd'), { status: [404], code: 'not_found' }],
  // Bodies.
  [
    'JSON nested 30,000 arrays deep',
    post('['.repeat(30_000) + ']'.repeat(30_000)),
    { status: [400], code: 'invalid_request' },
  ],
  [
    'JSON nested 10,000 objects deep',
    post(`${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`),
    { status: [400], code: 'invalid_request' },
  ],
  [
    'bytes that are not UTF-8 in the body',
    post(Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('","categoryId":1}')])),
    { status: [400], code: 'invalid_request' },
  ],
  [
    'an unpaired surrogate escape in the body',
    post('{"name":"\\ud800","categoryId":1}'),
    { status: [400], code: 'invalid_request' },
  ],
  [
    'a raw NUL byte in a JSON string',
    post('{"name":"a\0b","categoryId":1}'),
    { status: [400], code: 'invalid_request' },
  ],
  ['malformed JSON', post('{"name":'), { status: [400], code: 'invalid_request' }],
  [
    '__proto__ in the body',
    post('{"__proto__":{"admin":true},"name":"a","categoryId":1}'),
    { status: [400], code: 'invalid_request' },
  ],
  [
    'a body over 64 KiB',
    post(JSON.stringify({ name: 'x'.repeat(70_000), categoryId: 1 })),
    { status: [413], code: 'payload_too_large' },
  ],
  [
    'a chunked body over 64 KiB',
    `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${KEY}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${(200_000).toString(16)}\r\n${'a'.repeat(200_000)}\r\n0\r\n\r\n`,
    { status: [413], code: 'payload_too_large' },
  ],
  [
    'a declared body of 100 GB',
    `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${KEY}Content-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n{}`,
    { status: [413] },
  ],
  // Framing that request smuggling relies on.
  [
    'a Content-Length that is not a number',
    `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${KEY}Content-Length: abc\r\n\r\n{}`,
    { status: [400] },
  ],
  [
    'two different Content-Lengths',
    `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${KEY}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`,
    { status: [400] },
  ],
  [
    'Content-Length with Transfer-Encoding',
    `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${KEY}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    { status: [400] },
  ],
  [
    'a chunk size that is not hex',
    `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${KEY}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
    { status: [400] },
  ],
];

let server: Running;
let runtime: string;
beforeAll(async () => {
  const keys = writeKeysFile([{ name: 'hostile', plan: 'enterprise', limits: { perMinute: 1e6, perDay: 1e9 } }]);
  server = await spawnServer({ args: ['--keys', keys] });
  runtime = String(JSON.parse(server.lines.find((l) => l.includes('"listening"')) ?? '{}').runtime);
});
afterAll(async () => {
  await server.stop();
});

describe('malformed requests get a 4xx, never a 5xx from the app, a crash or a hang', () => {
  // A rest parameter: with four named ones, bun:test would take the last for a `done` callback.
  test.each(CASES)('%s', async (...[, bytes, onBun, elsewhere]) => {
    const expected = runtime === 'bun' ? onBun : (elsewhere ?? onBun);
    const res = await exchange(server.port, bytes);
    if (runtime !== 'bun' && elsewhere === undefined && (expected === CLOSED || !expected.code)) {
      // What Node's and Deno's HTTP parsers do before the app runs differs in detail (Deno takes
      // 20 KiB headers and HTTP/1.1 without Host, closes on a bad chunk size): any answer but a
      // server error, or a close, and never a hang (exchange() rejects on one).
      expect(res.status === undefined || (res.status as number) < 500 || res.status === 505).toBe(true);
      expect(res.body).not.toMatch(INTERNALS);
      return;
    }
    if (expected === CLOSED) {
      expect(res.status).toBeUndefined();
      return;
    }
    expect(expected.status).toContain(res.status as number);
    // Whatever answered, nothing internal is shown.
    expect(res.body).not.toMatch(INTERNALS);
    if (expected.code) {
      expect(res.headers['content-type']).toBe('application/json');
      const body = JSON.parse(res.body) as { code: string; status: number; message: string };
      expect([body.code, body.status]).toEqual([expected.code, res.status as number]);
    }
  });

  test('the server still answers, and logged no error and no 5xx', async () => {
    const res = await exchange(server.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(res.status).toBe(200);
    expect(server.child.exitCode).toBeNull();
    const logs = server.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logs.filter((l) => l.level === 'error' || Number(l.status) >= 500)).toEqual([]);
  });

  test('HTTP/1.0 without Host, as old health checkers send it, reaches the routes', async () => {
    expect((await exchange(server.port, 'GET /healthz HTTP/1.0\r\n\r\n')).status).toBe(200);
    const res = await exchange(server.port, 'GET /v1/pets HTTP/1.0\r\n\r\n');
    expect(res.status).toBe(401);
    expect(res.headers['x-ratelimit-limit']).toBe('60');
  });
});

describe('slow-loris clients are cut off; the server keeps serving meanwhile', () => {
  /** Opens a connection that sends `opening`, then `drip` every `everyMs`; resolves with how long the server kept it. */
  function dribble(opening: string, drip: string, everyMs: number, limitMs: number): Promise<number> {
    return new Promise((resolve) => {
      const started = Date.now();
      const socket = connect(server.port, '127.0.0.1');
      const tick = setInterval(() => socket.write(drip), everyMs);
      const end = (ms: number) => {
        clearInterval(tick);
        clearTimeout(limit);
        socket.destroy();
        resolve(ms);
      };
      const limit = setTimeout(() => end(Number.POSITIVE_INFINITY), limitMs);
      socket.on('close', () => end(Date.now() - started));
      socket.on('error', () => {});
      socket.write(opening);
    });
  }

  test('silent, header-dripping and body-dripping connections are all closed', async () => {
    if (runtime === 'deno') {
      // Deno.serve has no header, request or idle timeout to set (docs/operations.md, "Resource bounds"): run
      // it behind a proxy that has them.
      process.stdout.write('skip: Deno.serve cannot time out slow clients\n');
      return;
    }
    // Bun: ~10-12 s (idle timeout; its timer ignores trickles). Node: 10 s for headers, 30 s
    // for the whole request.
    const limitMs = runtime === 'bun' ? 20_000 : 40_000;
    const body = `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${KEY}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n`;
    const headers = 'GET /healthz HTTP/1.1\r\nHost: x\r\n';
    const held = Promise.all([
      dribble('', '', 60_000, limitMs),
      ...Array.from({ length: 100 }, () => dribble(headers, 'X-A: b\r\n', 1_000, limitMs)),
      ...Array.from({ length: 100 }, () => dribble(body, 'a', 1_000, limitMs)),
    ]);
    await Bun.sleep(1_000);
    const during = await exchange(server.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(during.status).toBe(200);
    expect(during.ms).toBeLessThan(1_000);
    const kept = await held;
    expect(Math.max(...kept)).toBeLessThan(limitMs);
    expect((await exchange(server.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')).status).toBe(200);
  }, 60_000);
});
