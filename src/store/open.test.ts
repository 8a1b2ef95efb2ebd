import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../log.ts';
import { StoreOpenError } from './errors.ts';
import { MemoryStore } from './memory.ts';
import { DEFAULT_DATA, MEMORY, openStore } from './open.ts';
import { SqliteStore } from './sqlite.ts';

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

  test('a path opens a SQLite file, created with its folder; the default is ./data/petstore.db', async () => {
    expect(DEFAULT_DATA).toBe('./data/petstore.db');
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

  test('bundled for Node: no bun:sqlite in the way; on Node 20 (no SQLite) memory with a warning', async () => {
    const build = Bun.spawnSync(
      [BUN, 'build', '--target=node', '--format=esm', new URL('./open.ts', import.meta.url).pathname, '--outdir', dir],
      { stderr: 'pipe' },
    );
    expect(build.exitCode).toBe(0);
    const script = `
      import { openStore } from ${JSON.stringify(join(dir, 'open.js'))};
      const lines = [];
      const log = { debug() {}, info() {}, error() {}, warn: (msg, fields) => lines.push({ msg, ...fields }) };
      const store = await openStore(${JSON.stringify(join(dir, 'pets.db'))}, log);
      const pet = await store.create({ name: 'Rex', categoryId: 1, status: 'available' });
      console.log(JSON.stringify({ pet, lines }));`;
    const run = Bun.spawnSync(['node', '--input-type=module', '-e', script], {
      stderr: 'pipe',
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
    });
    const nodeVersion = Bun.spawnSync(['node', '--version']).stdout.toString().trim();
    const nodeHasSqlite = Bun.spawnSync(['node', '-e', 'require("node:sqlite")'], { stderr: 'ignore' }).exitCode === 0;
    expect(run.stderr.toString()).toBe('');
    const out = JSON.parse(run.stdout.toString());
    expect(out.pet).toEqual({ id: 1, name: 'Rex', categoryId: 1, status: 'available' });
    if (nodeHasSqlite) {
      // Node 22.13 and later: node:sqlite, as on Deno.
      expect(out.lines).toEqual([]);
      expect(existsSync(join(dir, 'pets.db'))).toBe(true);
      return;
    }
    expect(out.lines).toEqual([
      {
        msg: 'this runtime has no built-in SQLite (node:sqlite needs Node 22.13 or later): pets are kept in memory only and are lost at exit',
        data: join(dir, 'pets.db'),
        runtime: `node ${nodeVersion}`,
      },
    ]);
    expect(existsSync(join(dir, 'pets.db'))).toBe(false);
  }, 30_000);
});
