import { afterEach, expect, test } from 'bun:test';
import { decodeExport, type ExportedSpan } from '../../../test/otlp-receiver.ts';
import { RecordEncoder } from '../../trace/otlp.ts';
import { inRequest } from '../../trace/request-state.ts';
import { TraceRing } from '../../trace/ring.ts';
import { beginRequest, finishRequest, useRecorder } from '../../trace/spans.ts';
import { OUTBOX_CALLS, STORE_CALLS } from '../store.ts';
import { tracedCalls } from './traced.ts';

const GET = { method: 'GET', url: 'http://localhost/v1/pets' };
const start = { tracestate: () => undefined, hasValidKey: () => true };
const details = {
  method: () => 'GET',
  url: () => GET.url,
  route: () => '/v1/pets',
  operation: () => 'listPets',
  consumer: () => 'acme',
  outcome: () => 'admitted',
  client: () => '10.0.0.1',
};

afterEach(() => useRecorder(undefined, undefined));

/**
 * The store spans of one request that makes `calls`, as the export sends them, the request's own
 * left out.
 */
async function spansOf(calls: (keyof typeof STORE_CALLS | keyof typeof OUTBOX_CALLS)[]): Promise<ExportedSpan[]> {
  const ring = new TraceRing(4);
  useRecorder(ring, undefined, () => true, { slowerThanMs: 0, errors: false, maxPerSecond: 100, capped: () => {} });
  const call = tracedCalls((run) => run(), 'sqlite');
  const state = beginRequest('r1', undefined, start, GET);
  for (const name of calls) {
    const spec =
      name in STORE_CALLS
        ? STORE_CALLS[name as keyof typeof STORE_CALLS]
        : OUTBOX_CALLS[name as keyof typeof OUTBOX_CALLS];
    await inRequest(state, () => call(async () => ({ outcome: 'created' }), spec));
  }
  finishRequest(state, 200, true, details, GET);
  const encoder = new RecordEncoder(ring, {
    resource: { 'service.name': 'test' },
    scope: { name: 'petstore', version: '1' },
  });
  ring.drain((r) => encoder.add(r));
  return decodeExport(encoder.take()).slice(1);
}

test("each call's span is named and attributed by the table it is about; ping reads none", async () => {
  const [list, createOnce, placeOrder, ping, claim] = await spansOf([
    'list',
    'createOnce',
    'placeOrder',
    'ping',
    'claim',
  ]);
  const sqlite = { 'db.system.name': 'sqlite' };
  expect(list).toMatchObject({ name: 'list pets' });
  expect(list?.attributes).toEqual({ ...sqlite, 'db.operation.name': 'list', 'db.collection.name': 'pets' });
  expect(createOnce).toMatchObject({ name: 'createOnce pets' });
  expect(createOnce?.attributes).toEqual({
    ...sqlite,
    'db.operation.name': 'createOnce',
    'db.collection.name': 'pets',
    'petstore.idempotency.outcome': 'created',
  });
  expect(placeOrder).toMatchObject({ name: 'placeOrder orders' });
  expect(placeOrder?.attributes).toEqual({
    ...sqlite,
    'db.operation.name': 'placeOrder',
    'db.collection.name': 'orders',
  });
  expect(ping).toMatchObject({ name: 'ping' });
  expect(ping?.attributes).toEqual({ ...sqlite, 'db.operation.name': 'ping' });
  expect(claim).toMatchObject({ name: 'claim webhook_outbox' });
  expect(claim?.attributes).toEqual({
    ...sqlite,
    'db.operation.name': 'claim',
    'db.collection.name': 'webhook_outbox',
  });
});

test("the expiry of due orders keeps its span's name, `expireOrders orders`, which stored traces select on", async () => {
  const [expiry] = await spansOf(['expireDueOrders']);
  expect(expiry).toMatchObject({ name: 'expireOrders orders' });
  expect(expiry?.attributes).toEqual({
    'db.system.name': 'sqlite',
    'db.operation.name': 'expireOrders',
    'db.collection.name': 'orders',
  });
});
