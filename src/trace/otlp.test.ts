import { describe, expect, test } from 'bun:test';
import { SpanKind } from '@opentelemetry/api';
import { decodeExport, ExportRequest } from '../../test/otlp-receiver.ts';
import { RecordEncoder } from './otlp.ts';
import { CLIENT, FAILED, HEAD, MAX_CHILDREN, REMOTE, TAIL, TraceRing } from './ring.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const PARENT = 'b7ad6b7169203331';
const source = {
  resource: { 'service.name': 'petstore', 'deployment.environment.name': 'staging', 'service.version': '1.2.3' },
  scope: { name: 'petstore', version: '1.2.3' },
};
/** An attribute set of every kind of value an `AnyValue` carries. */
const MIXED = { 'db.system.name': 'redis', 'net.peer.port': 6379, 'x.ratio': 0.25, 'x.on': true, 'x.list': ['a', 'b'] };

/**
 * A kept record written as the request path writes it: a remote parent and its `tracestate`, a
 * 503 kept by the tail, a child under the server span and one under it that failed.
 */
function record(ring: TraceRing, url: string): number {
  const r = ring.claim(1_764_300_000_123.4568);
  ring.flags[r] = TAIL | REMOTE | FAILED;
  ring.writeIds(r, TRACE, SPAN, PARENT);
  ring.traceState.writeList(r, 'vendor=abc,other=d');
  const decide = ring.openChild(r, ring.strings.id('gateway decide'), 0, 0, 1_764_300_000_124);
  ring.setChildNumber(r * MAX_CHILDREN + decide, ring.strings.id('petstore.gateway.cost'), 2);
  const redis = ring.openChild(r, ring.strings.id('EVALSHA'), ring.attributeSets.id(MIXED), CLIENT, 1_764_300_000_125);
  ring.setChildError(r * MAX_CHILDREN + redis, ring.strings.id('TimeoutError'));
  ring.errorChild[r] = redis;
  ring.error.write(r, 'Redis took longer than 50 ms');
  ring.closeChild(r * MAX_CHILDREN + redis, 1_764_300_000_175.5);
  ring.closeChild(r * MAX_CHILDREN + decide, 1_764_300_000_176);
  ring.end[r] = 1_764_300_000_180.25;
  ring.status[r] = 503;
  ring.method[r] = ring.methodId('GET');
  ring.url.write(r, url);
  ring.route[r] = ring.strings.id('/v1/pets/:id');
  ring.operation[r] = ring.strings.id('getPet');
  ring.outcome[r] = ring.strings.id('admitted');
  ring.consumer.write(r, 'acmé');
  ring.client.write(r, '10.0.0.7');
  ring.settle(r, true);
  return r;
}

const kv = (key: string, value: object) => ({ key, value });

describe('RecordEncoder: kept records as an OTLP ExportTraceServiceRequest', () => {
  test('every field as protobufjs decodes it with the official trace.proto', () => {
    const ring = new TraceRing(4);
    record(ring, 'http://pets.example:8080/v1/pets/psk_secret1?limit=2');
    const encoder = new RecordEncoder(ring, source);
    ring.drain((r) => encoder.add(r));
    expect(encoder.spans).toBe(3);
    const message = ExportRequest.toObject(ExportRequest.decode(encoder.take()), { longs: String, bytes: String });
    const [server, decide, redis] = message.resourceSpans[0].scopeSpans[0].spans;
    expect(message.resourceSpans).toHaveLength(1);
    expect(message.resourceSpans[0].resource).toEqual({
      attributes: [
        kv('service.name', { stringValue: 'petstore' }),
        kv('deployment.environment.name', { stringValue: 'staging' }),
        kv('service.version', { stringValue: '1.2.3' }),
      ],
    });
    expect(message.resourceSpans[0].scopeSpans).toHaveLength(1);
    expect(message.resourceSpans[0].scopeSpans[0].scope).toEqual({ name: 'petstore', version: '1.2.3' });
    const b64 = (hex: string) => Buffer.from(hex, 'hex').toString('base64');
    expect(server).toEqual({
      traceId: b64(TRACE),
      spanId: b64(SPAN),
      traceState: 'vendor=abc,other=d',
      parentSpanId: b64(PARENT),
      name: 'GET /v1/pets/:id',
      kind: 2,
      // 1,764,300,000 s and 123.4568 ms: the double is 123.456787109375 ms past the second, to the
      // nearest nanosecond.
      startTimeUnixNano: '1764300000123456787',
      endTimeUnixNano: '1764300000180250000',
      attributes: [
        kv('http.request.method', { stringValue: 'GET' }),
        kv('url.scheme', { stringValue: 'http' }),
        kv('url.path', { stringValue: '/v1/pets/***' }),
        kv('http.route', { stringValue: '/v1/pets/:id' }),
        kv('client.address', { stringValue: '10.0.0.7' }),
        kv('petstore.operation', { stringValue: 'getPet' }),
        kv('petstore.consumer.name', { stringValue: 'acmé' }),
        kv('petstore.gateway.outcome', { stringValue: 'admitted' }),
        kv('http.response.status_code', { intValue: '503' }),
        kv('petstore.kept_by', { stringValue: 'tail' }),
      ],
      status: { code: 2 },
      // Sampled, and a remote parent (HAS_IS_REMOTE | IS_REMOTE).
      flags: 0x301,
    });
    expect(decide).toEqual({
      traceId: b64(TRACE),
      spanId: decide.spanId,
      parentSpanId: b64(SPAN),
      name: 'gateway decide',
      kind: 1,
      startTimeUnixNano: '1764300000124000000',
      endTimeUnixNano: '1764300000176000000',
      attributes: [kv('petstore.gateway.cost', { intValue: '2' })],
      status: {},
      flags: 0x101,
    });
    expect(redis).toEqual({
      traceId: b64(TRACE),
      spanId: redis.spanId,
      parentSpanId: decide.spanId,
      name: 'EVALSHA',
      kind: SpanKind.CLIENT + 1,
      startTimeUnixNano: '1764300000125000000',
      endTimeUnixNano: '1764300000175500000',
      attributes: [
        kv('db.system.name', { stringValue: 'redis' }),
        kv('net.peer.port', { intValue: '6379' }),
        kv('x.ratio', { doubleValue: 0.25 }),
        kv('x.on', { boolValue: true }),
        kv('x.list', { arrayValue: { values: [{ stringValue: 'a' }, { stringValue: 'b' }] } }),
        kv('error.type', { stringValue: 'TimeoutError' }),
      ],
      status: { code: 2, message: 'Redis took longer than 50 ms' },
      flags: 0x101,
    });
    expect(Buffer.from(decide.spanId, 'base64')).toHaveLength(8);
    expect(redis.spanId).not.toBe(decide.spanId);
  });

  test('a head-sampled root request: no parent, no tracestate, status unset, no kept_by, an unknown method named HTTP', () => {
    const ring = new TraceRing(4);
    const r = ring.claim(1_000);
    ring.flags[r] = HEAD;
    ring.writeIds(r, TRACE, SPAN);
    ring.end[r] = 1_002;
    ring.status[r] = 200;
    ring.method[r] = ring.methodId('BREW');
    ring.url.write(r, 'https://pets.example');
    ring.settle(r, true);
    const encoder = new RecordEncoder(ring, source);
    ring.drain((k) => encoder.add(k));
    const [span] = decodeExport(encoder.take());
    expect(span).toEqual({
      traceId: TRACE,
      spanId: SPAN,
      parentSpanId: '',
      name: 'HTTP',
      kind: 2,
      start: 1_000_000_000n,
      end: 1_002_000_000n,
      attributes: {
        'http.request.method': '_OTHER',
        'url.scheme': 'https',
        'url.path': '/',
        'client.address': '',
        'http.response.status_code': 200,
      },
      status: 0,
      statusMessage: '',
      traceState: '',
      flags: 0x101,
      links: [],
      resource: source.resource,
    });
  });

  test('a batch of 600 records (lengths of two and three bytes) decodes whole, and the encoder starts again after take', () => {
    const ring = new TraceRing(1024);
    const long = `http://h/v1/pets/${'p'.repeat(200)}`;
    for (let i = 0; i < 600; i++) record(ring, long);
    const encoder = new RecordEncoder(ring, source);
    ring.drain((r) => encoder.add(r));
    const bytes = encoder.take();
    expect(bytes.length).toBeGreaterThan(0x4000);
    const spans = decodeExport(bytes);
    expect(spans).toHaveLength(1800);
    expect(spans.filter((s) => s.attributes['url.path'] === `/v1/pets/${'p'.repeat(200)}`)).toHaveLength(600);
    record(ring, 'http://h/v1/pets');
    ring.drain((r) => encoder.add(r));
    expect(decodeExport(encoder.take()).map((s) => s.name)).toEqual(['GET /v1/pets/:id', 'gateway decide', 'EVALSHA']);
  });
});
