import { describe, expect, test } from 'bun:test';
import { testApp } from '../../test/testing.ts';

const INVENTORY = '/v1/store/inventory';

describe('GET /v1/store/inventory (experimental)', () => {
  test('counts the pets in each status, and follows every create at once on this instance', async () => {
    const t = testApp({ experimental: true });
    const count = async () => {
      const res = await t.app.request(INVENTORY, { headers: t.auth() });
      return [res.status, await res.json()];
    };
    expect(await count()).toEqual([200, { available: 0, pending: 0, sold: 0 }]);
    for (const status of ['available', 'available', 'sold']) {
      const res = await t.app.request('/v1/pets', {
        method: 'POST',
        headers: { ...t.auth(), 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'Rex', categoryId: 1, status }),
      });
      expect(res.status).toBe(201);
    }
    expect(await count()).toEqual([200, { available: 2, pending: 0, sold: 1 }]);
  });

  test('is memoised as list pages are: counted again only once the store changed; 304 on its ETag', async () => {
    const t = testApp({ experimental: true });
    let counted = 0;
    const inventory = t.store.inventory.bind(t.store);
    t.store.inventory = () => {
      counted++;
      return inventory();
    };
    // The memo holds an answer asked for a second time (src/pipeline/memo.ts).
    const first = await t.app.request(INVENTORY, { headers: t.auth() });
    await t.app.request(INVENTORY, { headers: t.auth() });
    const etag = first.headers.get('etag') ?? '';
    expect(etag).toMatch(/^W\/"/);
    const again = await t.app.request(INVENTORY, { headers: { ...t.auth(), 'If-None-Match': etag } });
    expect([again.status, counted]).toEqual([304, 2]);
    await t.store.create({ name: 'Tom', categoryId: 2, status: 'pending' });
    const changed = await t.app.request(INVENTORY, { headers: { ...t.auth(), 'If-None-Match': etag } });
    expect([changed.status, await changed.json(), counted]).toEqual([200, { available: 0, pending: 1, sold: 0 }, 3]);
  });

  test('needs pets:read: a key with only pets:write gets 403 naming it', async () => {
    const t = testApp({ experimental: true, keys: [{ name: 'writer', plan: 'free', scopes: ['pets:write'] }] });
    const res = await t.app.request(INVENTORY, { headers: t.auth() });
    expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([403, 'insufficient_scope']);
    expect(res.headers.get('www-authenticate')).toContain('scope="pets:read"');
  });
});
