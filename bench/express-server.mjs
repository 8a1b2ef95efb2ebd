// The usual alternative, for comparison: Express 5 on Node with express-rate-limit and a bearer
// check, replaying the product's `GET /v1/pets?limit=20` response. Keys are checked the way the
// product does (SHA-256 of the token, constant-time compare); callers without a valid key are
// limited per client address (X-Forwarded-For from loopback is trusted, like the product's
// `--trust-proxy 127.0.0.1`).
//
// Usage: node bench/express-server.mjs CONFIG.json   (prints {"port":N} once listening)
//   CONFIG: {"response":{status,headers,body},"keys":[{"name","sha256","perMinute"}]}
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import express from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';

const ANONYMOUS_PER_MINUTE = 60;
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const { response } = config;
const body = Buffer.from(response.body, 'utf8');
const keys = new Map(config.keys.map((k) => [k.sha256, { ...k, hash: Buffer.from(k.sha256, 'hex') }]));

function lookup(header) {
  const token = header && header.length <= 1024 ? BEARER.exec(header)?.[1] : undefined;
  if (token === undefined) return undefined;
  const digest = createHash('sha256').update(token).digest();
  const key = keys.get(digest.toString('hex'));
  return key && timingSafeEqual(key.hash, digest) ? key : undefined;
}

const app = express();
app.disable('x-powered-by');
app.disable('etag');
app.set('trust proxy', 'loopback');

app.use((req, _res, next) => {
  req.apiKey = lookup(req.get('authorization'));
  next();
});
app.use(
  rateLimit({
    windowMs: 60_000,
    limit: (req) => req.apiKey?.perMinute ?? ANONYMOUS_PER_MINUTE,
    keyGenerator: (req) => (req.apiKey ? `key:${req.apiKey.name}` : `addr:${ipKeyGenerator(req.ip ?? '')}`),
    standardHeaders: 'draft-8',
    legacyHeaders: true,
    message: { code: 'rate_limited', message: 'Rate limit exceeded.', status: 429 },
  }),
);
app.use((req, res, next) => {
  if (req.apiKey) return next();
  res
    .status(401)
    .set('WWW-Authenticate', 'Bearer realm="petstore", error="invalid_token"')
    .json({ code: 'unauthorized', message: 'The API key is malformed or unknown.', status: 401 });
});
app.use((_req, res) => {
  res.status(response.status).set(response.headers).send(body);
});

const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
