/**
 * The physical limit: a bare `Bun.serve` that answers every request with the exact bytes the
 * product returned for `GET /v1/pets?limit=20` (body and headers, as captured by `run.ts`).
 *
 * Usage: bun bench/bare-server.ts RESPONSE.json   (prints {"port":N} once listening)
 */
import { readFileSync } from 'node:fs';
import { type CapturedResponse, parseCaptured } from './lib/captured.ts';

const file = process.argv[2];
if (!file) throw new TypeError('usage: bun bench/bare-server.ts RESPONSE.json');
const captured: CapturedResponse = parseCaptured(readFileSync(file, 'utf8'));
const body = Buffer.from(captured.body, 'utf8');

const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  development: false,
  fetch: () => new Response(body, { status: captured.status, headers: captured.headers }),
});
process.stdout.write(`${JSON.stringify({ port: server.port })}\n`);
