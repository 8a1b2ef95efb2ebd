/**
 * Whether the database should write the JSON of a page or a pet: the product's way (rows as
 * objects, mapped to pets, `JSON.stringify`) against the engine building the body itself, in one
 * process, on 100,000 pets, the ways taking turns in each round so drift is shared out.
 *
 * - SQLite (`bun:sqlite`), a page and a pet by id: `.all()` and `.values()` mapped to pets; `json_group_array(json_object(…))`;
 *   `group_concat` of `json_quote`d text.
 * - PostgreSQL (`postgres`, on a throwaway server from scripts/with-postgres.sh): the rows mapped
 *   to pets; `json_agg(json_build_object(…))`; `string_agg` of `to_json`ed text, which gives
 *   `JSON.stringify`'s bytes (`json_agg` puts spaces after its commas and colons).
 *
 * Each figure is the median of the rounds: the time a page takes, and this process's CPU for it
 * (for PostgreSQL the server's work is not in it). Each way's body is first checked to be `JSON.stringify`'s, byte for byte.
 *
 * Usage: node_modules/.bin/bun bench/db-json.ts   (~2 min; figures in bench/README.md)
 */
import { Database } from 'bun:sqlite';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import postgres from 'postgres';
import { median } from './lib/measure.ts';

const PETS = 100_000;
const LIMIT = 20;
const ROUNDS = Number(process.env.DBJSON_ROUNDS ?? 7);
const PAGES = 20_000;
const STATUSES = ['available', 'pending', 'sold'] as const;
const FIELDS = `'id', id, 'name', name, 'categoryId', category_id, 'status', status`;

type Row = { id: number; name: string; category_id: number; status: string };
const pet = (r: Row) => ({ id: r.id, name: r.name, categoryId: r.category_id, status: r.status });
/** Page starts spread over the table, the same for every way. */
const afters = Array.from({ length: PAGES }, (_, i) => (i * 7919) % (PETS - LIMIT));
// Names with what JSON must escape: quotes, a backslash, a tab, a control character, non-ASCII.
const nameOf = (i: number) => `pet ${i} "q" \\ \t\u0001 é 🐈`;

type Way = (after: number) => string | Promise<string>;

async function compare(engine: string, ways: Record<string, Way>): Promise<void> {
  const expected = await ways.rows?.(41);
  for (const [name, way] of Object.entries(ways)) {
    if ((await way(41)) !== expected) throw new Error(`${engine} ${name}: not JSON.stringify's body`);
  }
  const us: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((n) => [n, []]));
  const cpuUs: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((n) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const names = Object.keys(ways);
    const order = names.map((_, i) => names[(i + round) % names.length] as string);
    for (const name of order) {
      const way = ways[name] as Way;
      const start = performance.now();
      const cpu = process.cpuUsage();
      for (const after of afters) await way(after);
      us[name]?.push(((performance.now() - start) * 1000) / PAGES);
      const spent = process.cpuUsage(cpu);
      cpuUs[name]?.push((spent.user + spent.system) / PAGES);
    }
  }
  const base = median(us.rows ?? []);
  const baseCpu = median(cpuUs.rows ?? []);
  for (const [name, values] of Object.entries(us)) {
    const m = median(values);
    const c = median(cpuUs[name] ?? []);
    console.log(
      `${engine.padEnd(10)} ${name.padEnd(7)} ${m.toFixed(1).padStart(6)} µs a read (${(m / base).toFixed(2)}x rows), this process's CPU ${c.toFixed(1).padStart(5)} µs (${(c / baseCpu).toFixed(2)}x); rounds ${values.map((v) => v.toFixed(1)).join(' ')}`,
    );
  }
}

async function sqlite(): Promise<void> {
  const db = new Database(':memory:');
  db.run(`CREATE TABLE pets (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,
    category_id INTEGER NOT NULL, status TEXT NOT NULL) STRICT`);
  const insert = db.prepare('INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?)');
  db.transaction(() => {
    for (let i = 0; i < PETS; i++) insert.run(nameOf(i), 1 + (i % 5), STATUSES[i % 3] as string);
  })();
  const page = db.prepare('SELECT id, name, category_id, status FROM pets WHERE id > ? ORDER BY id LIMIT ?');
  const values = db.prepare('SELECT id, name, category_id, status FROM pets WHERE id > ? ORDER BY id LIMIT ?');
  const grouped = db.prepare(
    `SELECT json_group_array(json_object(${FIELDS}) ORDER BY id) AS body
     FROM (SELECT * FROM pets WHERE id > ? ORDER BY id LIMIT ?)`,
  );
  const concat = db.prepare(
    `SELECT '[' || group_concat('{"id":' || id || ',"name":' || json_quote(name) || ',"categoryId":' ||
       category_id || ',"status":"' || status || '"}', ',' ORDER BY id) || ']' AS body
     FROM (SELECT * FROM pets WHERE id > ? ORDER BY id LIMIT ?)`,
  );
  console.log(`db-json: SQLite ${(db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v}`);
  await compare('sqlite', {
    rows: (after) => JSON.stringify((page.all(after, LIMIT) as Row[]).map(pet)),
    values: (after) =>
      JSON.stringify(
        (values.values(after, LIMIT) as [number, string, number, string][]).map(([id, name, categoryId, status]) => ({
          id,
          name,
          categoryId,
          status,
        })),
      ),
    json: (after) => (grouped.get(after, LIMIT) as { body: string }).body,
    concat: (after) => (concat.get(after, LIMIT) as { body: string }).body,
  });
  const one = db.prepare('SELECT id, name, category_id, status FROM pets WHERE id = ?');
  const object = db.prepare(`SELECT json_object(${FIELDS}) AS body FROM pets WHERE id = ?`);
  await compare('sqlite pet', {
    rows: (after) => JSON.stringify(pet(one.get(after + 1) as Row)),
    json: (after) => (object.get(after + 1) as { body: string }).body,
  });
  db.close();
}

async function postgresql(): Promise<void> {
  const started = execFileSync(join(import.meta.dir, '../scripts/with-postgres.sh'), ['start'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = /_URL=(\S+)/.exec(started)?.[1] ?? '';
  const dir = /_DIR=(\S+)/.exec(started)?.[1] ?? '';
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`CREATE TABLE pets (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name TEXT NOT NULL,
      category_id BIGINT NOT NULL, status TEXT NOT NULL)`);
    await sql.unsafe(`INSERT INTO pets (name, category_id, status)
      SELECT 'pet ' || i || ' "q" \\ ' || chr(9) || chr(1) || ' é 🐈', 1 + i % 5, (ARRAY['available','pending','sold'])[1 + i % 3]
      FROM generate_series(0, ${PETS - 1}) AS i`);
    await sql.unsafe('VACUUM ANALYZE pets');
    const [{ version }] = (await sql`SELECT current_setting('server_version') AS version`) as unknown as [
      { version: string },
    ];
    console.log(`db-json: PostgreSQL ${version}`);
    await compare('postgresql', {
      rows: async (after) =>
        JSON.stringify(
          (
            (await sql`SELECT id, name, category_id, status FROM pets WHERE id > ${after} ORDER BY id LIMIT ${LIMIT}`) as unknown as Row[]
          ).map((r) => ({ ...pet(r), id: Number(r.id), categoryId: Number(r.category_id) })),
        ),
      json: async (after) => {
        const [{ body }] =
          (await sql`SELECT json_agg(json_build_object(${sql.unsafe(FIELDS)}) ORDER BY id)::text AS body
          FROM (SELECT * FROM pets WHERE id > ${after} ORDER BY id LIMIT ${LIMIT}) AS page`) as unknown as [
            { body: string },
          ];
        return body.replaceAll('}, {', '},{').replaceAll('" : ', '":').replaceAll(', "', ',"');
      },
      concat: async (after) => {
        const [{ body }] = (await sql`SELECT '[' || string_agg('{"id":' || id || ',"name":' || to_json(name)::text ||
            ',"categoryId":' || category_id || ',"status":"' || status || '"}', ',' ORDER BY id) || ']' AS body
          FROM (SELECT * FROM pets WHERE id > ${after} ORDER BY id LIMIT ${LIMIT}) AS page`) as unknown as [
          { body: string },
        ];
        return body;
      },
    });
  } finally {
    await sql.end();
    execFileSync(join(import.meta.dir, '../scripts/with-postgres.sh'), ['stop', dir], { stdio: 'inherit' });
  }
}

await sqlite();
await postgresql();
