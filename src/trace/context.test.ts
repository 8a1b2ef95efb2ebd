import { describe, expect, test } from 'bun:test';
import { drawnLow52, formatTraceParent, newSpanId, newTrace, newTraceId, parseTraceParent } from './context.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('traceparent', () => {
  test('a valid one is read: ids and the sampled flag (bit 0 of the flags)', () => {
    expect(parseTraceParent(`00-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true });
    expect(parseTraceParent(`00-${TRACE}-${SPAN}-00`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: false });
    expect(parseTraceParent(`00-${TRACE}-${SPAN}-03`)?.sampled).toBe(true);
    // A later version may carry more after the flags.
    expect(parseTraceParent(`01-${TRACE}-${SPAN}-01-more`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true });
  });

  test.each([
    [undefined, 'absent'],
    ['', 'empty'],
    [`00-${TRACE}-${SPAN}`, 'no flags'],
    [`00-${TRACE}-${SPAN}-01-x`, 'version 00 with more'],
    [`ff-${TRACE}-${SPAN}-01`, 'version ff'],
    [`00-${'0'.repeat(32)}-${SPAN}-01`, 'all-zero trace id'],
    [`00-${TRACE}-${'0'.repeat(16)}-01`, 'all-zero parent id'],
    [`00-${TRACE.toUpperCase()}-${SPAN}-01`, 'upper-case hex'],
    [`00-${TRACE}-${SPAN}-0g`, 'flags not hex'],
    [`00_${TRACE}_${SPAN}_01`, 'wrong separators'],
  ])('%p (%s) is ignored', (header) => {
    expect(parseTraceParent(header)).toBeUndefined();
  });

  test('written back as version 00', () => {
    expect(formatTraceParent(TRACE, SPAN, true)).toBe(`00-${TRACE}-${SPAN}-01`);
    expect(formatTraceParent(TRACE, SPAN, false)).toBe(`00-${TRACE}-${SPAN}-00`);
  });

  test('fresh ids are lower-case hex of 16 and 8 bytes, each different', () => {
    const traces = new Set(Array.from({ length: 2000 }, newTraceId));
    const spans = new Set(Array.from({ length: 2000 }, newSpanId));
    expect(traces.size).toBe(2000);
    expect(spans.size).toBe(2000);
    for (const t of traces) expect(t).toMatch(/^[0-9a-f]{32}$/);
    for (const s of spans) expect(s).toMatch(/^[0-9a-f]{16}$/);
    const trace = newTrace();
    expect(trace.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(trace.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(traces.has(trace.traceId)).toBe(false);
  });

  test("a drawn trace's low 52 bits, read from its bytes, are its last 13 hex digits", () => {
    for (let i = 0; i < 500; i++) {
      const { traceId, at } = newTrace();
      expect(drawnLow52(at)).toBe(Number.parseInt(traceId.slice(19), 16));
    }
  });
});
