// @petstore/client against the built binary (PETSTORE_CMD, default dist/petstore): every
// operation, errors as PetstoreError, a create whose answer a proxy drops, listAllPets over three
// pages, the deprecation warning, and what a caller sees of the rate limit without waiting for it.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { connect, createServer, type Server } from 'node:net';
import { type KeySpec, type Running, spawnServer, tokenOf, writeKeysFile } from '../../../test/harness.ts';
import {
  createClient,
  type Fetch,
  type Pet,
  type PetstoreClient,
  PetstoreError,
  type RateLimitInfo,
} from '../src/index.ts';

const KEYS: KeySpec[] = [
  { name: 'ops', plan: 'enterprise', limits: { perMinute: 5_000, perDay: 100_000 } },
  // Two requests a minute, and never banned here: the tests below run into its limit on purpose.
  { name: 'tiny', plan: 'enterprise', limits: { perMinute: 2, perDay: 1_000 }, ban: { seconds: 1, threshold: 1_000 } },
  // Banned for 15 minutes by its first refusal.
  { name: 'banned', plan: 'enterprise', limits: { perMinute: 1, perDay: 1_000 }, ban: { seconds: 900, threshold: 1 } },
];

let server: Running;
let baseUrl: string;
beforeAll(async () => {
  server = await spawnServer({ args: ['--keys', writeKeysFile(KEYS)] });
  baseUrl = `${server.url}/v1`;
});
afterAll(() => server.stop());

/** A `fetch` that records what it sends, then sends it. */
function recording() {
  const sent: Array<{ method: string; url: string; idempotencyKey: string | null; failed: boolean }> = [];
  const fetch: Fetch = async (url, init) => {
    const entry = {
      method: init.method ?? 'GET',
      url,
      idempotencyKey: new Headers(init.headers).get('idempotency-key'),
      failed: false,
    };
    sent.push(entry);
    try {
      return await globalThis.fetch(url, init);
    } catch (error) {
      entry.failed = true;
      throw error;
    }
  };
  return { sent, fetch };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('every operation', () => {
  test('createPet, listPets, getPet answer the contract bodies; the deprecation warning comes once', async () => {
    const warnings: string[] = [];
    const petstore = createClient({ apiKey: tokenOf('ops'), baseUrl, logger: { warn: (m) => warnings.push(m) } });
    const rex: Pet = await petstore.createPet({ name: 'Rex', categoryId: 1 });
    expect(rex).toEqual({ id: 1, name: 'Rex', categoryId: 1, status: 'available' });
    const tom = await petstore.createPet({ name: 'Tom', categoryId: 2, status: 'sold' }, { idempotencyKey: 'tom-1' });
    expect(tom).toEqual({ id: 2, name: 'Tom', categoryId: 2, status: 'sold' });
    // The same key and body again: the server answers the first create, and stores nothing.
    expect(
      await petstore.createPet({ name: 'Tom', categoryId: 2, status: 'sold' }, { idempotencyKey: 'tom-1' }),
    ).toEqual(tom);

    expect(await petstore.listPets()).toEqual([rex, tom]);
    expect(await petstore.listPets({ status: 'sold' })).toEqual([tom]);
    expect(await petstore.listPets({ limit: 1 })).toEqual([rex]);
    expect(await petstore.getPet(2)).toEqual(tom);
    expect(await petstore.getPet(1)).toEqual(rex);
    expect(warnings).toEqual([
      'petstore: getPet is deprecated since 2026-01-01 and will be removed on 2030-12-05 ' +
        `(Sunset: Thu, 05 Dec 2030 00:00:00 GMT); use ${baseUrl}/pets instead.`,
    ]);
  });

  test('a 400 and a 404 are PetstoreError with the server code, message and headers; neither is retried', async () => {
    const { sent, fetch } = recording();
    const petstore = createClient({ apiKey: tokenOf('ops'), baseUrl, fetch, logger: { warn: () => {} } });
    const invalid = await rejection(petstore.createPet({ name: '', categoryId: 1 }));
    expect(invalid).toBeInstanceOf(PetstoreError);
    expect(invalid).toMatchObject({
      name: 'PetstoreError',
      code: 'invalid_request',
      status: 400,
      message: 'name: must be a string of 1 to 100 characters without the NUL character U+0000.',
    });
    expect((invalid as PetstoreError).headers.get('x-ratelimit-limit')).toBe('5000');

    const missing = await rejection(petstore.getPet(999_999));
    expect(missing).toBeInstanceOf(PetstoreError);
    expect(missing).toMatchObject({ code: 'not_found', status: 404, message: 'No pet has id 999999.' });
    expect(sent.map((s) => s.method)).toEqual(['POST', 'GET']);
  });

  test('placeOrder, getOrder, listOrders, completeOrder and cancelOrder: typed methods, contract bodies and errors', async () => {
    const { sent, fetch } = recording();
    const petstore = createClient({ apiKey: tokenOf('ops'), baseUrl, fetch });
    const pup = await petstore.createPet({ name: 'Pup', categoryId: 4 });
    const kit = await petstore.createPet({ name: 'Kit', categoryId: 4 });
    const order = await petstore.placeOrder({ petId: pup.id });
    expect(order).toMatchObject({ petId: pup.id, status: 'placed' });
    expect(order.id).toMatch(/^ord_[0-9a-f]{32}$/);
    // A create: the client keys it, so a lost answer is retried without a second order.
    expect(sent.at(-1)?.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(await petstore.getOrder(order.id)).toEqual(order);
    expect(await rejection(petstore.placeOrder({ petId: pup.id }))).toMatchObject({
      code: 'pet_unavailable',
      status: 409,
    });
    const other = await petstore.placeOrder({ petId: kit.id });
    const mine = await petstore.listOrders({ limit: 100 });
    expect(mine.map((o) => o.id).sort()).toEqual([order.id, other.id].sort());
    expect((await petstore.completeOrder(order.id)).status).toBe('completed');
    expect((await petstore.getPet(pup.id)).status).toBe('sold');
    expect((await petstore.cancelOrder(other.id)).status).toBe('cancelled');
    expect(await rejection(petstore.completeOrder(other.id))).toMatchObject({ code: 'order_closed', status: 409 });
    expect((await petstore.listOrders({ status: 'cancelled' })).map((o) => o.id)).toEqual([other.id]);
  });

  test('a wrong key is PetstoreError unauthorized, sent once', async () => {
    const { sent, fetch } = recording();
    const keyless = createClient({ apiKey: 'psk_not-a-key', baseUrl, fetch });
    expect(await rejection(keyless.listPets())).toMatchObject({ code: 'unauthorized', status: 401 });
    expect(sent).toHaveLength(1);
  });
});

describe('a create whose answer is lost', () => {
  let proxy: Server;
  let proxyUrl: string;
  beforeAll(async () => {
    proxy = dropFirstPostAnswer(server.port);
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const address = proxy.address();
    if (typeof address !== 'object' || address === null) throw new Error('proxy has no port');
    proxyUrl = `http://127.0.0.1:${address.port}/v1`;
  });
  afterAll(() => new Promise<void>((resolve) => proxy.close(() => resolve()).emit('stop')));

  test('is sent again with the same Idempotency-Key: exactly one pet, and the client returns it', async () => {
    const before = await createClient({ apiKey: tokenOf('ops'), baseUrl }).listPets({ limit: 100 });
    const { sent, fetch } = recording();
    const petstore = createClient({ apiKey: tokenOf('ops'), baseUrl: proxyUrl, fetch });
    const kit = await petstore.createPet({ name: 'Kit', categoryId: 3 });
    const after = await createClient({ apiKey: tokenOf('ops'), baseUrl }).listPets({ limit: 100 });

    expect(kit).toEqual({ id: (before.at(-1)?.id ?? 0) + 1, name: 'Kit', categoryId: 3, status: 'available' });
    expect(after).toEqual([...before, kit]);
    expect(sent.map((s) => [s.method, s.failed])).toEqual([
      ['POST', true],
      ['POST', false],
    ]);
    expect(sent[0]?.idempotencyKey).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(sent[1]?.idempotencyKey).toBe(sent[0]?.idempotencyKey ?? 'none');
  });
});

/**
 * A TCP proxy to the server that lets the first POST through and closes the client's connection
 * when its answer comes back, as a timeout or a reset does: the pet is made, the client never
 * hears of it.
 */
function dropFirstPostAnswer(port: number): Server {
  let dropped = false;
  const proxy = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    // close() waits for open connections: the client's keep-alive one would hold it forever.
    proxy.once('stop', () => client.destroy());
    let dropping = false;
    client.on('data', (chunk) => {
      if (!dropped && chunk.toString('latin1').startsWith('POST ')) dropped = dropping = true;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!dropping) return void client.write(chunk);
      client.destroy();
      upstream.destroy();
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  return proxy;
}

// After the lost create, whose check counts on the ids before it: a removed pet's id is never given again.
describe('changing and removing', () => {
  test('updatePet and deletePet: a merge patch with If-Match from etagOf; a stale tag is precondition_failed', async () => {
    const petstore = createClient({ apiKey: tokenOf('ops'), baseUrl, logger: { warn: () => {} } });
    const kit = await petstore.createPet({ name: 'Kit', categoryId: 3 });
    const tag = petstore.etagOf(kit);
    expect(tag).toMatch(/^"[0-9]+-[0-9]+"$/);
    const held = await petstore.updatePet(kit.id, { status: 'pending' }, { ifMatch: tag as string });
    expect(held).toEqual({ ...kit, status: 'pending' });
    expect(petstore.etagOf(held)).not.toBe(tag);
    const stale = await rejection(petstore.updatePet(kit.id, { status: 'sold' }, { ifMatch: tag as string }));
    expect(stale).toBeInstanceOf(PetstoreError);
    expect([(stale as PetstoreError).status, (stale as PetstoreError).code]).toEqual([412, 'precondition_failed']);
    const sold = await petstore.updatePet(kit.id, { status: 'sold' }, { ifMatch: petstore.etagOf(held) as string });
    const back = await rejection(petstore.updatePet(kit.id, { status: 'available' }));
    expect([(back as PetstoreError).status, (back as PetstoreError).code]).toEqual([409, 'invalid_transition']);
    expect(await petstore.deletePet(kit.id, { ifMatch: petstore.etagOf(sold) as string })).toBeUndefined();
    const gone = await rejection(petstore.getPet(kit.id));
    expect([(gone as PetstoreError).status, (gone as PetstoreError).code]).toEqual([404, 'not_found']);
  });
});

test('listAllPets walks 250 pets in three pages of 100, each pet once, in order', async () => {
  const keys: KeySpec = { name: 'pages', plan: 'enterprise', limits: { perMinute: 5_000, perDay: 100_000 } };
  const own = await spawnServer({ args: ['--keys', writeKeysFile([keys])] });
  try {
    const { sent, fetch } = recording();
    const petstore = createClient({ apiKey: tokenOf('pages'), baseUrl: `${own.url}/v1`, fetch });
    for (let first = 1; first <= 250; first += 25) {
      await Promise.all(
        Array.from({ length: 25 }, (_, i) => petstore.createPet({ name: `pet ${first + i}`, categoryId: first + i })),
      );
    }
    sent.length = 0;
    const seen: number[] = [];
    for await (const pet of petstore.listAllPets({ limit: 100 })) seen.push(pet.id);
    expect(seen).toEqual(Array.from({ length: 250 }, (_, i) => i + 1));
    // Three requests: the first page, then the two the Link headers named (their cursors are opaque).
    const pages = sent.map((s) => new URL(s.url));
    expect(pages.map((u) => [u.pathname, [...u.searchParams.keys()]])).toEqual([
      ['/v1/pets', ['limit']],
      ['/v1/pets', ['limit', 'cursor']],
      ['/v1/pets', ['limit', 'cursor']],
    ]);
    expect(pages.map((u) => u.searchParams.get('limit'))).toEqual(['100', '100', '100']);
  } finally {
    await own.stop();
  }
});

describe('the rate limit, seen by the caller', () => {
  // `used` spends the key's two requests; each test then meets the limit in its own way.
  let used: PetstoreClient;
  const held: RateLimitInfo[] = [];
  const { sent, fetch } = recording();
  beforeAll(async () => {
    used = createClient({ apiKey: tokenOf('tiny'), baseUrl, fetch, onRateLimit: (info) => void held.push(info) });
    await used.listPets();
    await used.listPets();
  });

  test('with maxRetries 0, a 429 is thrown at once as PetstoreError rate_limited with Retry-After', async () => {
    const petstore = createClient({ apiKey: tokenOf('tiny'), baseUrl, maxRetries: 0 });
    const error = await rejection(petstore.listPets());
    expect(error).toBeInstanceOf(PetstoreError);
    expect(error).toMatchObject({ code: 'rate_limited', status: 429 });
    expect(Number((error as PetstoreError).headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  test('onRateLimit hears of the 429 before the wait, and returning false fails the call with it', async () => {
    const told: RateLimitInfo[] = [];
    const petstore = createClient({
      apiKey: tokenOf('tiny'),
      baseUrl,
      onRateLimit: (info) => {
        told.push(info);
        return false;
      },
    });
    const error = await rejection(petstore.listPets());
    expect(error).toMatchObject({ code: 'rate_limited', status: 429 });
    expect(told.map(({ operationId, reason, attempt }) => ({ operationId, reason, attempt }))).toEqual([
      { operationId: 'listPets', reason: 'rate_limited', attempt: 1 },
    ]);
    expect(told[0]?.error).toBe(error as PetstoreError);
    const retryAfter = Number((error as PetstoreError).headers.get('retry-after'));
    expect(told[0]?.waitMs).toBeGreaterThanOrEqual(retryAfter * 1000);
  });

  test('an AbortSignal cancels the wait after a 429: one request, no retry', async () => {
    const told: RateLimitInfo[] = [];
    const { sent, fetch } = recording();
    const petstore = createClient({
      apiKey: tokenOf('tiny'),
      baseUrl,
      fetch,
      onRateLimit: (info) => void told.push(info),
    });
    const controller = new AbortController();
    const call = petstore.listPets({}, { signal: controller.signal });
    while (told.length === 0) await Bun.sleep(10);
    controller.abort(new Error('the caller gave up'));
    expect(await rejection(call)).toEqual(new Error('the caller gave up'));
    expect(told.map((h) => h.reason)).toEqual(['rate_limited']);
    expect(sent).toHaveLength(1);
  });

  test('a client whose answers said nothing is left holds the next call back instead of sending it', async () => {
    sent.length = 0;
    const controller = new AbortController();
    const call = used.getPet(1, { signal: controller.signal });
    while (held.length === 0) await Bun.sleep(10);
    controller.abort(new Error('stop'));
    expect(await rejection(call)).toEqual(new Error('stop'));
    expect(held.map(({ operationId, reason, attempt }) => ({ operationId, reason, attempt }))).toEqual([
      { operationId: 'getPet', reason: 'paced', attempt: 0 },
    ]);
    expect(held[0]?.waitMs).toBeGreaterThan(1_000);
    expect(sent).toEqual([]);
  });

  test('a ban is thrown at once, and the calls after it are held, not sent', async () => {
    await createClient({ apiKey: tokenOf('banned'), baseUrl }).listPets();
    const { sent, fetch } = recording();
    const told: RateLimitInfo[] = [];
    const onRateLimit = (info: RateLimitInfo) => {
      told.push(info);
      return false;
    };
    const petstore = createClient({ apiKey: tokenOf('banned'), baseUrl, fetch, onRateLimit });
    const banned = await rejection(petstore.listPets());
    expect(banned).toMatchObject({ code: 'key_banned', status: 429 });
    expect((banned as PetstoreError).headers.get('retry-after')).toBe('900');
    expect(sent).toHaveLength(1);

    // onRateLimit answers false to the hold: the call fails with the client's own rate_limited.
    const held = await rejection(petstore.listPets());
    expect(held).toBeInstanceOf(PetstoreError);
    expect(held).toMatchObject({ code: 'rate_limited', status: 429 });
    // The ban's 900 s, and up to two more: the whole seconds of Date and of the reset, and the spread.
    const seconds = Number((held as PetstoreError).headers.get('retry-after'));
    expect(seconds).toBeGreaterThanOrEqual(900);
    expect(seconds).toBeLessThanOrEqual(902);
    expect((held as PetstoreError).message).toBe(
      `The key has no request left for ${seconds} s; the call was not sent.`,
    );
    expect(told.map(({ reason, attempt }) => ({ reason, attempt }))).toEqual([{ reason: 'paced', attempt: 0 }]);
    expect(sent).toHaveLength(1);
  });
});
