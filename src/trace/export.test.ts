import { afterEach, describe, expect, test } from 'bun:test';
import { type Context, type Link, ROOT_CONTEXT, SpanKind, TraceFlags, trace } from '@opentelemetry/api';
// The SDK is a test's oracle only: the product's sampling is its own.
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  type Sampler,
  SamplingDecision,
  type SamplingResult,
} from '@opentelemetry/sdk-trace';
import { KIND, startOtlpReceiver } from '../../test/otlp-receiver.ts';
import { drawnLow52, newSpanId, newTrace, newTraceId } from './context.ts';
import { type DropReason, RatioSampler, samplingOf, startTraceExport, type TraceExportOptions } from './export.ts';
import { SAMPLERS, type SamplerName } from './settings.ts';
import { clientSpan, HAS_VALID_KEY, useRecorder } from './spans.ts';

const sampledOf = (sampler: RatioSampler, traceId: string) => sampler.samples(traceId);

const SAMPLED: SamplingResult = { decision: SamplingDecision.RECORD_AND_SAMPLED };
const NOT_SAMPLED: SamplingResult = { decision: SamplingDecision.NOT_RECORD };

/** A sampler of the SDK that answers `yes` when `when` holds, else asks `otherwise`. */
const either = (when: (context: Context, links: Link[]) => boolean, otherwise: Sampler): Sampler => ({
  shouldSample: (context, ...rest) => (when(context, rest[4]) ? SAMPLED : otherwise.shouldSample(context, ...rest)),
});

/**
 * The sampler `name` as the SDK composes it: its `ParentBasedSampler` over the root (the ratio
 * sampler ours: the SDK's decides on other bits), a caller's sampled flag honoured only with
 * `HAS_VALID_KEY`, a span linked to a sampled one sampled.
 */
function sdkSampler(name: SamplerName, ratio: number): Sampler {
  const ours = new RatioSampler(ratio);
  const root: Sampler = name.endsWith('always_on')
    ? new AlwaysOnSampler()
    : name.endsWith('always_off')
      ? new AlwaysOffSampler()
      : { shouldSample: (_context, traceId) => (ours.samples(traceId) ? SAMPLED : NOT_SAMPLED) };
  if (!name.startsWith('parentbased_')) return root;
  const linked = either((_context, links) => links.some((l) => (l.context.traceFlags & 1) === 1), root);
  return new ParentBasedSampler({
    root: linked,
    remoteParentSampled: either((context) => context.getValue(HAS_VALID_KEY) === true, linked),
  });
}

describe('RatioSampler (traceidratio)', () => {
  test('decides on the low 52 bits of the trace id: below the ratio of their range is exported', () => {
    const half = new RatioSampler(0.5);
    expect(sampledOf(half, `${'f'.repeat(19)}7ffffffffffff`)).toBe(true);
    expect(sampledOf(half, `${'0'.repeat(19)}8000000000000`)).toBe(false);
    // The high digits do not count: every instance decides alike for one trace.
    expect(sampledOf(half, `${'0'.repeat(19)}7ffffffffffff`)).toBe(true);
  });

  test("a request's decision from its drawn id's bytes is the one from its hex, at every ratio", () => {
    for (const ratio of [0, 0.01, 0.3, 1]) {
      const { sampled } = samplingOf('parentbased_traceidratio', ratio);
      const drawn = Array.from({ length: 2_000 }, () => {
        const { traceId, at } = newTrace();
        return [traceId, drawnLow52(at)] as const;
      });
      const fromBytes = drawn.map(([id, low]) => sampled(ROOT_CONTEXT, id, low));
      expect([ratio, fromBytes]).toEqual([ratio, drawn.map(([id]) => sampled(ROOT_CONTEXT, id))]);
      if (ratio === 0.3) expect(fromBytes.filter(Boolean).length).toBeWithin(450, 750);
    }
  });

  test('0 exports nothing, 1 everything, 0.25 about a quarter of 20,000 fresh ids', () => {
    const ids = Array.from({ length: 20_000 }, newTraceId);
    expect(ids.filter((id) => sampledOf(new RatioSampler(0), id))).toHaveLength(0);
    expect(ids.filter((id) => sampledOf(new RatioSampler(1), id))).toHaveLength(20_000);
    const quarter = ids.filter((id) => sampledOf(new RatioSampler(0.25), id)).length;
    // Binomial(20,000, 0.25): 5,000 with a standard deviation of 61; 6 of them either side.
    expect(quarter).toBeGreaterThan(4_634);
    expect(quarter).toBeLessThan(5_366);
  });
});

describe("samplingOf: the questions a request and a webhook delivery ask, answered as the SDK's samplers would", () => {
  const remote = (sampled: boolean, hasValidKey: boolean): Context => {
    const context = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: newTraceId(),
      spanId: newSpanId(),
      traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
      isRemote: true,
    });
    return hasValidKey ? context.setValue(HAS_VALID_KEY, true) : context;
  };
  const contexts: [string, Context][] = [
    ['no caller context', ROOT_CONTEXT],
    ['a keyless client sampled parent', remote(true, false)],
    ['a sampled parent that has a valid key', remote(true, true)],
    ['an unsampled parent', remote(false, false)],
  ];

  for (const name of SAMPLERS) {
    test(`${name}: a request, for every kind of caller`, () => {
      const { sampled } = samplingOf(name, 0.3);
      const sdk = sdkSampler(name, 0.3);
      const ids = Array.from({ length: 2_000 }, newTraceId);
      for (const [what, context] of contexts) {
        const asked = ids.map((id) => sampled(context, id));
        const answered = ids.map(
          (id) =>
            sdk.shouldSample(context, id, 'GET /v1/pets', SpanKind.SERVER, {}, []).decision !==
            SamplingDecision.NOT_RECORD,
        );
        expect([what, asked]).toEqual([what, answered]);
      }
    });

    test(`${name}: a webhook delivery linked to a span exported or not`, () => {
      const { linked } = samplingOf(name, 0.3);
      const sdk = sdkSampler(name, 0.3);
      const ids = Array.from({ length: 2_000 }, newTraceId);
      for (const linkSampled of [true, false]) {
        const links: Link[] = [
          {
            context: {
              traceId: newTraceId(),
              spanId: newSpanId(),
              traceFlags: linkSampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
              isRemote: true,
            },
          },
        ];
        const asked = ids.map((id) => linked(id, linkSampled));
        const answered = ids.map(
          (id) =>
            sdk.shouldSample(ROOT_CONTEXT, id, 'POST', SpanKind.CLIENT, {}, links).decision !==
            SamplingDecision.NOT_RECORD,
        );
        expect([linkSampled, asked]).toEqual([linkSampled, answered]);
      }
    });
  }

  test('parentbased_traceidratio at 0: a keyless client cannot force export; a caller with a valid key can; a delivery linked to an exported span is exported', () => {
    const { sampled } = samplingOf('parentbased_traceidratio', 0);
    const id = newTraceId();
    expect(contexts.map(([what, context]) => [what, sampled(context, id)])).toEqual([
      ['no caller context', false],
      ['a keyless client sampled parent', false],
      ['a sampled parent that has a valid key', true],
      ['an unsampled parent', false],
    ]);
    const { linked } = samplingOf('parentbased_traceidratio', 0);
    expect([linked(id, true), linked(id, false)]).toEqual([true, false]);
    const plain = samplingOf('traceidratio', 0);
    expect([plain.linked(id, true), plain.linked(id, false)]).toEqual([false, false]);
  });
});

describe("webhook deliveries' spans through the export: the same batches, the same bound", () => {
  const LINKED = `00-${'4bf92f3577b34da6a3ce929d0e0e4736'}-${'00f067aa0ba902b7'}-01`;
  const options = (url: string, dropped: [number, DropReason][]): TraceExportOptions => ({
    url: `${url}/v1/traces`,
    headers: {},
    serviceName: 'hooks',
    resourceAttributes: {},
    sampler: 'parentbased_traceidratio',
    samplerArg: 0,
    dropped: (n, reason) => dropped.push([n, reason]),
  });
  const deliver = (linked: string) => clientSpan('POST', { 'server.port': 443 }, linked, async () => 'ok');

  afterEach(() => useRecorder(undefined, undefined));

  test('a delivery linked to an exported span reaches the collector at ratio 0 with the resource; one linked to a span not exported does not', async () => {
    const otlp = await startOtlpReceiver();
    const dropped: [number, DropReason][] = [];
    const tracing = startTraceExport(options(otlp.url, dropped));
    try {
      await deliver(LINKED);
      await deliver(LINKED.replace(/01$/, '00'));
      await tracing.shutdown(5_000);
      expect(otlp.spans.map((s) => [s.kind, s.links[0]?.flags, s.resource['service.name']])).toEqual([
        [KIND.client, 0x301, 'hooks'],
      ]);
      expect(dropped).toEqual([]);
    } finally {
      await otlp.close();
    }
  });

  test('with the collector not answering, the spans past the queue are dropped before they are encoded, each counted as queue_full', async () => {
    const otlp = await startOtlpReceiver('hang');
    const dropped: [number, DropReason][] = [];
    const tracing = startTraceExport(options(otlp.url, dropped));
    try {
      // A batch of 512 on its way that never ends, 2,048 waiting, 10 more.
      for (let i = 0; i < 512 + 2_048 + 10; i++) await deliver(LINKED);
      expect(dropped).toEqual(Array.from({ length: 10 }, () => [1, 'queue_full']));
    } finally {
      await tracing.shutdown(0);
      await otlp.close();
    }
  });
});
