/**
 * The trace export's thread (src/trace/export.ts starts it): it takes the kept records the main
 * thread's read step copied out of the ring, encodes them to OTLP protobuf (`RecordEncoder`) in
 * batches and sends the batches, one at a time, through the OTLP/HTTP exporter's own transport
 * (its time-out, retries, headers and environment settings). So the encoding, the HTTP client
 * and the code they compile run beside the requests, not between them. The intern table's new
 * strings and attribute sets come in the same message as the first record that names them.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { Attributes } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { RecordEncoder, type SpanSource } from './otlp.ts';
import { TraceRing } from './ring.ts';

/** What the thread is started with (`workerData`). */
export interface ExportThreadStart {
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly timeoutMillis: number;
  readonly source: SpanSource;
  /** Spans per export request, and how long a batch not full waits for more. */
  readonly batch: number;
  readonly delayMs: number;
}

/** What the main thread sends: kept records (and the table entries new since the last), or the last word. */
export type ToExportThread =
  | {
      readonly type: 'records';
      /** The intern tables' entries from these numbers on. */
      readonly stringsFrom: number;
      readonly strings: readonly string[];
      readonly setsFrom: number;
      readonly sets: readonly Attributes[];
      /** `count` records, `TraceRing.recordBytes` each (`copyOut`). */
      readonly records: ArrayBuffer;
      readonly count: number;
    }
  /** Send what is left and say `idle` once nothing is. */
  | { readonly type: 'flush' };

/** What the thread answers: a batch's spans sent or failed, and, after a flush, that nothing is left. */
export type FromExportThread =
  | { readonly type: 'sent'; readonly spans: number; readonly ok: boolean }
  | { readonly type: 'idle' };

/** One encoded `ExportTraceServiceRequest`, and how many spans it carries. */
interface Batch {
  readonly bytes: Uint8Array;
  readonly spans: number;
}

function run(start: ExportThreadStart, port: NonNullable<typeof parentPort>): void {
  const post = (message: FromExportThread) => port.postMessage(message);
  // One record at a time: each is encoded as soon as it is copied in.
  const ring = new TraceRing(1);
  const encoder = new RecordEncoder(ring, start.source);
  const delegate = createOtlpHttpExportDelegate<Batch, unknown>(
    convertLegacyHttpOptions(
      { url: start.url, headers: start.headers, timeoutMillis: start.timeoutMillis },
      'TRACES',
      'v1/traces',
      { 'Content-Type': 'application/x-protobuf' },
    ),
    { serializeRequest: (batch) => batch.bytes, deserializeResponse: ProtobufTraceSerializer.deserializeResponse },
    'otlp_http_span_exporter',
    { name: 'span', countItems: (batch) => batch.spans },
    undefined,
  );
  const queue: Batch[] = [];
  let sending = false;
  let flushing = false;
  let waiting: ReturnType<typeof setTimeout> | undefined;
  /** Sends the next batch unless one is on its way; says `idle` after a flush when none is left. */
  const send = () => {
    if (sending) return;
    const batch = queue.shift();
    if (batch === undefined) {
      if (flushing) void delegate.shutdown().finally(() => post({ type: 'idle' }));
      return;
    }
    sending = true;
    delegate.export(batch, (result) => {
      sending = false;
      post({ type: 'sent', spans: batch.spans, ok: result.code === ExportResultCode.SUCCESS });
      send();
    });
  };
  const close = () => {
    clearTimeout(waiting);
    waiting = undefined;
    if (encoder.spans === 0) return;
    const spans = encoder.spans;
    queue.push({ bytes: encoder.take(), spans });
    send();
  };
  port.on('message', (message: ToExportThread) => {
    if (message.type === 'flush') {
      flushing = true;
      close();
      send();
      return;
    }
    ring.strings.mirror(message.stringsFrom, message.strings);
    ring.attributeSets.mirror(message.setsFrom, message.sets);
    const records = new Uint8Array(message.records);
    for (let i = 0; i < message.count; i++) {
      ring.copyIn(records, i * ring.recordBytes, 0);
      encoder.add(0);
      if (encoder.spans >= start.batch) close();
    }
    if (encoder.spans > 0 && waiting === undefined) waiting = setTimeout(close, start.delayMs);
  });
}

if (parentPort) run(workerData as ExportThreadStart, parentPort);
