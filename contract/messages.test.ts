// Every 400 names the field and what it allows, in the contract's words, and
// never quotes a value the client did not send (a JSON number past 2^53 is rounded by the parser).
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { type Running, spawnServer, tokenOf, writeKeysFile } from '../test/harness.ts';
import { badRequestExamples } from './examples.ts';

let server: Running;
const auth = { Authorization: `Bearer ${tokenOf('qa')}` };
beforeAll(async () => {
  server = await spawnServer({ args: ['--keys', writeKeysFile([{ name: 'qa', plan: 'business' }])] });
});
afterAll(async () => {
  await server.stop();
});

const LIMIT = 'limit: must be an integer from 1 to 100.';
const STATUS = 'status: must be one of available, pending, sold.';
const ID = (field: string) => `${field}: must be an integer from 1 to 9007199254740991.`;

async function expect400(res: Response, message: string) {
  expect(res.status).toBe(400);
  expect(res.headers.get('content-type')).toBe('application/json');
  expect(await res.json()).toEqual({ code: 'invalid_request', message, status: 400 });
}

test.each([
  ['limit=abc', LIMIT],
  ['limit=0', LIMIT],
  ['limit=101', LIMIT],
  ['limit=1.5', LIMIT],
  ['limit=', LIMIT],
  ['limit=1&limit=2', 'limit: must be given once, as an integer from 1 to 100.'],
  ['status=available&status=sold', 'status: must be given once, as one of available, pending, sold.'],
  ['status=lost', STATUS],
  ['cursor=ABC', 'cursor: must be the cursor of a Link header (1 to 11 characters of 0-9 and a-z).'],
])('GET /v1/pets?%s: 400 %j', async (query, message) => {
  await expect400(await fetch(`${server.url}/v1/pets?${query}`, { headers: auth }), message);
});

test('unknown query parameters are still ignored', async () => {
  const res = await fetch(`${server.url}/v1/pets?limit=5&colour=brown&colour=grey`, { headers: auth });
  expect(res.status).toBe(200);
});

test.each([['-1'], ['0'], ['abc'], ['9007199254740992'], ['9007199254740993'], ['99999999999999999999']])(
  'GET /v1/pets/%s: 400 naming petId and its range',
  async (id) => {
    await expect400(await fetch(`${server.url}/v1/pets/${id}`, { headers: auth }), ID('petId'));
  },
);

const post = (body: string, headers: Record<string, string> = {}) =>
  fetch(`${server.url}/v1/pets`, {
    method: 'POST',
    headers: { ...auth, 'Content-Type': 'application/json', ...headers },
    body,
  });

const NAME = 'name: must be a string of 1 to 100 characters without the NUL character U+0000.';
test.each([
  ['{"name":"Rex","categoryId":9007199254740993}', ID('categoryId')],
  ['{"name":"Rex","categoryId":9007199254740992}', ID('categoryId')],
  ['{"name":"Rex","categoryId":0}', ID('categoryId')],
  ['{"name":"Rex","categoryId":1.5}', ID('categoryId')],
  // JSON.parse makes integers of these (9007199254740991 and 4): never stored as if sent.
  ['{"name":"Rex","categoryId":9007199254740990.9}', ID('categoryId')],
  ['{"name":"Rex","categoryId":4.0000000000000001}', ID('categoryId')],
  ['{"name":"Rex","categoryId":"1"}', ID('categoryId')],
  ['{"name":"Rex","categoryId":[1]}', ID('categoryId')],
  ['{"name":"Rex"}', 'categoryId: is required; must be an integer from 1 to 9007199254740991.'],
  ['{"categoryId":1}', 'name: is required; must be a string of 1 to 100 characters without the NUL character U+0000.'],
  ['{"name":"","categoryId":1}', NAME],
  [JSON.stringify({ name: 'x'.repeat(101), categoryId: 1 }), NAME],
  ['{"name":"a\\u0000b","categoryId":1}', NAME],
  ['{"name":7,"categoryId":1}', NAME],
  ['{"name":"Rex","categoryId":1,"status":"lost"}', STATUS],
  [
    '{"name":"Rex","categoryId":1,"owner":"me"}',
    'owner: is not a field of the body; its fields are name, categoryId, status.',
  ],
  ['[]', 'body: must be a JSON object.'],
  ['{"name":', 'body: must be a JSON object; this is not valid JSON.'],
  ['', 'body: must be a JSON object; this is not valid JSON.'],
])('POST /v1/pets %s: 400 %j, nothing stored', async (body, message) => {
  await expect400(await post(body), message);
  const listed = await fetch(`${server.url}/v1/pets`, { headers: auth });
  expect(await listed.json()).toEqual([]);
});

test('a bad Idempotency-Key is named as the client spelt the header', async () => {
  await expect400(
    await post('{"name":"Rex","categoryId":1}', { 'Idempotency-Key': 'has space' }),
    'Idempotency-Key: must be 1 to 255 visible ASCII characters (! to ~, no spaces).',
  );
});

test('no 400 message quotes valibot', async () => {
  const bodies = [
    '{"name":"Rex","categoryId":true}',
    '{"name":null,"categoryId":1}',
    '{"name":"Rex","categoryId":1,"status":1}',
  ];
  for (const body of bodies) {
    const res = await post(body);
    const { message } = (await res.json()) as { message: string };
    expect(message).not.toMatch(/Invalid|Expected|received/);
  }
});

test.each(badRequestExamples())("the contract's example $name is the binary's answer to $method $path", async (ex) => {
  const res = await fetch(`${server.url}/v1${ex.path}`, {
    method: ex.method,
    headers: { ...auth, 'Content-Type': 'application/json' },
    body: ex.body,
  });
  expect(res.status).toBe(400);
  expect(await res.json()).toEqual(ex.expected);
});
