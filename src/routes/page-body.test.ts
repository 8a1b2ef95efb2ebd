import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeClock, tokenFor } from '../../test/testing.ts';
import { createApp } from '../app.ts';
import { hashToken, parseKeys } from '../gateway/keys/file.ts';
import { KeyTable } from '../gateway/keys/table.ts';
import { SlidingWindowLimiter } from '../gateway/limiter/memory.ts';
import { silentLogger } from '../log.ts';
import { MemoryStore } from '../store/memory.ts';
import { SqliteStore } from '../store/sqlite.ts';
import { loadSqlite, type SqliteOpener } from '../store/sqlite-driver.ts';
import type { PetStore } from '../store/store.ts';

const dir = mkdtempSync(join(tmpdir(), 'petstore-page-body-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const openSqlite = (await loadSqlite()) as SqliteOpener;

const stores: [string, () => PetStore][] = [
  ['memory', () => new MemoryStore()],
  ['SQLite', () => SqliteStore.open({ path: join(dir, `${Math.random()}.db`), open: openSqlite, log: silentLogger })],
];

describe.each(stores)('the list page on the %s store', (_, makeStore) => {
  test('a 201 shows in the next list at once, and the page body is the JSON of its pets', async () => {
    const clock = fakeClock();
    const sha256 = hashToken(tokenFor('acme')).toString('hex');
    const table = new KeyTable(parseKeys(JSON.stringify({ keys: [{ name: 'acme', plan: 'free', sha256 }] })));
    const store = makeStore();
    const app = createApp({ store, keys: () => table, limiter: new SlidingWindowLimiter({ clock }), clock });
    const auth = { Authorization: `Bearer ${tokenFor('acme')}` };
    const list = () => app.request('/v1/pets?limit=2', { headers: auth });
    const create = (name: string) =>
      app.request('/v1/pets', {
        method: 'POST',
        headers: { ...auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name, categoryId: 1 }),
      });

    expect(await (await list()).text()).toBe('[]');
    expect((await create('Rex')).status).toBe(201);
    const one = await list();
    expect(one.headers.get('content-type')).toBe('application/json');
    expect(await one.text()).toBe('[{"id":1,"name":"Rex","categoryId":1,"status":"available"}]');
    expect(await (await list()).text()).toBe('[{"id":1,"name":"Rex","categoryId":1,"status":"available"}]');
    await create('Tom');
    await create('Kit');
    const page = await list();
    expect(page.headers.get('link')).toBe('<pets?limit=2&cursor=2>; rel="next"');
    expect(await page.text()).toBe(
      '[{"id":1,"name":"Rex","categoryId":1,"status":"available"},{"id":2,"name":"Tom","categoryId":1,"status":"available"}]',
    );
    await store.close();
  });
});
