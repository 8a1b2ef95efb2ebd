import { afterEach, describe, expect, test } from 'bun:test';
import { SpanKind } from '@opentelemetry/api';
import { decodeExport, type ExportedSpan, KIND, STATUS } from '../../test/otlp-receiver.ts';
import { RecordEncoder } from './otlp.ts';
import { inRequest, type RequestState } from './request-state.ts';
import { CHILD_END, MAX_CHILDREN, TraceRing } from './ring.ts';
import {
  beginRequest,
  type ClientSpan,
  childSpan,
  clientSpan,
  closeChild,
  failChild,
  finishRequest,
  type KeepRules,
  NO_CHILD,
  openChild,
  useRecorder,
} from './spans.ts';

interface FakeRequest {
  method: string;
  url: string;
  hasValidKey?: boolean;
  tracestate?: string;
  consumer?: string;
}

const start = {
  tracestate: (r: FakeRequest) => r.tracestate,
  hasValidKey: (r: FakeRequest) => r.hasValidKey === true,
};
/** What a kept record says of its request: the request's method and URL, the rest fixed. */
const details = {
  method: (r: FakeRequest) => r.method,
  url: (r: FakeRequest) => r.url,
  route: () => '/v1/pets',
  operation: () => 'listPets',
  consumer: (r: FakeRequest) => r.consumer,
  outcome: () => 'admitted',
  client: () => '10.0.0.1',
};
const source = { resource: { 'service.name': 'test' }, scope: { name: 'petstore', version: '1.0.0' } };
const GET = { method: 'GET', url: 'http://localhost/v1/pets?limit=2' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A ring of `size` records, recorded into with the head decision `head` and `rules`. */
function recorder(size: number, head: boolean, rules: Partial<KeepRules> = {}) {
  const ring = new TraceRing(size);
  const capped: number[] = [];
  useRecorder(ring, undefined, () => head, {
    slowerThanMs: 0,
    errors: false,
    maxPerSecond: 100,
    capped: (n) => capped.push(n),
    ...rules,
  });
  return { ring, capped };
}

/** The records the export would read, encoded as it sends them and decoded by protobufjs. */
function exported(ring: TraceRing): ExportedSpan[] {
  const encoder = new RecordEncoder(ring, source);
  ring.drain((r) => encoder.add(r));
  return encoder.spans === 0 ? [] : decodeExport(encoder.take());
}

const finish = (state: RequestState, status: number, keyed = true, request: FakeRequest = GET) =>
  finishRequest(state, status, keyed, details, keyed ? { ...request, consumer: 'acme' } : request);

afterEach(() => useRecorder(undefined, undefined));

describe('every request recorded alike; kept by the head or the tail', () => {
  test('a head-sampled request is exported with its children nested as they ran, and its attributes', async () => {
    const { ring } = recorder(8, true);
    const state = beginRequest('r1', undefined, start, GET);
    await inRequest(state, () =>
      childSpan(
        'gateway decide',
        {},
        () => childSpan('EVALSHA', { 'db.system.name': 'redis' }, async () => 'ok', { kind: SpanKind.CLIENT }),
        { valueKey: 'petstore.gateway.cost', outcome: { key: 'petstore.gateway.decision', of: () => 'admitted' } },
        2,
      ),
    );
    await inRequest(state, () =>
      childSpan('list pets', { 'db.operation.name': 'list' }, async () => {
        throw new TypeError('gone');
      }).catch(() => undefined),
    );
    expect(finish(state, 200)).toBe(true);
    expect(state.sampled).toBe(true);
    const [server, decide, redis, list] = exported(ring);
    expect(server).toMatchObject({
      name: 'GET /v1/pets',
      kind: KIND.server,
      status: STATUS.unset,
      attributes: {
        'http.request.method': 'GET',
        'url.scheme': 'http',
        'url.path': '/v1/pets',
        'http.route': '/v1/pets',
        'client.address': '10.0.0.1',
        'petstore.operation': 'listPets',
        'petstore.consumer.name': 'acme',
        'petstore.gateway.outcome': 'admitted',
        'http.response.status_code': 200,
      },
    });
    expect(server).toMatchObject({ traceId: state.traceId, spanId: state.spanId, parentSpanId: '' });
    expect(server?.attributes['petstore.kept_by']).toBeUndefined();
    expect(decide?.attributes).toEqual({ 'petstore.gateway.cost': 2, 'petstore.gateway.decision': 'admitted' });
    expect(decide?.parentSpanId).toBe(state.spanId as string);
    expect(redis).toMatchObject({ name: 'EVALSHA', kind: KIND.client, attributes: { 'db.system.name': 'redis' } });
    expect(redis?.parentSpanId).toBe(decide?.spanId as string);
    expect(list).toMatchObject({
      name: 'list pets',
      status: STATUS.error,
      statusMessage: 'gone',
      attributes: { 'db.operation.name': 'list', 'error.type': 'TypeError' },
    });
    expect(list?.parentSpanId).toBe(state.spanId as string);
    // Four distinct span ids in one trace.
    expect(new Set([server, decide, redis, list].map((s) => s?.spanId)).size).toBe(4);
    expect([decide, redis, list].every((s) => s?.traceId === state.traceId)).toBe(true);
    expect(ring.kept).toBe(0);
  });

  test('not head-sampled: a fast 200 is not kept, a 503 is, a slow one is; both say the tail kept them', async () => {
    const { ring } = recorder(8, false, { errors: true, slowerThanMs: 30 });
    const fast = beginRequest('fast', undefined, start, GET);
    expect(finish(fast, 200)).toBe(false);
    const failed = beginRequest('failed', undefined, start, GET);
    expect(finish(failed, 503)).toBe(true);
    expect(failed.sampled).toBe(true);
    const slow = beginRequest('slow', undefined, start, GET);
    await sleep(40);
    expect(finish(slow, 200)).toBe(true);
    const servers = exported(ring).filter((s) => s.kind === KIND.server);
    expect(servers.map((s) => [s.traceId, s.status, s.attributes['petstore.kept_by']])).toEqual([
      [failed.traceId, STATUS.error, 'tail'],
      [slow.traceId, STATUS.unset, 'tail'],
    ]);
  });

  test('a caller without a valid key is never kept by the tail', () => {
    const { ring } = recorder(8, false, { errors: true, slowerThanMs: 1 });
    const state = beginRequest('keyless', undefined, start, GET);
    expect(finish(state, 503, false)).toBe(false);
    expect(exported(ring)).toEqual([]);
  });

  test('the tail keeps at most so many a second; the excess is counted in spans', () => {
    const { ring, capped } = recorder(16, false, { errors: true, maxPerSecond: 3 });
    const verdicts = Array.from({ length: 5 }, (_, i) => finish(beginRequest(`r${i}`, undefined, start, GET), 503));
    // The five fall in one second but for a second's turn between them: then the count starts
    // again.
    expect(verdicts.filter(Boolean).length).toBeGreaterThanOrEqual(3);
    expect(verdicts.slice(0, 3)).toEqual([true, true, true]);
    expect(capped.length + verdicts.filter(Boolean).length).toBe(5);
    expect(capped.every((n) => n === 1)).toBe(true);
    expect(ring.kept).toBe(verdicts.filter(Boolean).length);
  });

  test('a full ring overwrites the oldest; a kept record not yet read is counted with its children', async () => {
    const { ring } = recorder(4, true);
    for (let i = 0; i < 6; i++) {
      const state = beginRequest(`r${i}`, undefined, start, GET);
      await inRequest(state, () => childSpan('list pets', {}, async () => 1));
      finish(state, 200);
    }
    // Six kept records of two spans each in a ring of four: the first two were overwritten unread.
    expect(ring.overwritten).toBe(4);
    expect(exported(ring).length).toBe(8);
  });

  test('a request whose record is overwritten while it is served keeps the head decision and counts as lost', () => {
    const { ring } = recorder(2, true);
    const first = beginRequest('first', undefined, start, GET);
    finish(beginRequest('second', undefined, start, GET), 200);
    finish(beginRequest('third', undefined, start, GET), 200);
    expect(finish(first, 200)).toBe(true);
    expect(ring.overwritten).toBe(1);
    expect(exported(ring).map((s) => s.name)).toEqual(['GET /v1/pets', 'GET /v1/pets']);
  });

  test('a child opened and closed by its caller: its number, its outcome, a failure, and a handle outliving its record', async () => {
    const { ring } = recorder(2, true);
    const outcome = { key: 'petstore.gateway.decision', of: (v: string) => v };
    const options = { valueKey: 'petstore.gateway.cost', outcome };
    const state = beginRequest('r', undefined, start, GET);
    await inRequest(state, async () => {
      const decide = openChild('gateway decide', {}, options, 2);
      await sleep(1);
      closeChild(decide, 'admitted', outcome);
      const store = openChild('list pets', { 'db.operation.name': 'list' });
      failChild(store, new RangeError('store unreachable'));
    });
    finish(state, 200);
    const spans = exported(ring);
    expect(spans.find((s) => s.name === 'gateway decide')?.attributes).toEqual({
      'petstore.gateway.cost': 2,
      'petstore.gateway.decision': 'admitted',
    });
    const failed = spans.find((s) => s.name === 'list pets') as ExportedSpan;
    expect([failed.attributes['error.type'], failed.status, failed.statusMessage]).toEqual([
      'RangeError',
      STATUS.error,
      'store unreachable',
    ]);
    // Outside a recorded request, no child.
    expect(openChild('gateway decide', {})).toBe(NO_CHILD);
    // A request whose record two others took meanwhile: its child's close writes nothing to theirs.
    const late = beginRequest('late', undefined, start, GET);
    const child = await inRequest(late, async () => openChild('gateway decide', {}));
    expect(child).not.toBe(NO_CHILD);
    const others = [beginRequest('a', undefined, start, GET), beginRequest('b', undefined, start, GET)];
    const ends = () => Array.from({ length: ring.size * MAX_CHILDREN }, (_, i) => ring.childValue(i, CHILD_END));
    const before = ends();
    closeChild(child, 'admitted', outcome);
    expect(ends()).toEqual(before);
    for (const other of others) finish(other, 200);
    expect(exported(ring).map((s) => s.name)).toEqual(['GET /v1/pets', 'GET /v1/pets']);
  });

  test('without a recorder nothing is recorded and children just run', async () => {
    const state = beginRequest('plain', undefined, start, GET);
    expect(state.record).toBeUndefined();
    expect(await inRequest(state, () => childSpan('list pets', {}, async () => 7))).toBe(7);
    expect(finish(state, 503)).toBe(false);
  });
});

describe('a slow request in a ring that turns over', () => {
  test('kept by the tail for its time although more requests than records started meanwhile', async () => {
    const { ring } = recorder(4, false, { slowerThanMs: 30 });
    const slow = beginRequest('slow', undefined, start, GET);
    for (let i = 0; i < 10; i++) finish(beginRequest(`fast-${i}`, undefined, start, GET), 200);
    await sleep(40);
    expect(finish(slow, 200)).toBe(true);
    expect(exported(ring).map((s) => s.attributes['petstore.kept_by'])).toEqual(['tail']);
    expect(ring.overwritten).toBe(0);
  });

  test('a head-sampled request whose record was taken anyway answers that it is not exported', () => {
    const { ring } = recorder(2, true);
    const first = beginRequest('first', undefined, start, GET);
    // Both records open: the third takes one anyway, after passing over the open ones.
    beginRequest('second', undefined, start, GET);
    beginRequest('third', undefined, start, GET);
    expect(finish(first, 200)).toBe(false);
    expect(first.sampled).toBe(false);
    expect(ring.overwritten).toBe(1);
  });
});

describe('what a caller sends is copied into the ring, bounded', () => {
  const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

  test('a method outside the HTTP conventions is recorded as _OTHER and never fills the intern table', () => {
    const { ring } = recorder(8, true);
    const interned = ring.strings.values.length;
    for (let i = 0; i < 5000; i++) {
      finish(beginRequest(`r${i}`, undefined, start, GET), 200, true, { ...GET, method: `BREW${i}` });
      ring.drain(() => {});
    }
    finish(beginRequest('last', undefined, start, GET), 200, true, { ...GET, method: 'BREW' });
    const [server] = exported(ring);
    expect(server?.name).toBe('HTTP /v1/pets');
    expect(server?.attributes['http.request.method']).toBe('_OTHER');
    // Route, operation and outcome: the only strings the 5,001 requests added.
    expect(ring.strings.values.length).toBe(interned + 3);
  });

  test("a caller's tracestate is exported as sent, or cut to the whole members that fit in 512 bytes", () => {
    const { ring } = recorder(8, true);
    const short = 'vendor=abc,other=d';
    const members = Array.from({ length: 20 }, (_, i) => `k${String(i).padStart(2, '0')}=${'v'.repeat(26)}`);
    finish(beginRequest('short', PARENT, start, { ...GET, tracestate: short }), 200);
    finish(beginRequest('long', PARENT, start, { ...GET, tracestate: members.join(',') }), 200);
    const [first, second] = exported(ring).map((s) => s.traceState);
    expect(first).toBe(short);
    // Each member is 30 bytes and a comma: 16 members are 495 bytes, 17 would be 526.
    expect(second).toBe(members.slice(0, 16).join(','));
  });
});

describe("a webhook delivery's client span: a trace of its own, linked to the request that caused it", () => {
  const REQUEST = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };
  const LINKED = `00-${REQUEST.traceId}-${REQUEST.spanId}-01`;
  const ATTRIBUTES = { 'http.request.method': 'POST', 'server.address': 'hooks.example', 'server.port': 443 };
  interface Attempt {
    ok: boolean;
    status?: number;
    error?: string;
  }
  const OPTIONS = {
    outcome: (r: Attempt) => (r.status === undefined ? {} : { 'http.response.status_code': r.status }),
    error: (r: Attempt) => (r.ok ? undefined : r.error),
  };

  /** Deliveries exported when the span they link to was (`parentbased_*`), their spans kept. */
  function deliveries() {
    const ended: ClientSpan[] = [];
    useRecorder(new TraceRing(8), { sampled: (_id, linkSampled) => linkSampled, end: (s) => ended.push(s) });
    return ended;
  }

  /** `spans` encoded into one export request, beside a kept request's, and decoded. */
  function encoded(spans: ClientSpan[]): ExportedSpan[] {
    const { ring } = recorder(8, true);
    finish(beginRequest('r1', undefined, start, GET), 200);
    const encoder = new RecordEncoder(ring, source);
    ring.drain((r) => encoder.add(r));
    for (const s of spans) encoder.addClient(s);
    return decodeExport(encoder.take());
  }

  test('answered 2xx: exported with its attributes and status code, its link flagged sampled, the traceparent it sent naming it', async () => {
    const ended = deliveries();
    const sent: (string | undefined)[] = [];
    const result = await clientSpan(
      'POST',
      ATTRIBUTES,
      LINKED,
      async (traceparent) => {
        sent.push(traceparent);
        return { ok: true, status: 204 };
      },
      OPTIONS,
    );
    expect(result).toEqual({ ok: true, status: 204 });
    const [traceId, spanId, flags] = (sent[0] ?? '').split('-').slice(1);
    expect(flags).toBe('01');
    const spans = encoded(ended);
    expect(spans.map((s) => [s.name, s.kind])).toEqual([
      ['GET /v1/pets', KIND.server],
      ['POST', KIND.client],
    ]);
    const delivery = spans[1] as ExportedSpan;
    expect(delivery).toMatchObject({
      traceId,
      spanId,
      parentSpanId: '',
      status: STATUS.unset,
      statusMessage: '',
      flags: 0x101,
      links: [{ ...REQUEST, flags: 0x301 }],
      attributes: { ...ATTRIBUTES, 'http.response.status_code': 204 },
      resource: { 'service.name': 'test' },
    });
    expect(Object.keys(delivery.attributes)).toHaveLength(4);
    expect(delivery.start <= delivery.end).toBe(true);
  });

  test("answered 503: its status Error with the attempt's error; thrown: error.type and the error's text too", async () => {
    const ended = deliveries();
    await clientSpan('POST', ATTRIBUTES, LINKED, async () => ({ ok: false, status: 503, error: 'HTTP 503' }), OPTIONS);
    const thrown = clientSpan('POST', ATTRIBUTES, LINKED, async () => {
      throw new TypeError('connect ECONNREFUSED');
    });
    await expect(thrown).rejects.toThrow('connect ECONNREFUSED');
    const [answered, failed] = encoded(ended).slice(1);
    expect(answered).toMatchObject({
      status: STATUS.error,
      statusMessage: 'HTTP 503',
      attributes: { ...ATTRIBUTES, 'http.response.status_code': 503 },
    });
    expect(failed).toMatchObject({
      status: STATUS.error,
      statusMessage: 'connect ECONNREFUSED',
      attributes: { ...ATTRIBUTES, 'error.type': 'TypeError' },
    });
  });

  test('not exported (its link not sampled): nothing recorded, its ids sent flagged -00; nothing recorded at all: nothing sent', async () => {
    const ended = deliveries();
    const sent: (string | undefined)[] = [];
    const work = async (traceparent: string | undefined) => {
      sent.push(traceparent);
      return { ok: true, status: 200 };
    };
    await clientSpan('POST', ATTRIBUTES, `00-${REQUEST.traceId}-${REQUEST.spanId}-00`, work, OPTIONS);
    expect(ended).toEqual([]);
    expect(sent[0]).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    expect(sent[0]).not.toContain(REQUEST.traceId);
    useRecorder(undefined, undefined);
    await clientSpan('POST', ATTRIBUTES, LINKED, work, OPTIONS);
    expect(sent[1]).toBeUndefined();
  });
});
