// The trace export, set up at start only when an OTLP endpoint is configured. Every request is
// recorded into a ring (src/trace/ring.ts). Off the request path, a read step encodes the kept
// records straight to OTLP protobuf (src/trace/otlp.ts) in batches, and the OpenTelemetry
// OTLP/HTTP exporter's transport sends them one at a time, with its time-out, retries, headers
// and environment settings. A webhook delivery's span is encoded into the same batches when it
// ends. No SDK runs: no tracer, span processor or span object. Without an endpoint this module is
// never loaded, and no ring or exporter exists.
//
// - Sampling uses the configured sampler (`OTEL_TRACES_SAMPLER`, default
//   `parentbased_always_on`), asked at the start of each request before anything is recorded,
//   with rules of the service's own. A caller's sampled flag forces export only when the caller
//   has a valid key (`HAS_VALID_KEY`). A caller without one has no say: the root sampler decides
//   on an id the server drew (src/trace/spans.ts), not on the caller's flag or trace id. Under
//   the `parentbased_*` samplers, a webhook delivery (a new trace) is exported when the span it
//   links to was.
// - A request the sampler skipped is still kept when its caller has a valid key and it was slow
//   or answered 5xx (`KeepRules`, capped per second).
// - The queue holds at most `MAX_QUEUE` spans, webhook spans included, so a slow or absent
//   collector makes it drop spans, never wait; a span with no room is dropped before it is
//   encoded. Every loss (queue full, export failed, kept records the ring overwrote before they
//   were read, tail keeps past the cap) is reported to `dropped`.
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
 * While requests keep coming, the longest a kept record waits before the ring is read; after the
 * last request, the DELAY_MS timer reads it.
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
  /** Called when spans are lost, with how many and why (`DropReason`). */
  readonly dropped?: (spans: number, reason: DropReason) => void;
}

/**
 * Why spans were never exported: the queue was full, their export failed, the ring overwrote
 * their kept record before it was read, or the tail's cap refused to keep them.
 */
export type DropReason = 'queue_full' | 'export_failed' | 'ring_overwritten' | 'tail_capped';

/** The handle start-up keeps: `shutdown` flushes what is queued, within `withinMs`. */
export interface TraceExport {
  shutdown(withinMs: number): Promise<void>;
}

/** One encoded `ExportTraceServiceRequest`, and how many spans it carries. */
interface Batch {
  readonly bytes: Uint8Array;
  readonly spans: number;
}

/**
 * Sets up the ring, the read step and the sender, and gives the ring and the webhook span sink to
 * the recording code (`useRecorder`). Returns the handle that shuts the export down.
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
  // The ring is read only when it holds something to export. While requests keep coming, a kept
  // record schedules a read (`setImmediate`, after the answer is sent) if the last read was
  // READ_MS ago or more, and right away when half the ring has been claimed since the last read
  // (`full`), so a kept record is read before it can be overwritten at any request rate. A
  // DELAY_MS timer, armed while records or a batch wait, reads what the last requests before a
  // pause kept; when nothing is kept (ratio 0, no slow or failed request), no timer is pending.
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
  // An exported webhook delivery span is encoded into the current batch when it ends, under the
  // same bound: deliveries are few and off the request path.
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
 * The configured sampler as two functions: `sampled` for a request, asked at its start before
 * anything is recorded, and `linked` for a webhook delivery, a new trace linked to the span of
 * the request that caused it. For a request without a caller's context (most of them) the root
 * sampler alone decides.
 */
export interface Sampling {
  readonly sampled: Sampled;
  readonly linked: LinkedSampled;
}

/**
 * Builds the configured sampler (`OTEL_TRACES_SAMPLER`) from the root sampler it names. The
 * `parentbased_*` ones also follow the parent: a remote parent's sampled flag is honoured only
 * with `HAS_VALID_KEY` (as the SDK's `ParentBasedSampler` would), an unsampled parent is not
 * exported, and a delivery is exported when the span it links to was.
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
 * Level 2 requires to be random, fall below `ratio` of their range, so every instance decides the
 * same for one trace id. The SDK's `TraceIdRatioBasedSampler` parses and XORs four slices and
 * checks the id with a regular expression on every request, which costs more
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
    // Read digit by digit rather than sliced and parsed, so no string is made per request.
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
