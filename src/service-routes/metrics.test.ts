import { describe, expect, test } from 'bun:test';
import { tokenFor } from '../../test/testing.ts';
import { createApp, metricsApp } from '../app.ts';
import { SlidingWindowLimiter } from '../gateway/gateway.ts';
import { parseKeys } from '../keys/file.ts';
import { hashToken } from '../keys/records.ts';
import { KeyTable } from '../keys/table.ts';
import { Metrics } from '../metrics/registry.ts';
import { MemoryStore } from '../store/memory-store.ts';

const NOT_FOUND = { code: 'not_found', message: 'No resource exists at this path.', status: 404 };

function app(options: { metrics?: Metrics; serveMetrics?: boolean; keys?: KeyTable }) {
  const { keys = new KeyTable([]), ...rest } = options;
  return createApp({
    store: new MemoryStore(),
    keyTable: () => keys,
    limiter: new SlidingWindowLimiter(),
    ...rest,
  });
}

describe('GET /metrics', () => {
  test('served by the app with metrics, in the text format, counting the requests before it', async () => {
    const metrics = new Metrics({ version: '1.0.0', runtime: 'bun' });
    const a = app({ metrics });
    await a.request('/healthz');
    await a.request('/v1/pets');
    const res = await a.request('/metrics');
    expect([res.status, res.headers.get('content-type'), res.headers.get('cache-control')]).toEqual([
      200,
      'text/plain; version=0.0.4; charset=utf-8',
      'no-store',
    ]);
    const text = await res.text();
    expect(text).toContain('\npetstore_http_requests_total{operation="healthz",status="200"} 1\n');
    expect(text).toContain('\npetstore_http_requests_total{operation="listPets",status="401"} 1\n');
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
  });

  test('404 with the Error body without metrics, or when they have a port of their own', async () => {
    for (const a of [app({}), app({ metrics: new Metrics({ version: '1', runtime: 'bun' }), serveMetrics: false })]) {
      const res = await a.request('/metrics');
      expect([res.status, await res.json()]).toEqual([404, NOT_FOUND]);
    }
  });

  test('the separate listener serves /metrics and the Error body elsewhere', async () => {
    const m = metricsApp(new Metrics({ version: '1.0.0', runtime: 'bun' }));
    expect((await m.request('/metrics')).status).toBe(200);
    const other = await m.request('/v1/pets');
    expect([other.status, other.headers.get('content-type'), await other.json()]).toEqual([
      404,
      'application/json',
      NOT_FOUND,
    ]);
  });
});

describe('petstore_answer_memo_total', () => {
  const token = tokenFor('memo');
  const keys = new KeyTable(
    parseKeys(JSON.stringify({ keys: [{ name: 'memo', plan: 'pro', sha256: hashToken(token).toString('hex') }] })),
  );
  const memoLines = async (a: ReturnType<typeof app>) =>
    (await (await a.request('/metrics')).text()).split('\n').filter((l) => l.startsWith('petstore_answer_memo_total'));

  test('counts the memoised operations’ answers as hits and misses: memoised from the second asking, read again after a write', async () => {
    const a = app({ metrics: new Metrics({ version: '1.0.0', runtime: 'bun' }), keys });
    const headers = { Authorization: `Bearer ${token}` };
    const zero = [
      'petstore_answer_memo_total{operation="listPets",outcome="hit"} 0',
      'petstore_answer_memo_total{operation="listPets",outcome="miss"} 0',
      'petstore_answer_memo_total{operation="getPet",outcome="hit"} 0',
      'petstore_answer_memo_total{operation="getPet",outcome="miss"} 0',
      'petstore_answer_memo_total{operation="getInventory",outcome="hit"} 0',
      'petstore_answer_memo_total{operation="getInventory",outcome="miss"} 0',
    ];
    expect(await memoLines(a)).toEqual(zero);
    const created = await a.request('/v1/pets', {
      method: 'POST',
      headers: { ...headers, 'Content-Type': 'application/json' },
      body: '{"name":"Rex","categoryId":1}',
    });
    expect(created.status).toBe(201);
    // Asked once (remembered), twice (memoised), three times (answered from the memo).
    for (let i = 0; i < 3; i++) expect((await a.request('/v1/pets?limit=20', { headers })).status).toBe(200);
    // A change moves the store's change count: the next list is read again.
    const patched = await a.request('/v1/pets/1', {
      method: 'PATCH',
      headers: { ...headers, 'Content-Type': 'application/merge-patch+json' },
      body: '{"name":"Bob"}',
    });
    expect(patched.status).toBe(200);
    expect((await a.request('/v1/pets?limit=20', { headers })).status).toBe(200);
    // A refused request never reaches the memo; neither does an operation that is not memoised.
    expect((await a.request('/v1/pets?limit=20')).status).toBe(401);
    expect((await a.request('/v1/pets/1', { headers })).status).toBe(200);
    expect(await memoLines(a)).toEqual([
      'petstore_answer_memo_total{operation="listPets",outcome="hit"} 1',
      'petstore_answer_memo_total{operation="listPets",outcome="miss"} 3',
      'petstore_answer_memo_total{operation="getPet",outcome="hit"} 0',
      'petstore_answer_memo_total{operation="getPet",outcome="miss"} 1',
      ...zero.slice(4),
    ]);
  });

  test("a change of one pet leaves the other pets' memoised answers and the pages without it; its own are read again", async () => {
    const a = app({ metrics: new Metrics({ version: '1.0.0', runtime: 'bun' }), keys });
    const headers = { Authorization: `Bearer ${token}` };
    const create = async (name: string) => {
      const created = await a.request('/v1/pets', {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name, categoryId: 1 }),
      });
      expect(created.status).toBe(201);
    };
    for (const name of ['Rex', 'Kit', 'Tom', 'Max']) await create(name);
    const names = async (path: string) => {
      const res = await a.request(path, { headers });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { name: string } | { name: string }[];
      return Array.isArray(body) ? body.map((p) => p.name).join(',') : body.name;
    };
    const paths = ['/v1/pets/1', '/v1/pets/4', '/v1/pets?limit=1', '/v1/pets?limit=3', '/v1/pets?limit=10'];
    // Each memoised (asked twice: 5 and 6 misses), then Max renamed.
    for (let i = 0; i < 2; i++) for (const path of paths) await names(path);
    const patched = await a.request('/v1/pets/4', {
      method: 'PATCH',
      headers: { ...headers, 'Content-Type': 'application/merge-patch+json' },
      body: '{"name":"Mox"}',
    });
    expect(patched.status).toBe(200);
    // Pet 1 and the first page (it read pets 1 and 2) are memoised; pet 4 and the pages that show
    // it are read again.
    expect(await Promise.all(paths.map(names))).toEqual(['Rex', 'Mox', 'Rex', 'Rex,Kit,Tom', 'Rex,Kit,Tom,Mox']);
    // A new pet: the last page shows it at once; the full pages and the pets stay memoised.
    await create('Ada');
    expect(await Promise.all(paths.map(names))).toEqual(['Rex', 'Mox', 'Rex', 'Rex,Kit,Tom', 'Rex,Kit,Tom,Mox,Ada']);
    expect(await memoLines(a)).toEqual([
      'petstore_answer_memo_total{operation="listPets",outcome="hit"} 3',
      'petstore_answer_memo_total{operation="listPets",outcome="miss"} 9',
      'petstore_answer_memo_total{operation="getPet",outcome="hit"} 3',
      'petstore_answer_memo_total{operation="getPet",outcome="miss"} 5',
      'petstore_answer_memo_total{operation="getInventory",outcome="hit"} 0',
      'petstore_answer_memo_total{operation="getInventory",outcome="miss"} 0',
    ]);
  });
});
