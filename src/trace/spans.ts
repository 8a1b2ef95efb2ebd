/**
 * The service's spans, made by hand with the OpenTelemetry API around the one pipeline, the
 * gateway's decision, the store's calls and each webhook delivery: a bundle (the compiled
 * binary, the Node bundle) defeats instrumentation that patches modules as they load.
 *
 * Nothing here knows the SDK: start-up hands a tracer to `useTracer` when an endpoint is
 * configured (src/trace/export.ts). Without one no span object is ever made, yet each request
 * still has a trace id and a span id, continued from the caller's `traceparent` when valid, for
 * its log lines and its `traceresponse` header.
 */
import {
  type Attributes,
  createContextKey,
  createTraceState,
  type Context as OtelContext,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { peerText } from '../redact.ts';
import { formatTraceParent, newSpanId, newTrace, newTraceId, parseTraceParent } from './context.ts';
import { currentScope, inScope, type RequestScope, requestScope } from './scope.ts';

let tracer: Tracer | undefined;
let sampled: Sampled = () => true;

/**
 * The configured sampler's answer for a request's server span, asked before any span is made:
 * whether a span in `context` (the caller's, when its `traceparent` is valid) of trace `traceId`
 * is recorded. The SDK asks the same sampler again for the spans that are, with the same context
 * and trace id, and so gets the same answer.
 */
export type Sampled = (context: OtelContext, traceId: string) => boolean;

/** The trace id the next root span takes: the one its sampler was asked about (`traceIds`). */
let nextTraceId: string | undefined;

/**
 * The SDK's id generator (src/trace/export.ts): a root span takes the trace id its request was
 * sampled on, so that the SDK's sampler, asked again, answers the same.
 */
export const traceIds = {
  generateTraceId(): string {
    const id = nextTraceId ?? newTraceId();
    nextTraceId = undefined;
    return id;
  },
  generateSpanId: newSpanId,
};

/**
 * Every span's start and end, from one clock: the SDK anchors each span's own clock to the
 * wall clock, a millisecond apart at worst, so a child could seem to outlast its parent.
 */
const now = (): number => performance.timeOrigin + performance.now();

/**
 * Makes spans with `t` from now on (start-up, with an endpoint), for the requests `sample` says
 * are recorded; undefined: none at all.
 */
export function useTracer(t: Tracer | undefined, sample: Sampled = () => true): void {
  tracer = t;
  sampled = sample;
}

/**
 * Set on a remote parent's context when the caller's sampled flag may be honoured: the sampler
 * (src/trace/export.ts) lets only a caller with a valid key force a trace to be exported.
 */
export const VOUCHED = createContextKey('petstore.vouched');

/**
 * Set on a remote parent's context when the caller holds no valid key and the sampler, asked
 * about an id the server drew, recorded the request: the SDK's sampler (src/trace/export.ts)
 * records and exports it as decided.
 */
export const DRAWN = createContextKey('petstore.drawn');

/**
 * What `beginRequest` asks of the request (`R`) only while spans are made: made once, asked per
 * request, so a request without an endpoint makes nothing for them.
 */
export interface SpanStart<R> {
  /** The caller's `tracestate`; asked only with a valid `traceparent`. */
  tracestate(request: R): string | undefined;
  /** Whether the caller holds a valid key; asked only with a valid `traceparent`. */
  vouched(request: R): boolean;
  /** The span's name: the method and the route (`GET /v1/pets/:petId`). */
  name(request: R): string;
  /** The span's first attributes, asked only for a recorded span. */
  attributes(request: R): Attributes;
}

/**
 * The request's scope: its ids (the trace continued from a valid `traceparent`, a malformed one
 * ignored), and its server span when spans are made, a child of the caller's. `start` is asked
 * about `request` only while spans are made.
 *
 * @example
 * const scope = beginRequest(requestId, c.req.header('traceparent'), start, c)
 * inScope(scope, () => serve(c))
 */
export function beginRequest<R>(
  requestId: string,
  traceparent: string | undefined,
  start: SpanStart<R>,
  request: R,
): RequestScope {
  const parent = parseTraceParent(traceparent);
  const { traceId, spanId } = parent ? { traceId: parent.traceId, spanId: newSpanId() } : newTrace();
  if (!tracer) return requestScope(requestId, traceId, spanId);
  let context = ROOT_CONTEXT;
  let drawn: string | undefined;
  if (parent) {
    const tracestate = start.tracestate(request);
    const state = tracestate ? createTraceState(tracestate) : undefined;
    context = trace.setSpanContext(context, {
      traceId: parent.traceId,
      spanId: parent.spanId,
      traceFlags: parent.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
      isRemote: true,
      ...(state ? { traceState: state } : {}),
    });
    if (start.vouched(request)) {
      if (parent.sampled) context = context.setValue(VOUCHED, true);
    } else drawn = newTraceId();
  }
  // The sampler is asked first: a request it does not record (most, at a low ratio) gets its ids
  // and no span object at all, so it costs what a request without an endpoint costs. The
  // sampler reads neither the span's name nor its attributes. A caller without a valid key
  // continues its trace but never chooses: neither its flag nor its trace id's bits are read,
  // the root sampler decides on an id the server drew, and the SDK is told that decision.
  if (drawn !== undefined) {
    if (!sampled(ROOT_CONTEXT, drawn)) return requestScope(requestId, traceId, spanId, false);
    context = context.setValue(DRAWN, true);
  } else if (!sampled(context, traceId)) return requestScope(requestId, traceId, spanId, false);
  if (!parent) nextTraceId = traceId;
  let span: Span;
  try {
    span = tracer.startSpan(start.name(request), { kind: SpanKind.SERVER, startTime: now() }, context);
  } finally {
    nextTraceId = undefined;
  }
  if (span.isRecording()) span.setAttributes(start.attributes(request));
  return scopeOf(requestId, span, ROOT_CONTEXT);
}

function scopeOf(requestId: string, span: Span, parent: OtelContext): RequestScope {
  const { traceId, spanId, traceFlags } = span.spanContext();
  const sampled = (traceFlags & TraceFlags.SAMPLED) !== 0;
  return span.isRecording()
    ? requestScope(requestId, traceId, spanId, sampled, span, trace.setSpan(parent, span))
    : requestScope(requestId, traceId, spanId, sampled);
}

/**
 * The request's `traceresponse` header value (W3C Trace Context Level 2): its trace id, its span
 * id and whether it is exported; undefined for a request that is not traced.
 */
export function traceResponse(scope: RequestScope): string | undefined {
  const { traceId, spanId } = scope;
  return traceId && spanId ? formatTraceParent(traceId, spanId, scope.sampled === true) : undefined;
}

/**
 * Ends the request's server span with its answer: as the HTTP conventions say, a 5xx sets the
 * status to Error and a 4xx leaves it unset (the server did what it should).
 */
export function finishRequest(scope: RequestScope, status: number, attributes: Attributes): void {
  const { span } = scope;
  if (!span) return;
  span.setAttributes(attributes);
  span.setAttribute('http.response.status_code', status);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end(now());
}

export interface ChildOptions<T> {
  readonly kind?: SpanKind;
  /** Attributes of the outcome, once `work` resolves. */
  readonly outcome?: (result: T) => Attributes;
}

/**
 * Runs `work` in a child span of the current one when the request's span is recorded; else just
 * runs it. A rejection (a store time-out, Redis away) sets the span's status to Error, with
 * `error.type` the error's name.
 *
 * @example
 * const pet = await childSpan('store get', { 'db.system.name': 'sqlite', 'db.operation.name': 'get' }, () => db.get(7))
 */
export function childSpan<T>(
  name: string,
  attributes: Attributes,
  work: () => Promise<T>,
  options?: ChildOptions<T>,
): Promise<T> {
  const scope = currentScope();
  if (!tracer || !scope?.context) return work();
  const span = tracer.startSpan(
    name,
    { kind: options?.kind ?? SpanKind.INTERNAL, attributes, startTime: now() },
    scope.context,
  );
  const { spanId } = span.spanContext();
  const child = requestScope(
    scope.requestId,
    scope.traceId,
    spanId,
    scope.sampled,
    span,
    trace.setSpan(scope.context, span),
  );
  return inScope(child, () => settle(span, work, options?.outcome));
}

async function settle<T>(span: Span, work: () => Promise<T>, outcome?: (result: T) => Attributes): Promise<T> {
  try {
    const result = await work();
    if (outcome) span.setAttributes(outcome(result));
    return result;
  } catch (err) {
    failed(span, err);
    throw err;
  } finally {
    span.end(now());
  }
}

function failed(span: Span, err: unknown): void {
  const name = err instanceof Error ? err.name : 'Error';
  span.setAttribute('error.type', name);
  span.setStatus({ code: SpanStatusCode.ERROR, message: peerText(err) });
}

/**
 * The current request's trace context as a `traceparent` value, for work it leaves behind (a
 * webhook event in the outbox); undefined outside a traced request.
 */
export function currentTraceParent(): string | undefined {
  const scope = currentScope();
  return scope ? traceResponse(scope) : undefined;
}

/**
 * Runs one outgoing call in a client span of its own trace, linked to `linked` (the
 * `traceparent` of the request that caused it), handing `work` the `traceparent` to send.
 * Without spans, `work` runs alone and nothing is sent.
 *
 * @example
 * await clientSpan('POST', { 'url.full': url }, recorded, (traceparent) => send(…, traceparent), { outcome })
 */
export function clientSpan<T>(
  name: string,
  attributes: Attributes,
  linked: string | undefined,
  work: (traceparent: string | undefined) => Promise<T>,
  options?: Omit<ChildOptions<T>, 'kind'> & { readonly error?: (result: T) => string | undefined },
): Promise<T> {
  if (!tracer) return work(undefined);
  const link = parseTraceParent(linked);
  const span = tracer.startSpan(
    name,
    {
      kind: SpanKind.CLIENT,
      attributes,
      startTime: now(),
      links: link
        ? [
            {
              context: {
                traceId: link.traceId,
                spanId: link.spanId,
                traceFlags: link.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
                isRemote: true,
              },
            },
          ]
        : [],
    },
    ROOT_CONTEXT,
  );
  const { traceId, spanId, traceFlags } = span.spanContext();
  const traceparent = formatTraceParent(traceId, spanId, (traceFlags & TraceFlags.SAMPLED) !== 0);
  return settle(
    span,
    async () => {
      const result = await work(traceparent);
      const error = options?.error?.(result);
      if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
      return result;
    },
    options?.outcome,
  );
}
