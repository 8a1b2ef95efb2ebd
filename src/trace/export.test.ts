import { describe, expect, test } from 'bun:test';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { SamplingDecision } from '@opentelemetry/sdk-trace';
import { newTraceId } from './context.ts';
import { RatioSampler } from './export.ts';

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
