import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../log.ts';
import { MemoryStore } from './memory-store.ts';
import { MEMORY, openStore } from './open.ts';
import { SqliteStore } from './sqlite/sqlite.ts';
import { StoreOpenError } from './store-error.ts';

const BUN = new URL('../../node_modules/.bin/bun', import.meta.url).pathname;

let dir: string;
let lines: Record<string, unknown>[];
const log = () => createLogger({ write: (l) => lines.push(JSON.parse(l)), now: () => 0 });
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'petstore-open-'));
  lines = [];
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('openStore', () => {
  test(':memory: keeps pets in memory and says so', async () => {
    const store = await openStore(MEMORY, log());
    expect(store.backend).toBeInstanceOf(MemoryStore);
    expect(lines).toEqual([
      {
        time: '1970-01-01T00:00:00.000Z',
        level: 'warn',
        msg: 'pets are kept in memory only and are lost at exit',
        data: ':memory:',
      },
    ]);
  });

  test('a path opens a SQLite file, created with its folder', async () => {
    const store = await openStore(join(dir, 'data', 'petstore.db'), log());
    expect(store.backend).toBeInstanceOf(SqliteStore);
    expect(existsSync(join(dir, 'data', 'petstore.db'))).toBe(true);
    await store.close();
  });

  test('an empty value or an unusable path is refused at start-up', async () => {
    await expect(openStore('', log())).rejects.toThrow(
      new StoreOpenError('--data: expected a file path, a postgres:// URL or :memory:'),
    );
    writeFileSync(join(dir, 'file'), 'not a folder');
    await expect(openStore(join(dir, 'file', 'petstore.db'), log())).rejects.toBeInstanceOf(StoreOpenError);
  });

  test('bundled for Node: no bun:sqlite in the way; a Node without SQLite refuses a file and keeps :memory:', async () => {
    const build = Bun.spawnSync(
      [BUN, 'build', '--target=node', '--format=esm', new URL('./open.ts', import.meta.url).pathname, '--outdir', dir],
      { stderr: 'pipe' },
    );
    expect(build.exitCode).toBe(0);
    const open = (data: string) => `
      import { openStore } from ${JSON.stringify(join(dir, 'open.js'))};
      const log = { debug() {}, info() {}, error() {}, warn() {} };
      try {
        const store = await openStore(${JSON.stringify(data)}, log);
        const pet = await store.create({ name: 'Rex', categoryId: 1, status: 'available' });
        console.log(JSON.stringify({ pet }));
      } catch (err) {
        console.log(JSON.stringify({ error: err.name, message: err.message }));
      }`;
    const run = (data: string) => {
      const r = Bun.spawnSync(['node', '--input-type=module', '-e', open(data)], {
        stderr: 'pipe',
        env: { ...process.env, NODE_NO_WARNINGS: '1' },
      });
      expect(r.stderr.toString()).toBe('');
      return JSON.parse(r.stdout.toString());
    };
    const rex = { id: 1, name: 'Rex', categoryId: 1, status: 'available', version: 1 };
    const file = join(dir, 'pets.db');
    const nodeVersion = Bun.spawnSync(['node', '--version']).stdout.toString().trim();
    const nodeHasSqlite = Bun.spawnSync(['node', '-e', 'require("node:sqlite")'], { stderr: 'ignore' }).exitCode === 0;
    expect(run(MEMORY)).toEqual({ pet: rex });
    if (nodeHasSqlite) {
      // Node 22.13 and later: node:sqlite, as on Deno.
      expect(run(file)).toEqual({ pet: rex });
      expect(existsSync(file)).toBe(true);
      return;
    }
    expect(run(file)).toEqual({
      error: 'StoreOpenError',
      message:
        `--data ${file}: this runtime (Node ${nodeVersion}) has no built-in SQLite; ` +
        'run the petstore binary (Bun), Deno 2, or Node 22.13 or later, ' +
        'or keep pets in PostgreSQL (--data postgres://...) or in memory only (--data :memory:)',
    });
    expect(existsSync(file)).toBe(false);
  }, 30_000);
});
