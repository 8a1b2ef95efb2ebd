/**
 * A kept record of the trace ring as the spans the OpenTelemetry SDK exports (`ReadableSpan`):
 * made by the export step, off the request path, for kept records alone. The server span is
 * named and attributed by OpenTelemetry's HTTP conventions; its children by what each call
 * recorded. The path is read from the URL's bytes here, with anything token-shaped in it
 * replaced (`redactTokens`): never the query.
 */
import {
  type Attributes,
  createTraceState,
  type HrTime,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
} from '@opentelemetry/api';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { redactTokens } from '../redact.ts';
import { newSpanId } from './context.ts';
import { FAILED, HEAD, MAX_CHILDREN, OTHER_METHOD, REMOTE, TAIL, type TraceRing } from './ring.ts';

/** What every span of one process shares. */
export interface SpanSource {
  readonly resource: Resource;
  readonly scope: InstrumentationScope;
}

/** Epoch milliseconds as the SDK's `[seconds, nanoseconds]`. */
export function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

const UNSET = { code: SpanStatusCode.UNSET };
const ERROR = { code: SpanStatusCode.ERROR };

/** The path of a URL as received (its first bytes, perhaps cut), without its query. */
function pathOf(url: string): string {
  const from = url.indexOf('/', url.indexOf('//') + 2);
  if (from < 0) return '/';
  const query = url.indexOf('?', from);
  return url.slice(from, query < 0 ? undefined : query);
}

/**
 * Record `r`'s server span and its children, in that order.
 *
 * @example
 * ring.drain((r) => { for (const span of spansOf(ring, r, source)) processor.onEnd(span) })
 */
export function spansOf(ring: TraceRing, r: number, source: SpanSource): ReadableSpan[] {
  const str = (id: number | undefined) => ring.strings.of(id as number);
  const traceId = ring.traceId[r] as string;
  const spanId = ring.spanId[r] as string;
  const flags = ring.flags[r] as number;
  const method = str(ring.method[r]) ?? OTHER_METHOD;
  const route = str(ring.route[r]);
  const url = ring.url.read(r);
  const attributes: Attributes = {
    'http.request.method': method,
    'url.scheme': url.slice(0, Math.max(0, url.indexOf(':'))),
    'url.path': redactTokens(pathOf(url)),
  };
  if (route !== undefined) attributes['http.route'] = route;
  attributes['client.address'] = ring.client.read(r);
  const operation = str(ring.operation[r]);
  if (operation !== undefined) attributes['petstore.operation'] = operation;
  const consumer = ring.consumer.read(r);
  if (consumer !== '') attributes['petstore.consumer.name'] = consumer;
  const outcome = str(ring.outcome[r]);
  if (outcome !== undefined) attributes['petstore.gateway.outcome'] = outcome;
  attributes['http.response.status_code'] = ring.status[r] as number;
  if ((flags & TAIL) !== 0 && (flags & HEAD) === 0) attributes['petstore.kept_by'] = 'tail';
  const state = ring.traceState.read(r);
  const context: SpanContext =
    state === ''
      ? { traceId, spanId, traceFlags: TraceFlags.SAMPLED }
      : { traceId, spanId, traceFlags: TraceFlags.SAMPLED, traceState: createTraceState(state) };
  const parentSpanId = ring.parentSpanId[r];
  const server = readable(
    source,
    // An unknown method names the span `HTTP`, as the HTTP conventions say.
    `${method === OTHER_METHOD ? 'HTTP' : method}${route !== undefined ? ` ${route}` : ''}`,
    SpanKind.SERVER,
    context,
    (flags & REMOTE) !== 0 && parentSpanId !== undefined
      ? { traceId, spanId: parentSpanId, traceFlags: TraceFlags.SAMPLED, isRemote: true }
      : undefined,
    ring.start[r] as number,
    ring.end[r] as number,
    (flags & FAILED) !== 0 ? ERROR : UNSET,
    attributes,
  );
  const spans = [server];
  const n = ring.children[r] as number;
  const ids: SpanContext[] = [];
  for (let k = 0; k < n; k++) ids.push({ traceId, spanId: newSpanId(), traceFlags: TraceFlags.SAMPLED });
  for (let k = 0; k < n; k++) {
    const i = r * MAX_CHILDREN + k;
    const child: Attributes = { ...ring.attributeSets.of(ring.childAttributes[i] as number) };
    const numberKey = str(ring.childNumberKey[i]);
    if (numberKey !== undefined) child[numberKey] = ring.childNumber[i] as number;
    const outcomeKey = str(ring.childOutcomeKey[i]);
    if (outcomeKey !== undefined) child[outcomeKey] = str(ring.childOutcome[i]);
    const errorType = str(ring.childErrorType[i]);
    if (errorType !== undefined) child['error.type'] = errorType;
    const parent = ring.childParent[i] as number;
    spans.push(
      readable(
        source,
        str(ring.childName[i]) ?? 'call',
        ring.childKind[i] as number,
        ids[k] as SpanContext,
        parent < 0 ? context : ids[parent],
        ring.childStart[i] as number,
        ring.childEnd[i] as number,
        errorType === undefined
          ? UNSET
          : ring.errorChild[r] === k
            ? { code: SpanStatusCode.ERROR, message: ring.error.read(r) }
            : ERROR,
        child,
      ),
    );
  }
  return spans;
}

function readable(
  { resource, scope }: SpanSource,
  name: string,
  kind: number,
  context: SpanContext,
  parent: SpanContext | undefined,
  start: number,
  end: number,
  status: ReadableSpan['status'],
  attributes: Attributes,
): ReadableSpan {
  return {
    name,
    kind,
    spanContext: () => context,
    ...(parent ? { parentSpanContext: parent } : {}),
    startTime: hrTime(start),
    endTime: hrTime(end),
    duration: hrTime(end - start),
    status,
    attributes,
    links: [],
    events: [],
    ended: true,
    resource,
    instrumentationScope: scope,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}
