// What an integrator's TypeScript code does with a client generated from contract/openapi.yaml
// (openapi-typescript types + openapi-fetch): create, list page by page, get, change with
// If-Match, remove, a wrong key (401), the quota read without spending it, then the key's quota
// used up (429). `make client-test` runs it against dist/petstore, with PETSTORE_URL (ending in
// /v1) and PETSTORE_TOKEN (a key of 11 requests a minute) set. Every
// check is exact; the first that fails exits 1.
import { deepStrictEqual, ok, strictEqual } from 'node:assert/strict';
import createClient from 'openapi-fetch';
import type { components, paths } from '../../../dist/clients/typescript/schema.ts';

type Pet = components['schemas']['Pet'];

const baseUrl = required('PETSTORE_URL');
const token = required('PETSTORE_TOKEN');
const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });

const step = (name: string) => console.log(`typescript client: ${name}`);

step('create three pets, the first without status');
const wanted: Pet[] = [
  { id: 1, name: 'Rex', categoryId: 1, status: 'available' },
  { id: 2, name: 'Tom', categoryId: 2, status: 'pending' },
  { id: 3, name: 'Kit', categoryId: 9007199254740991, status: 'sold' },
];
const tags: string[] = [];
for (const pet of wanted) {
  const { name, categoryId, status } = pet;
  const body = status === 'available' ? { name, categoryId } : { name, categoryId, status };
  const { data, response } = await client.POST('/pets', { body });
  strictEqual(response.status, 201);
  deepStrictEqual(data, pet);
  tags.push(response.headers.get('etag') ?? '');
  // Relative to the request URL (…/v1/pets), so it keeps any prefix a proxy serves the API under.
  strictEqual(response.headers.get('location'), `pets/${pet.id}`);
}

step('list with limit=2, then follow the Link header');
const first = await client.GET('/pets', { params: { query: { limit: 2 } } });
strictEqual(first.response.status, 200);
deepStrictEqual(first.data, wanted.slice(0, 2));
const link = first.response.headers.get('link');
strictEqual(link, '<pets?limit=2&cursor=2>; rel="next"');
const next = new URL(/^<([^>]+)>; rel="next"$/.exec(link ?? '')?.[1] ?? '', first.response.url);
const cursor = next.searchParams.get('cursor') ?? undefined;
const second = await client.GET('/pets', { params: { query: { limit: 2, cursor } } });
strictEqual(second.response.status, 200);
deepStrictEqual(second.data, wanted.slice(2));
strictEqual(second.response.headers.get('link'), null);

step('get one pet (deprecated getPet, with its headers)');
const one = await client.GET('/pets/{petId}', { params: { path: { petId: 2 } } });
strictEqual(one.response.status, 200);
deepStrictEqual(one.data, wanted[1]);
strictEqual(one.response.headers.get('deprecation'), '@1767225600');

step('change Rex with the ETag its create answered; that tag again is 412; remove Tom');
const changed = await client.PATCH('/pets/{petId}', {
  params: { path: { petId: 1 }, header: { 'If-Match': tags[0] } },
  body: { name: 'Max' },
});
strictEqual(changed.response.status, 200);
deepStrictEqual(changed.data, { ...wanted[0], name: 'Max' });
const newTag = changed.response.headers.get('etag');
ok(newTag !== null && newTag !== tags[0], `a new ETag: ${newTag}`);
const stale = await client.PATCH('/pets/{petId}', {
  params: { path: { petId: 1 }, header: { 'If-Match': tags[0] } },
  body: { status: 'sold' },
});
strictEqual(stale.response.status, 412);
strictEqual(stale.error?.code, 'precondition_failed');
const removed = await client.DELETE('/pets/{petId}', { params: { path: { petId: 2 } } });
strictEqual(removed.response.status, 204);

step('a wrong key is 401 with the Error body');
const keyless = createClient<paths>({ baseUrl, headers: { Authorization: 'Bearer psk_not-a-key' } });
const refused = await keyless.GET('/pets');
strictEqual(refused.response.status, 401);
deepStrictEqual(refused.error, {
  code: 'unauthorized',
  message: 'The API key is malformed or unknown.',
  status: 401,
});
strictEqual(refused.response.headers.get('www-authenticate'), 'Bearer realm="petstore", error="invalid_token"');

step('read the quota: 2 of 11 left, and reading it any number of times spends none');
for (let i = 0; i < 3; i++) {
  const quota = await client.GET('/rate_limit');
  strictEqual(quota.response.status, 200);
  deepStrictEqual(
    quota.data?.windows.map(({ name, limit, remaining }) => ({ name, limit, remaining })),
    [
      { name: 'minute', limit: 11, remaining: 2 },
      { name: 'day', limit: 1000, remaining: 991 },
    ],
  );
  deepStrictEqual([quota.data?.consumer, quota.data?.plan, quota.data?.ban], ['client', 'enterprise', null]);
  strictEqual(String(quota.data?.windows[0]?.reset), quota.response.headers.get('x-ratelimit-reset'));
}

step('the key has 2 of its 11 requests a minute left; the third is 429');
for (const left of ['1', '0']) {
  const page = await client.GET('/pets', { params: { query: { status: 'sold' } } });
  strictEqual(page.response.status, 200);
  deepStrictEqual(page.data, [wanted[2]]);
  strictEqual(page.response.headers.get('x-ratelimit-remaining'), left);
}
const limited = await client.GET('/pets');
strictEqual(limited.response.status, 429);
deepStrictEqual(limited.error?.code, 'rate_limited');
strictEqual(limited.error?.status, 429);
strictEqual(limited.response.headers.get('x-ratelimit-remaining'), '0');
const retryAfter = Number(limited.response.headers.get('retry-after'));
ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 61, `Retry-After ${retryAfter}`);
const spent = await client.GET('/rate_limit');
strictEqual(spent.response.status, 200);
strictEqual(spent.data?.windows[0]?.remaining, 0);

step('all checks passed');

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}
