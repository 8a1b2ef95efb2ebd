// W3C Trace Context (https://www.w3.org/TR/trace-context/): strict parsing of the `traceparent` a
// caller sends, formatting of the one we send, and fresh ids. A malformed header is ignored.
import { Buffer } from 'node:buffer';
import { randomFillSync } from 'node:crypto';

/** A caller's `traceparent`, read. */
export interface TraceParent {
  readonly traceId: string;
  readonly spanId: string;
  readonly sampled: boolean;
}

/** Version 00 is exactly this; a later version may add fields after a further `-`. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * The caller's `traceparent` when it is valid, else undefined: version `ff`, an all-zero id,
 * upper-case hex or version 00 with anything after the flags are all refused.
 *
 * @example
 * parseTraceParent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')
 * // { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', sampled: true }
 */
export function parseTraceParent(header: string | undefined): TraceParent | undefined {
  if (header === undefined || header.length < 55) return undefined;
  const m = TRACEPARENT.exec(header.trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string?];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

/**
 * A version-00 `traceparent` (and `traceresponse`) value.
 *
 * @example
 * formatTraceParent('4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7', true) // '00-4bf9…-00f0…-01'
 */
export function formatTraceParent(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;
}

/**
 * Random bytes drawn a page at a time and kept as hex. Each id is a slice of the hex string, so
 * one draw and one hex encoding serve many requests' ids.
 */
const pool = Buffer.allocUnsafe(4096);
let hexPool = '';
let taken = 0;

/**
 * Where the next `digits` hex digits of the pool start, drawing a fresh page when it is used up.
 */
function reserve(digits: number): number {
  if (taken + digits > hexPool.length) {
    randomFillSync(pool);
    hexPool = pool.toString('hex');
    taken = 0;
  }
  const at = taken;
  taken += digits;
  return at;
}

/**
 * `bytes` random bytes in hex, from a cryptographic generator (ids need to be unique, not secret).
 */
function randomHex(bytes: number): string {
  const at = reserve(bytes * 2);
  return hexPool.slice(at, at + bytes * 2);
}

/** A fresh trace id: 16 random bytes in hex. */
export const newTraceId = (): string => randomHex(16);
/** A fresh span id: 8 random bytes in hex. */
export const newSpanId = (): string => randomHex(8);

/**
 * A fresh trace id and span id, 24 bytes drawn together, for a new trace's first span. `at` is
 * the bytes' offset in the pool, for `drawnLow52`, valid until the next id is drawn.
 */
export function newTrace(): { readonly traceId: string; readonly spanId: string; readonly at: number } {
  const at = reserve(48);
  return { traceId: hexPool.slice(at, at + 32), spanId: hexPool.slice(at + 32, at + 48), at: at / 2 };
}

/**
 * The low 52 bits (last 13 hex digits) of the trace id `newTrace` drew at `at`, read from the
 * raw bytes, for the ratio sampler. Call it before the next id is drawn.
 */
export function drawnLow52(at: number): number {
  let low = (pool[at + 9] as number) & 0x0f;
  for (let i = at + 10; i < at + 16; i++) low = low * 256 + (pool[i] as number);
  return low;
}
