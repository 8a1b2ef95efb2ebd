import { describe, expect, test } from 'bun:test';
import { type Context, ROOT_CONTEXT, SpanKind, TraceFlags, trace } from '@opentelemetry/api';
import { SamplingDecision } from '@opentelemetry/sdk-trace';
import { drawnLow52, newSpanId, newTrace, newTraceId } from './context.ts';
import { RatioSampler, samplingOf } from './export.ts';
import { SAMPLERS } from './settings.ts';
import { DRAWN, HOLDS_VALID_KEY } from './spans.ts';

const sampledOf = (sampler: RatioSampler, traceId: string) =>
  sampler.shouldSample(ROOT_CONTEXT, traceId).decision === SamplingDecision.RECORD_AND_SAMPLED;

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

describe('samplingOf: the question a request asks before any span is made', () => {
  const remote = (sampled: boolean, holdsValidKey: boolean): Context => {
    const context = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: newTraceId(),
      spanId: newSpanId(),
      traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
      isRemote: true,
    });
    return holdsValidKey ? context.setValue(HOLDS_VALID_KEY, true) : context;
  };
  const contexts: [string, Context][] = [
    ['no caller context', ROOT_CONTEXT],
    ['a keyless client sampled parent', remote(true, false)],
    ['a sampled parent that holds a valid key', remote(true, true)],
    ['an unsampled parent', remote(false, false)],
  ];

  for (const name of SAMPLERS) {
    test(`${name}: answers as the SDK's sampler does, for every kind of request`, () => {
      const { sampler, sampled } = samplingOf(name, 0.3);
      const ids = Array.from({ length: 2_000 }, newTraceId);
      for (const [, context] of contexts) {
        const asked = ids.map((id) => sampled(context, id));
        const sdk = ids.map(
          (id) =>
            sampler.shouldSample(context, id, 'GET /v1/pets', SpanKind.SERVER, {}, []).decision !==
            SamplingDecision.NOT_RECORD,
        );
        expect(asked).toEqual(sdk);
      }
    });
  }

  test("every sampler records what was decided on a server-drawn id for a keyless client (DRAWN), whatever the caller's flag or id", () => {
    for (const name of SAMPLERS) {
      const { sampler } = samplingOf(name, 0);
      for (const sampled of [true, false]) {
        const drawn = remote(sampled, false).setValue(DRAWN, true);
        const decision = sampler.shouldSample(drawn, newTraceId(), 'GET /v1/pets', SpanKind.SERVER, {}, []).decision;
        expect([name, sampled, decision]).toEqual([name, sampled, SamplingDecision.RECORD_AND_SAMPLED]);
      }
    }
  });

  test('parentbased_traceidratio: a keyless client cannot force export; a caller with a valid key can', () => {
    const { sampled } = samplingOf('parentbased_traceidratio', 0);
    const id = newTraceId();
    expect(contexts.map(([what, context]) => [what, sampled(context, id)])).toEqual([
      ['no caller context', false],
      ['a keyless client sampled parent', false],
      ['a sampled parent that holds a valid key', true],
      ['an unsampled parent', false],
    ]);
  });
});
