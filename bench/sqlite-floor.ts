/**
 * The runtime's floor for reads no memo can answer: `Bun.serve` and `bun:sqlite` on the same
 * 1,000,000-pet file as the product, one prepared statement per route, the rows as JSON. No
 * key check, limiter, validation, cache, ETag or log line: what a page or a pet costs this
 * runtime at the least. The product's CPU per request against this is the ratio its targets
 * are written in (bench/README.md).
 *
 * Serves `GET /v1/pets?limit=N&cursor=<base 36>` (the rows after the cursor's id, as the product
 * pages) and `GET /v1/pets/<id>` (404 when there is no such pet).
 *
 * Usage: bun bench/sqlite-floor.ts PETS.db   (prints {"port":N} once listening)
 */
import { Database } from 'bun:sqlite';

const file = process.argv[2];
if (!file) throw new TypeError('usage: bun bench/sqlite-floor.ts PETS.db');
const db = new Database(file, { readonly: true });
// The product's column names, so the body has the product's shape.
const COLUMNS = 'id, name, category_id AS categoryId, status';
const page = db.prepare(`SELECT ${COLUMNS} FROM pets WHERE id > ? ORDER BY id LIMIT ?`);
const one = db.prepare(`SELECT ${COLUMNS} FROM pets WHERE id = ?`);
const JSON_HEADERS = { 'Content-Type': 'application/json' };

const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  development: false,
  routes: {
    '/v1/pets': (req) => {
      const query = new URL(req.url).searchParams;
      const cursor = query.get('cursor');
      const after = cursor === null ? 0 : Number.parseInt(cursor, 36);
      const limit = Number(query.get('limit') ?? 20);
      return new Response(JSON.stringify(page.all(after, limit)), { headers: JSON_HEADERS });
    },
    '/v1/pets/:id': (req) => {
      const pet = one.get(Number(req.params.id));
      return pet === null
        ? new Response('{"error":"not_found"}', { status: 404, headers: JSON_HEADERS })
        : new Response(JSON.stringify(pet), { headers: JSON_HEADERS });
    },
  },
  fetch: () => new Response('{"error":"not_found"}', { status: 404, headers: JSON_HEADERS }),
});
// An orderly exit on SIGTERM, so that `bun --cpu-prof` writes the floor's profile too.
process.on('SIGTERM', () => process.exit(0));
process.stdout.write(`${JSON.stringify({ port: server.port })}\n`);
