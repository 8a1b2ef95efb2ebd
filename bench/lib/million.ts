/**
 * The 1,000,000-pet SQLite file of the reads no memo can answer: made once in bench/tmp/million/
 * (ignored by git) and reused by every later run, `make bench` and `make bench-profile` alike.
 * The product makes the schema itself (it is started once on the empty file, so its migrations
 * run), then one INSERT ... SELECT over a recursive CTE fills it in one transaction, inside
 * SQLite (about a second). Every server of those scenarios opens this one file and only reads
 * it, so the operating system's cache of it is warm for all alike. The schema is this tree's: a
 * BENCH_BASE build with fewer migrations refuses the file at start (it cannot read a newer schema
 * safely), and run.ts runs these two scenarios without it.
 */
import { Database } from 'bun:sqlite';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startProduct } from './servers.ts';

export const MILLION = 1_000_000;
const DIR = join(import.meta.dir, '../tmp/million');
export const MILLION_FILE = join(DIR, 'pets.db');

/** Whether `file` holds exactly pets 1..MILLION. */
function complete(file: string): boolean {
  if (!existsSync(file)) return false;
  try {
    const db = new Database(file, { readonly: true });
    try {
      const row = db.query('SELECT count(*) AS n, max(id) AS top FROM pets').get() as { n: number; top: number };
      return row.n === MILLION && row.top === MILLION;
    } finally {
      db.close();
    }
  } catch {
    return false;
  }
}

/**
 * The file's path, making it first when it is missing or incomplete. `cmd` starts the product
 * (a binary, or a runtime and the source) so that its own migrations write the schema.
 *
 * @example
 * const db = await millionFile([BINARY], keysFile); // bench/tmp/million/pets.db
 */
export async function millionFile(cmd: string[], keysFile: string): Promise<string> {
  if (complete(MILLION_FILE)) return MILLION_FILE;
  console.log(`bench: making ${MILLION.toLocaleString('en-US')} pets in ${MILLION_FILE}`);
  const started = performance.now();
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true, mode: 0o700 });
  const migrating = await startProduct(cmd, ['--keys', keysFile, '--data', MILLION_FILE], join(DIR, 'migrate.log'));
  await migrating.stop();
  const db = new Database(MILLION_FILE);
  try {
    // Names of 5-11 characters, five categories and the three statuses, so rows vary a little
    // in length and the (status, id) index is not one long run of one value.
    db.run(`
      INSERT INTO pets (name, category_id, status)
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${MILLION})
      SELECT 'Pet ' || i, 1 + i % 5, CASE i % 3 WHEN 0 THEN 'available' WHEN 1 THEN 'pending' ELSE 'sold' END FROM n`);
    db.run('PRAGMA wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
  if (!complete(MILLION_FILE)) throw new Error(`bench: ${MILLION_FILE} does not hold pets 1..${MILLION}`);
  console.log(`bench: made it in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return MILLION_FILE;
}
