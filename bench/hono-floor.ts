/**
 * The framework's own floor: Hono on Bun in the product's shape with none of its work. Two
 * pass-through layers (one on every path, one on `/v1/*` that reads `Authorization`, which makes
 * Bun build the request's headers) and the route, which replays the product's captured answer to
 * `GET /v1/pets?limit=20` as `bare-server.ts` does. The product's CPU per request above this is
 * what its own code costs; this above bare is what Hono costs (bench/README.md).
 *
 * Usage: bun bench/hono-floor.ts RESPONSE.json   (prints {"port":N} once listening)
 */
import { readFileSync } from 'node:fs';
import { Hono } from 'hono';
import { type CapturedResponse, parseCaptured } from './lib/captured.ts';

const file = process.argv[2];
if (!file) throw new TypeError('usage: bun bench/hono-floor.ts RESPONSE.json');
const captured: CapturedResponse = parseCaptured(readFileSync(file, 'utf8'));
const body = Buffer.from(captured.body, 'utf8');

const app = new Hono();
app.use(async (_c, next) => {
  await next();
});
app.use('/v1/*', async (c, next) => {
  c.req.header('authorization');
  await next();
});
app.get('/v1/pets', () => new Response(body, { status: captured.status, headers: captured.headers }));

const server = Bun.serve({ port: 0, hostname: '127.0.0.1', development: false, fetch: app.fetch });
process.stdout.write(`${JSON.stringify({ port: server.port })}\n`);
