// The trace export, wired at start only when an OTLP endpoint is configured: every request is
// recorded into a ring (src/trace/ring.ts); a step scheduled by the answers that keep a record,
// off the request path, encodes the kept records straight to OTLP protobuf (src/trace/otlp.ts)
// in batches, which the OTLP/HTTP exporter's transport of the OpenTelemetry packages sends, one
// at a time (its time-out, retries, headers and environment settings). A webhook delivery's span
// is a plain record of its own, encoded by the same encoder into the same batches as it ends.
// No SDK runs: no tracer, span processor or span object. Without an endpoint this module is
// never loaded, and no ring or exporter exists.
//
// - Sampling is the configured sampler (`OTEL_TRACES_SAMPLER`, default `parentbased_always_on`),
//   asked at the start of each request before anything is recorded, with rules of the service's
//   own: a caller's sampled flag forces a trace to be exported only when the caller has a valid
//   key (`HAS_VALID_KEY`); a caller without one never chooses, the root sampler deciding on an
//   id the server drew (src/trace/spans.ts), not on the caller's flag or trace id; and under the
//   `parentbased_*` samplers a webhook delivery, a new trace, is exported when the span it links
//   to was.
// - A request the sampler passed over is kept all the same when its caller has a valid key and
//   it was slow or answered 5xx (`KeepRules`, at most so many a second).
// - The queue holds `MAX_QUEUE` spans, the webhook spans among them: a slow or absent collector
//   makes it drop spans, never wait, and a span with no room is dropped before it is encoded;
//   what is dropped (the queue full, an export that failed, kept records the ring overwrote
//   before the step read them, tail keeps past the cap) goes to `dropped`.
import { randomUUID } from 'node:crypto';
import { setImmediate } from 'node:timers';
import { type Attributes, type Context, isSpanContextValid, ROOT_CONTEXT, TraceFlags, trace } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { COMMIT, VERSION } from '../version.ts';
import { RecordEncoder } from './otlp.ts';
import { DEFAULT_RING_RECORDS, TraceRing } from './ring.ts';
import type { SamplerName } from './settings.ts';
import {
  type ClientSpan,
  type ClientSpans,
  HAS_VALID_KEY,
  type KeepRules,
  type LinkedSampled,
  type Sampled,
  useRecorder,
} from './spans.ts';

/** Spans waiting for export at most; beyond it they are dropped (and counted). */
const MAX_QUEUE = 2048;
/** Spans per export request. */
const BATCH = 512;
/** How long a batch not full waits for more spans before it is sent. */
const DELAY_MS = 1_000;
/**
 * How long a kept record waits at most before the ring is read while requests come (DELAY_MS after
 * the last).
 */
const READ_MS = 200;
/** How long one export may take before it counts as failed. */
const EXPORT_TIMEOUT_MS = 10_000;

export interface TraceExportOptions {
  /** Where spans go: the traces endpoint itself (`…/v1/traces`). */
  readonly url: string;
  /** Sent with each export (`OTEL_EXPORTER_OTLP_HEADERS`): an ingest token, a tenant. */
  readonly headers: Readonly<Record<string, string>>;
  /** `service.name`; empty: the resource attributes', else `petstore`. */
  readonly serviceName: string;
  /** `OTEL_RESOURCE_ATTRIBUTES`, read. */
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly sampler: SamplerName;
  /** The ratio of the `traceidratio` samplers, 0 to 1. */
  readonly samplerArg: number;
  /** Which requests the sampler passed over are kept all the same. */
  readonly keep?: Omit<KeepRules, 'capped'>;
  /** Requests the ring holds (`DEFAULT_RING_RECORDS`). */
  readonly ringRecords?: number;
  /** Told of spans lost: why (`DropReason`), and how many. */
  readonly dropped?: (spans: number, reason: DropReason) => void;
}

/**
 * Why spans were never exported: the queue was full, their export failed, the ring overwrote
 * their kept record before it was read, or the tail's cap refused to keep them.
 */
export type DropReason = 'queue_full' | 'export_failed' | 'ring_overwritten' | 'tail_capped';

/** What start-up keeps: flushing what is queued, within a time, at shutdown. */
export interface TraceExport {
  shutdown(withinMs: number): Promise<void>;
}

/** One encoded `ExportTraceServiceRequest`, and how many spans it carries. */
interface Batch {
  readonly bytes: Uint8Array;
  readonly spans: number;
}

/**
 * Wires the ring, the read step and the sender, and hands the ring and the webhook spans' way
 * into the batches to the instrumented code (`useRecorder`).
 *
 * @example
 * const tracing = startTraceExport({ url: 'http://collector:4318/v1/traces', headers: {}, … })
 * await tracing.shutdown(5_000)
 */
export function startTraceExport(options: TraceExportOptions): TraceExport {
  const exporterOptions = { url: options.url, headers: { ...options.headers }, timeoutMillis: EXPORT_TIMEOUT_MS };
  const { sampled, linked } = samplingOf(options.sampler, options.samplerArg);
  const attributes = resourceOf(options);
  const ring = new TraceRing(options.ringRecords ?? DEFAULT_RING_RECORDS);
  const encoder = new RecordEncoder(ring, { resource: attributes, scope: { name: 'petstore', version: VERSION } });
  // The OTLP/HTTP exporter's own transport, handed bytes already encoded.
  const delegate = createOtlpHttpExportDelegate<Batch, unknown>(
    convertLegacyHttpOptions(exporterOptions, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' }),
    { serializeRequest: (batch) => batch.bytes, deserializeResponse: ProtobufTraceSerializer.deserializeResponse },
    'otlp_http_span_exporter',
    { name: 'span', countItems: (batch) => batch.spans },
    undefined,
  );
  const { dropped } = options;
  const queue: Batch[] = [];
  let queued = 0;
  let sending = false;
  /** When the batch being encoded got its first span. */
  let openedAt = 0;
  let overwritten = 0;
  let idle: (() => void) | undefined;
  /** Sends the next batch unless one is on its way; tells `idle` when none is left. */
  const send = () => {
    if (sending) return;
    const batch = queue.shift();
    if (batch === undefined) {
      idle?.();
      return;
    }
    queued -= batch.spans;
    sending = true;
    delegate.export(batch, (result) => {
      sending = false;
      if (result.code !== ExportResultCode.SUCCESS) dropped?.(batch.spans, 'export_failed');
      send();
    });
  };
  const close = () => {
    const spans = encoder.spans;
    queue.push({ bytes: encoder.take(), spans });
    queued += spans;
  };
  /** Whether `spans` more fit under the queue's bound; a batch not yet open opens at `now`. */
  const fits = (spans: number, now: number) => {
    if (queued + encoder.spans + spans > MAX_QUEUE) return false;
    if (encoder.spans === 0) openedAt = now;
    return true;
  };
  const read = (now: number, all: boolean) => {
    let full = 0;
    ring.drain((r) => {
      const spans = 1 + (ring.children[r] as number);
      if (!fits(spans, now)) {
        full += spans;
        return;
      }
      encoder.add(r);
      if (encoder.spans >= BATCH) close();
    });
    if (encoder.spans > 0 && (all || now - openedAt >= DELAY_MS)) close();
    if (full > 0) dropped?.(full, 'queue_full');
    if (ring.overwritten !== overwritten) {
      dropped?.(ring.overwritten - overwritten, 'ring_overwritten');
      overwritten = ring.overwritten;
    }
    send();
  };
  // The ring is read only while it holds something to export, and from the request path while
  // requests come: a kept record schedules a read (`setImmediate`, after the answer) when the
  // last was READ_MS ago or longer, and at once when half the ring turned since the last read
  // (`full`), so a kept record is read before it can be overwritten at any request rate. A
  // timer of DELAY_MS, armed while records or a batch wait, reads what the last requests before
  // a pause kept; with none kept (ratio 0, no slow or failed request) nothing is pending.
  let lastRead = Date.now();
  let soon = false;
  let reading: ReturnType<typeof setTimeout> | undefined;
  const step = () => {
    soon = false;
    lastRead = Date.now();
    read(lastRead, false);
  };
  const tick = () => {
    reading = undefined;
    if (!soon) step();
    if (encoder.spans > 0 || ring.kept > 0) arm();
  };
  const arm = () => {
    if (reading !== undefined) return;
    reading = setTimeout(tick, DELAY_MS);
    (reading as { unref?: () => void }).unref?.();
  };
  ring.wake = (full) => {
    if (soon) return;
    if (full || Date.now() - lastRead >= READ_MS) {
      soon = true;
      setImmediate(step);
    }
    arm();
  };
  // A webhook delivery's span, exported, is encoded as it ends into the batch being encoded,
  // within the same bound: deliveries are few, off the request path.
  const client: ClientSpans = {
    sampled: linked,
    end(span: ClientSpan) {
      if (!fits(1, Date.now())) {
        dropped?.(1, 'queue_full');
        return;
      }
      encoder.addClient(span);
      if (encoder.spans >= BATCH) {
        close();
        send();
      }
      arm();
    },
  };
  const keep: KeepRules = {
    ...(options.keep ?? { slowerThanMs: 0, errors: false, maxPerSecond: 0 }),
    ...(dropped ? { capped: (spans: number) => dropped(spans, 'tail_capped') } : {}),
  };
  useRecorder(ring, client, sampled, keep);
  return {
    async shutdown(withinMs) {
      useRecorder(undefined, undefined);
      ring.wake = undefined;
      clearTimeout(reading);
      const sent = new Promise<void>((resolve) => {
        idle = resolve;
      });
      read(Date.now(), true);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, Math.max(0, withinMs));
      });
      await Promise.race([sent.then(() => delegate.shutdown()).catch(() => {}), late]);
      clearTimeout(timer);
    },
  };
}

/**
 * The resource: the service's name, version and commit, and this instance (a fresh UUID per
 * process, as the conventions recommend), over `OTEL_RESOURCE_ATTRIBUTES`.
 */
function resourceOf({ serviceName, resourceAttributes }: TraceExportOptions): Attributes {
  return {
    'service.instance.id': randomUUID(),
    ...resourceAttributes,
    'service.name': serviceName || resourceAttributes['service.name'] || 'petstore',
    'service.version': VERSION,
    'vcs.ref.head.revision': COMMIT,
  };
}

/**
 * The configured sampler's two questions: a request's (`sampled`), asked at its start before
 * anything is recorded, and a webhook delivery's (`linked`), a new trace linked to the span of
 * the request that caused it. For a request without a caller's context (most) the root sampler
 * answers alone.
 */
export interface Sampling {
  readonly sampled: Sampled;
  readonly linked: LinkedSampled;
}

/**
 * The configured sampler (`OTEL_TRACES_SAMPLER`): the root sampler it names, and for the
 * `parentbased_*` ones the caller's decision when it may force one (a remote parent's sampled
 * flag with `HAS_VALID_KEY`, as the SDK's `ParentBasedSampler` would honour it; an unsampled
 * remote parent is not exported), and a delivery linked to an exported span exported.
 *
 * @example
 * samplingOf('parentbased_traceidratio', 0.01).sampled(ROOT_CONTEXT, traceId) // true for one id in a hundred
 */
export function samplingOf(name: SamplerName, ratio: number): Sampling {
  const root = rootSamplerOf(name, ratio);
  const parentBased = name.startsWith('parentbased_');
  const rootSampled = (traceId: string, low?: number) =>
    low === undefined ? root.samples(traceId) : root.samplesLow(low);
  return {
    sampled: (context, traceId, low) =>
      !parentBased || context === ROOT_CONTEXT ? rootSampled(traceId, low) : parentSampled(context, traceId, root),
    linked: (traceId, linkSampled) => (parentBased && linkSampled) || root.samples(traceId),
  };
}

/** The parent-based answer for a request in `context`: its parent's decision, else `root`'s. */
function parentSampled(context: Context, traceId: string, root: RootSampler): boolean {
  const parent = trace.getSpanContext(context);
  if (parent === undefined || !isSpanContextValid(parent)) return root.samples(traceId);
  if ((parent.traceFlags & TraceFlags.SAMPLED) === 0) return false;
  return !parent.isRemote || context.getValue(HAS_VALID_KEY) === true || root.samples(traceId);
}

/** A sampler for a trace without a parent: whether trace `traceId` is exported. */
export interface RootSampler {
  samples(traceId: string): boolean;
  /** The same, for an id whose low 52 bits are `low`. */
  samplesLow(low: number): boolean;
}

const ALWAYS_ON: RootSampler = { samples: () => true, samplesLow: () => true };
const ALWAYS_OFF: RootSampler = { samples: () => false, samplesLow: () => false };

/** The sampler `OTEL_TRACES_SAMPLER` names for a trace without a parent. */
function rootSamplerOf(name: SamplerName, ratio: number): RootSampler {
  if (name.endsWith('always_on')) return ALWAYS_ON;
  if (name.endsWith('always_off')) return ALWAYS_OFF;
  return new RatioSampler(ratio);
}

/** 2^52: the trace id's last 13 hex digits, read as a number, are below it and exact. */
const LOW_BITS = 2 ** 52;

/**
 * `traceidratio`: a trace is exported when the low 52 bits of its id, which W3C Trace Context
 * Level 2 asks to be random, fall below `ratio` of their range; so every instance decides the
 * same for one trace id. The SDK's `TraceIdRatioBasedSampler` XORs four parsed slices and tests
 * the id's form by a pattern on every request, which costs more
 * (bench/README.md#measured-costs-behind-the-codes-choices).
 */
export class RatioSampler implements RootSampler {
  readonly #below: number;
  readonly #ratio: number;
  constructor(ratio: number) {
    this.#ratio = Math.min(1, Math.max(0, ratio));
    this.#below = this.#ratio * LOW_BITS;
  }
  /** Whether the trace `traceId` is exported. */
  samples(traceId: string): boolean {
    // Ratios 0 and 1 need no digit read: no id is below 0, every id is below 2^52.
    if (this.#ratio === 0 || this.#ratio === 1) return this.#ratio === 1;
    // Read digit by digit, not sliced and parsed: no string is made per request.
    let low = 0;
    for (let i = traceId.length - 13; i < traceId.length; i++) low = low * 16 + hexDigit(traceId.charCodeAt(i));
    return this.samplesLow(low);
  }
  /** Whether a trace whose id's low 52 bits are `low` is exported. */
  samplesLow(low: number): boolean {
    return low < this.#below;
  }
  toString(): string {
    return `RatioSampler{${this.#ratio}}`;
  }
}

/** The value of the hex digit whose character code is `code` (0-9, a-f, A-F). */
function hexDigit(code: number): number {
  return code <= 57 ? code - 48 : (code | 32) - 87;
}
