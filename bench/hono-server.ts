/**
 * The peer a Hono team would write in an afternoon: Hono on Bun with `hono/bearer-auth` and
 * `hono-rate-limiter` (its default memory store), replaying the product's captured response the
 * way `express-server.mjs` does. Keys are checked like the product and the Express peer do
 * (SHA-256 of the token, constant-time compare); callers without a valid key are limited per
 * client address (the last X-Forwarded-For entry: every request comes from loopback, which the
 * product's `--trust-proxy 127.0.0.1` also believes).
 *
 * Usage: bun bench/hono-server.ts CONFIG.json   (prints {"port":N} once listening)
 *   CONFIG: {"response":{status,headers,body},"keys":[{"name","sha256","perMinute"}]}
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Hono } from 'hono';
import { bearerAuth } from 'hono/bearer-auth';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { rateLimiter } from 'hono-rate-limiter';
import { parseCaptured } from './lib/captured.ts';

const ANONYMOUS_PER_MINUTE = 60;
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

interface Key {
  readonly name: string;
  readonly perMinute: number;
  readonly hash: Buffer;
}

const file = process.argv[2];
if (!file) throw new TypeError('usage: bun bench/hono-server.ts CONFIG.json');
const config: unknown = JSON.parse(readFileSync(file, 'utf8'));
if (typeof config !== 'object' || config === null || !('response' in config) || !('keys' in config)) {
  throw new TypeError('config: expected {response, keys}');
}
const response = parseCaptured(JSON.stringify(config.response));
const body = Buffer.from(response.body, 'utf8');
const keys = new Map<string, Key>();
for (const k of Array.isArray(config.keys) ? config.keys : []) {
  const { name, sha256, perMinute } = k as Record<string, unknown>;
  if (typeof name !== 'string' || typeof sha256 !== 'string' || typeof perMinute !== 'number') {
    throw new TypeError('config: a key needs name, sha256, perMinute');
  }
  keys.set(sha256, { name, perMinute, hash: Buffer.from(sha256, 'hex') });
}

function lookup(header: string | undefined): Key | undefined {
  const token = header && header.length <= 1024 ? BEARER.exec(header)?.[1] : undefined;
  if (token === undefined) return undefined;
  const digest = createHash('sha256').update(token).digest();
  const key = keys.get(digest.toString('hex'));
  return key && timingSafeEqual(key.hash, digest) ? key : undefined;
}

type Env = { Variables: { apiKey: Key | undefined } };
const app = new Hono<Env>();
app.use(async (c, next) => {
  c.set('apiKey', lookup(c.req.header('authorization')));
  await next();
});
app.use(
  rateLimiter<Env>({
    windowMs: 60_000,
    limit: (c) => c.get('apiKey')?.perMinute ?? ANONYMOUS_PER_MINUTE,
    standardHeaders: 'draft-7',
    keyGenerator: (c) => {
      const key = c.get('apiKey');
      if (key) return `key:${key.name}`;
      const forwarded = c.req.header('x-forwarded-for');
      return `addr:${forwarded?.split(',').at(-1)?.trim() ?? 'loopback'}`;
    },
    message: { code: 'rate_limited', message: 'Rate limit exceeded.', status: 429 },
  }),
);
app.use(
  bearerAuth<Env>({
    realm: 'petstore',
    verifyToken: (_token, c) => c.get('apiKey') !== undefined,
    invalidToken: {
      message: { code: 'unauthorized', message: 'The API key is malformed or unknown.', status: 401 },
    },
  }),
);
app.all('*', (c) => c.body(body, response.status as ContentfulStatusCode, response.headers));

const server = Bun.serve({ port: 0, hostname: '127.0.0.1', development: false, fetch: app.fetch });
process.stdout.write(`${JSON.stringify({ port: server.port })}\n`);
