import { Database } from 'bun:sqlite';
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeClock } from '../../test/testing.ts';
import { silentLogger } from '../log.ts';
import { PageCache } from './page-cache.ts';
import { DATA_VERSION_TTL_MS, SqliteStore } from './sqlite.ts';
import { loadSqlite, type SqliteOpener } from './sqlite-driver.ts';

const openSqlite = (await loadSqlite()) as SqliteOpener;
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'petstore-pages-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const clock = fakeClock();
const open = () => SqliteStore.open({ path: join(dir, 'pets.db'), open: openSqlite, log: silentLogger, clock });
const rex = { name: 'Rex', categoryId: 1, status: 'available' } as const;

describe('SqliteStore list cache', () => {
  test("sees this store's own creates", async () => {
    const store = open();
    await store.create(rex);
    expect((await store.list({ limit: 10 })).map((p) => p.id)).toEqual([1]);
    await store.create(rex);
    expect((await store.list({ limit: 10 })).map((p) => p.id)).toEqual([1, 2]);
    await store.close();
  });

  test("sees this store's own creates at once on get, after a 404", async () => {
    const store = open();
    expect(await store.get(1)).toBeUndefined();
    await store.create(rex);
    expect(await store.get(1)).toEqual({ id: 1, ...rex });
    await store.close();
  });

  test('a caller changing its pet does not change the next one', async () => {
    const store = open();
    await store.create(rex);
    const first = await store.get(1);
    if (first) first.name = 'Changed';
    expect(await store.get(1)).toEqual({ id: 1, ...rex });
    await store.close();
  });

  test(`sees commits of another process sharing the file within ${DATA_VERSION_TTL_MS} ms`, async () => {
    const store = open();
    await store.create(rex);
    expect(await store.list({ limit: 10 })).toHaveLength(1);
    expect(await store.get(2)).toBeUndefined();
    const other = new Database(join(dir, 'pets.db'));
    other.run("INSERT INTO pets (name, category_id, status) VALUES ('Tom', 2, 'sold')");
    other.run("UPDATE pets SET name = 'Rexy' WHERE id = 1");
    other.close();
    clock.advance(DATA_VERSION_TTL_MS);
    expect(await store.get(2)).toEqual({ id: 2, name: 'Tom', categoryId: 2, status: 'sold' });
    expect(await store.list({ limit: 10 })).toEqual([
      { id: 1, name: 'Rexy', categoryId: 1, status: 'available' },
      { id: 2, name: 'Tom', categoryId: 2, status: 'sold' },
    ]);
    await store.close();
  });

  test('a page handed out is frozen, so no caller can change the next one', async () => {
    const store = open();
    for (let i = 0; i < 3; i++) await store.create(rex);
    const first = await store.list({ limit: 3 });
    expect(Object.isFrozen(first)).toBe(true);
    expect(first.every((pet) => Object.isFrozen(pet))).toBe(true);
    expect(await store.list({ limit: 3 })).toHaveLength(3);
    await store.close();
  });
});

describe('PageCache', () => {
  test('a page read at an older version is neither served nor kept', () => {
    const cache = new PageCache();
    const pet = { id: 1, name: 'Rex', categoryId: 1, status: 'available' } as const;
    expect(cache.get('k', 1)).toBeUndefined();
    cache.set('k', 1, [pet]);
    expect(cache.get('k', 1)).toEqual([pet]);
    expect(cache.get('k', 2)).toBeUndefined();
    cache.set('k', 1, [pet]);
    expect(cache.get('k', 2)).toBeUndefined();
  });
});
