/**
 * A real OTLP/HTTP trace receiver on loopback: it decodes each export (protobuf) with the
 * official OTLP definitions (opentelemetry-proto's .proto files, as the npm package
 * @opentelemetry/otlp-grpc-exporter-base ships them), read by protobufjs, and answers as a
 * collector does, or never (`hang`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import protobuf from 'protobufjs';

const PROTOS = join(
  dirname(createRequire(import.meta.url).resolve('@opentelemetry/otlp-grpc-exporter-base/package.json')),
  'build/protos',
);
const root = new protobuf.Root();
root.resolvePath = (_origin, target) => join(PROTOS, target);
root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
// The span's and the link's `flags` (opentelemetry-proto 1.1 on), which the package's older copy lacks.
const SPAN = root.lookupType('opentelemetry.proto.trace.v1.Span');
if (!SPAN.fields.flags) SPAN.add(new protobuf.Field('flags', 16, 'fixed32'));
const LINK = root.lookupType('opentelemetry.proto.trace.v1.Span.Link');
if (!LINK.fields.flags) LINK.add(new protobuf.Field('flags', 6, 'fixed32'));
/** trace_service.proto's request, for tests that read every field of an export. */
export const ExportRequest = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
const ExportResponse = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse');

/** `SpanKind` of trace.proto. */
export const KIND = { internal: 1, server: 2, client: 3 } as const;
/** `Status.StatusCode` of trace.proto. */
export const STATUS = { unset: 0, ok: 1, error: 2 } as const;

export type AttributeValue = string | number | boolean | undefined;

/** One exported span, its ids in hex and its times in nanoseconds since the epoch. */
export interface ExportedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly start: bigint;
  readonly end: bigint;
  readonly attributes: Record<string, AttributeValue>;
  readonly status: number;
  /** The status's message; '' when none. */
  readonly statusMessage: string;
  /** The caller's `tracestate`; '' when none. */
  readonly traceState: string;
  /** The span's `flags`: the W3C trace flags, and whether the parent is remote (0x100: known, 0x200: remote). */
  readonly flags: number;
  /** Each link's span, and its `flags` as the span's. */
  readonly links: readonly { traceId: string; spanId: string; flags: number }[];
  /** The resource's attributes. */
  readonly resource: Record<string, AttributeValue>;
}

export interface OtlpReceiver {
  readonly url: string;
  /** Every span received so far. */
  readonly spans: ExportedSpan[];
  /** Export requests received, with the headers they carried. */
  readonly requests: { headers: IncomingMessage['headers']; contentType: string }[];
  /** Resolves with the spans once `match` finds what it needs in them; rejects after `ms`. */
  waitFor<T>(match: (spans: ExportedSpan[]) => T | undefined, ms?: number): Promise<T>;
  close(): Promise<void>;
}

interface KeyValue {
  key: string;
  value?: { stringValue?: string; intValue?: string; doubleValue?: number; boolValue?: boolean };
}

const hex = (b: Uint8Array | undefined) => (b ? Buffer.from(b).toString('hex') : '');

function attributesOf(list: KeyValue[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const { key, value } of list ?? []) {
    out[key] =
      value?.stringValue ??
      (value?.intValue !== undefined ? Number(value.intValue) : undefined) ??
      value?.doubleValue ??
      value?.boolValue;
  }
  return out;
}

/** The spans of one `ExportTraceServiceRequest`. */
export function decodeExport(body: Uint8Array): ExportedSpan[] {
  // biome-ignore lint/suspicious/noExplicitAny: the decoded message's shape is trace.proto's, checked field by field below
  const message = ExportRequest.toObject(ExportRequest.decode(body), { longs: String }) as any;
  const spans: ExportedSpan[] = [];
  for (const rs of message.resourceSpans ?? []) {
    const resource = attributesOf(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        spans.push({
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          parentSpanId: hex(s.parentSpanId),
          name: s.name,
          kind: s.kind ?? 0,
          start: BigInt(s.startTimeUnixNano),
          end: BigInt(s.endTimeUnixNano),
          attributes: attributesOf(s.attributes),
          status: s.status?.code ?? 0,
          statusMessage: s.status?.message ?? '',
          traceState: s.traceState ?? '',
          flags: s.flags ?? 0,
          links: (s.links ?? []).map((l: { traceId: Uint8Array; spanId: Uint8Array; flags?: number }) => ({
            traceId: hex(l.traceId),
            spanId: hex(l.spanId),
            flags: l.flags ?? 0,
          })),
          resource,
        });
      }
    }
  }
  return spans;
}

/**
 * @example
 * const otlp = await startOtlpReceiver(); … await otlp.waitFor((spans) => spans.find((s) => s.kind === KIND.server))
 */
export async function startOtlpReceiver(mode: 'live' | 'hang' = 'live'): Promise<OtlpReceiver> {
  const spans: ExportedSpan[] = [];
  const requests: OtlpReceiver['requests'] = [];
  const hanging: ServerResponse[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ headers: req.headers, contentType: String(req.headers['content-type']) });
      if (mode === 'hang') {
        hanging.push(res);
        return;
      }
      if (req.url !== '/v1/traces' || req.headers['content-type'] !== 'application/x-protobuf') {
        res.writeHead(415).end();
        return;
      }
      spans.push(...decodeExport(Buffer.concat(chunks)));
      const ok = ExportResponse.encode(ExportResponse.create({})).finish();
      res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end(Buffer.from(ok));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    async waitFor(match, ms = 10_000) {
      const until = Date.now() + ms;
      for (;;) {
        const found = match(spans);
        if (found !== undefined) return found;
        if (Date.now() > until) throw new Error(`otlp: not found within ${ms} ms among ${JSON.stringify(spans, big)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const big = (_key: string, value: unknown) => (typeof value === 'bigint' ? value.toString() : value);
