// Trace spans, recorded by hand around the pipeline, the gateway's decision, the store's calls
// and each webhook delivery. Instrumentation that patches modules as they load does not work in a
// bundle (the compiled binary, the Node bundle).
//
// With an endpoint configured, start-up passes a ring (src/trace/ring.ts) and the keep rules to
// `useRecorder` (from src/trace/export.ts). Every request then writes its server span and child
// spans into the ring the same way, exported or not, without creating span objects; the export
// reads the kept records off the request path. A request is kept when the sampler chose it at its
// start (head sampling), or, for a caller with a valid key, when it was slow or answered 5xx
// (tail sampling, capped per second). A webhook delivery runs off the request path as a client
// span in a trace of its own: one plain object per exported delivery, handed to the export when
// it ends (`clientSpan`).
// Without an endpoint nothing is recorded, but each request still gets a trace id and a span id,
// continued from the caller's `traceparent` when valid, for its log lines and its
// `traceresponse` header.
import {
  type Attributes,
  createContextKey,
  type Context as OtelContext,
  ROOT_CONTEXT,
  type SpanKind,
  TraceFlags,
  trace,
} from '@opentelemetry/api';
import { peerText } from '../redact.ts';
import {
  drawnLow52,
  formatTraceParent,
  newSpanId,
  newTrace,
  newTraceId,
  parseTraceParent,
  type TraceParent,
} from './context.ts';
import { currentRequest, type RequestState, requestState } from './request-state.ts';
import { ERROR_NAME, FAILED, HEAD, INTERNAL, MAX_CHILDREN, REMOTE, TAIL, type TraceRing } from './ring.ts';

let client: ClientSpans | undefined;
let ring: TraceRing | undefined;
let sampled: Sampled = () => true;

/**
 * The configured sampler's head decision for a request's server span, made at its start: whether
 * a span of trace `traceId` in `context` (the caller's, when its `traceparent` is valid) is
 * exported. `low`, when given, is the id's low 52 bits read from the bytes the server drew, so
 * the ratio sampler need not parse hex.
 */
export type Sampled = (context: OtelContext, traceId: string, low?: number) => boolean;

/** Tail sampling: which requests the sampler skipped are still kept once answered. */
export interface KeepRules {
  /** Kept when it took at least this many milliseconds; 0 turns this rule off. */
  readonly slowerThanMs: number;
  /** Kept when answered 5xx. */
  readonly errors: boolean;
  /** Requests kept by these rules each second at most. */
  readonly maxPerSecond: number;
  /** Called with the span count of each request the rules would keep beyond `maxPerSecond`. */
  readonly capped?: (spans: number) => void;
}

const NO_TAIL: KeepRules = { slowerThanMs: 0, errors: false, maxPerSecond: 0 };
let rules: KeepRules = NO_TAIL;
/** The current second of the tail's count, and how many requests it kept in it. */
let tailSecond = 0;
let tailKept = 0;

/**
 * The configured sampler's decision for a webhook delivery's span: whether the new trace
 * `traceId` is exported, given whether the span it links to was (`linkSampled`).
 */
export type LinkedSampled = (traceId: string, linkSampled: boolean) => boolean;

/** An exported webhook delivery's client span: one plain object per delivery, not an SDK span. */
export interface ClientSpan {
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
  /** The span of the request that caused the delivery, and whether it was exported. */
  readonly link: TraceParent | undefined;
  /** Epoch milliseconds, from the same clock as the request records (`now`). */
  readonly start: number;
  end: number;
  /** The attributes given at its start, then its outcome's, and `error.type` if its work threw. */
  readonly attributes: Attributes;
  /** When set, the span's status is Error with this message; else the status is unset. */
  error: string | undefined;
}

/** Where webhook deliveries' spans go while requests are recorded (src/trace/export.ts). */
export interface ClientSpans {
  readonly sampled: LinkedSampled;
  /** Takes an exported span once it has ended. */
  end(span: ClientSpan): void;
}

/**
 * Every span's start and end, from one clock: epoch milliseconds as a double, so a child never
 * seems to outlast its parent.
 */
export const now = (): number => ORIGIN + performance.now();
/** Read once: the runtime's getter is as slow as reading the clock. */
const ORIGIN = performance.timeOrigin;

/**
 * Sets what is recorded from now on (at start-up, with an endpoint): requests go into `into` and
 * are kept as `sample` and `keep` decide; webhook deliveries' spans go to `clients`. With `into`
 * undefined, nothing is recorded.
 */
export function useRecorder(
  into: TraceRing | undefined,
  clients: ClientSpans | undefined,
  sample: Sampled = () => true,
  keep: KeepRules = NO_TAIL,
): void {
  ring = into;
  client = clients;
  sampled = sample;
  rules = keep;
  tailSecond = 0;
  tailKept = 0;
}

/**
 * Set on a remote parent's context when the caller's sampled flag may be honoured: the sampler
 * (src/trace/export.ts) lets only a caller with a valid key force a trace to be exported.
 */
export const HAS_VALID_KEY = createContextKey('petstore.hasValidKey');

/**
 * What `beginRequest` reads from the request (`R`), only while requests are recorded; without
 * an endpoint nothing is read.
 */
export interface SpanStart<R> {
  /** The caller's `tracestate`; read only with a valid `traceparent`. */
  tracestate(request: R): string | undefined;
  /** Whether the caller has a valid key; read only with a valid `traceparent`. */
  hasValidKey(request: R): boolean;
}

/**
 * What `finishRequest` reads from the request (`R`), only for a kept record, so a request whose
 * trace is not exported copies no string into the ring.
 */
export interface SpanDetails<R> {
  /** The request's method. */
  method(request: R): string;
  /** The request's URL, as received. */
  url(request: R): string;
  /** The route matched, if any. */
  route(request: R): string | undefined;
  /** The operation's id, if any. */
  operation(request: R): string | undefined;
  /** The consumer's name, for a caller with a valid key. */
  consumer(request: R): string | undefined;
  /** `admitted`, or the gateway's refusal code; undefined if it never reached the gateway. */
  outcome(request: R): string | undefined;
  /** The client's address as trusted. */
  client(request: R): string;
}

/**
 * Starts a request's state: its ids (continuing a valid `traceparent`, ignoring a malformed one),
 * the head decision, and its ring record while requests are recorded. `start` is called only then.
 *
 * @example
 * const state = beginRequest(requestId, c.req.header('traceparent'), start, c)
 * inRequest(state, () => serve(c))
 */
export function beginRequest<R>(
  requestId: string,
  traceparent: string | undefined,
  start: SpanStart<R>,
  request: R,
): RequestState {
  const parent = parseTraceParent(traceparent);
  const { traceId, spanId, at } = parent ? { traceId: parent.traceId, spanId: newSpanId(), at: -1 } : newTrace();
  const into = ring;
  if (!into) return requestState(requestId, traceId, spanId);
  let head: boolean;
  let state: string | undefined;
  if (parent) {
    // A caller without a valid key keeps its trace id but has no say in sampling: the root
    // sampler decides on a fresh id, not on the caller's flag or trace id.
    state = start.tracestate(request);
    if (start.hasValidKey(request)) {
      let context = trace.setSpanContext(ROOT_CONTEXT, {
        traceId: parent.traceId,
        spanId: parent.spanId,
        traceFlags: parent.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
        isRemote: true,
      });
      if (parent.sampled) context = context.setValue(HAS_VALID_KEY, true);
      head = sampled(context, traceId);
    } else head = sampled(ROOT_CONTEXT, newTraceId());
  } else head = sampled(ROOT_CONTEXT, traceId, drawnLow52(at));
  const r = into.claim(now());
  into.flags[r] = (head ? HEAD : 0) | (parent ? REMOTE : 0);
  // A new trace's ids are written only if it is kept (`finishRequest`); most are not.
  if (parent) into.writeIds(r, traceId, spanId, parent.spanId);
  if (parent) into.traceState.writeList(r, state ?? '');
  return requestState(requestId, traceId, spanId, head, r, into.seq[r] as number);
}

/** Whether the tail may keep one more request this second, counting it; else calls `capped`. */
function tailRoom(at: number, spans: number): boolean {
  const second = Math.floor(at / 1000);
  if (second !== tailSecond) {
    tailSecond = second;
    tailKept = 0;
  }
  if (tailKept < rules.maxPerSecond) {
    tailKept++;
    return true;
  }
  rules.capped?.(spans);
  return false;
}

/**
 * Ends the request's record with its status and returns the final export decision, also stored
 * in `state.sampled`: head-sampled, or kept by the tail rules (a caller with a valid key, `keyed`,
 * whose request was slow or answered 5xx). Per the HTTP conventions, a 5xx sets the server span's
 * status to Error and a 4xx leaves it unset. `details` is read only for a kept record.
 */
export function finishRequest<R>(
  state: RequestState,
  status: number,
  keyed: boolean,
  details: SpanDetails<R>,
  request: R,
): boolean {
  const into = ring;
  const r = state.record;
  const head = state.sampled === true;
  if (!into || r === undefined) return head;
  if (!into.holds(r, state.seq as number)) {
    // The record was reused while the request was served (more requests in flight than the ring
    // holds): nothing is exported, and the `traceresponse` says so.
    if (head) {
      into.overwritten++;
      into.wake?.(false);
    }
    state.sampled = false;
    return false;
  }
  const at = now();
  let kept = head;
  if (
    !head &&
    keyed &&
    ((rules.errors && status >= 500) ||
      (rules.slowerThanMs > 0 && at - (into.start[r] as number) >= rules.slowerThanMs))
  ) {
    kept = tailRoom(at, 1 + (into.children[r] as number));
    if (kept) into.flags[r] = (into.flags[r] as number) | TAIL;
  }
  into.end[r] = at;
  into.status[r] = status;
  if (status >= 500) into.flags[r] = (into.flags[r] as number) | FAILED;
  if (kept) {
    if (((into.flags[r] as number) & REMOTE) === 0) {
      into.writeIds(r, state.traceId as string, state.spanId as string);
      into.traceState.clear(r);
    }
    describe(into, r, details, request);
  }
  into.settle(r, kept);
  state.sampled = kept;
  return kept;
}

/** Copies the request's details for a kept record's server span into the ring. */
function describe<R>(into: TraceRing, r: number, details: SpanDetails<R>, request: R): void {
  into.method[r] = into.methodId(details.method(request));
  into.url.write(r, details.url(request));
  into.route[r] = into.strings.id(details.route(request));
  into.operation[r] = into.strings.id(details.operation(request));
  into.outcome[r] = into.strings.id(details.outcome(request));
  into.consumer.write(r, details.consumer(request) ?? '');
  into.client.write(r, details.client(request));
}

/**
 * The request's `traceresponse` header value (W3C Trace Context Level 2): its trace id, its span
 * id and whether it is exported; undefined for a request that is not traced.
 */
export function traceResponse(state: RequestState): string | undefined {
  const { traceId, spanId } = state;
  return traceId && spanId ? formatTraceParent(traceId, spanId, state.sampled === true) : undefined;
}

/** What a child span records besides its name and its fixed attributes. */
export interface ChildOptions<T> {
  readonly kind?: SpanKind;
  /** An attribute known once `work` resolves: its key, and how to get its value from the result. */
  readonly outcome?: { readonly key: string; readonly of: (result: T) => string };
  /**
   * The attribute key the child records the number `value` under (`petstore.gateway.cost`); `value`
   * is the last argument of `childSpan` and `openChild`.
   */
  readonly valueKey?: string;
}

/**
 * Runs `work` as a child span of the current request's open span while requests are recorded;
 * otherwise just runs it. `attributes` must be one of a few fixed objects (they are interned by
 * reference); `value` is recorded under `options.valueKey`. A rejection (a store time-out, Redis
 * down) sets the child's status to Error, with `error.type` the error's name. A caller that
 * awaits the work itself uses `openChild` and `closeChild` instead, which make no extra promise.
 *
 * @example
 * const pet = await childSpan('get pets', GET_ATTRIBUTES, () => db.get(7))
 */
export function childSpan<T>(
  name: string,
  attributes: Attributes,
  work: () => Promise<T>,
  options?: ChildOptions<T>,
  value?: number,
): Promise<T> {
  const child = openChild(name, attributes, options, value);
  return child === NO_CHILD ? work() : recorded(child, work, options?.outcome);
}

async function recorded<T>(child: number, work: () => Promise<T>, outcome: ChildOptions<T>['outcome']): Promise<T> {
  let result: T;
  try {
    result = await work();
  } catch (err) {
    failChild(child, err);
    throw err;
  }
  closeChild(child, result, outcome);
  return result;
}

/** What `openChild` answers when no child is recorded. */
export const NO_CHILD = -1;

/**
 * Opens a child span of the current request's open span, for a caller that awaits the work itself
 * and then calls `closeChild` (or `failChild` on a rejection). Returns a numeric handle, or
 * `NO_CHILD` when nothing is recorded (no endpoint, no request, or its record lost or full).
 *
 * @example
 * const child = openChild('gateway decide', NO_ATTRIBUTES, DECISION_SPAN, cost)
 * let verdict
 * try { verdict = await decide() } catch (err) { failChild(child, err); throw err }
 * closeChild(child, verdict, DECISION_SPAN.outcome)
 */
export function openChild<T>(name: string, attributes: Attributes, options?: ChildOptions<T>, value?: number): number {
  const into = ring;
  if (!into) return NO_CHILD;
  const state = currentRequest();
  const r = state?.record;
  if (r === undefined || !into.holds(r, state?.seq as number)) return NO_CHILD;
  const n = into.openChild(
    r,
    into.strings.id(name),
    into.attributeSets.id(attributes),
    options?.kind ?? INTERNAL,
    now(),
  );
  if (n < 0) return NO_CHILD;
  if (options?.valueKey !== undefined && value !== undefined) {
    into.setChildNumber(r * MAX_CHILDREN + n, into.strings.id(options.valueKey), value);
  }
  return into.childHandle(r, n);
}

/** Ends `child` (from `openChild`) after its work resolved with `result`, recording `outcome`. */
export function closeChild<T>(child: number, result: T, outcome?: ChildOptions<T>['outcome']): void {
  const into = ring;
  if (child === NO_CHILD || !into) return;
  const i = into.heldChild(child);
  if (i < 0) return;
  if (outcome) {
    into.setChildOutcome(i, into.strings.id(outcome.key), into.strings.id(outcome.of(result)));
  }
  into.closeChild(i, now());
}

/**
 * Ends `child` (from `openChild`) after its work failed with `err`: status Error, `error.type`
 * the error's name, and the first failed child's message kept for the server span.
 */
export function failChild(child: number, err: unknown): void {
  const into = ring;
  if (child === NO_CHILD || !into) return;
  const i = into.heldChild(child);
  if (i < 0) return;
  into.setChildError(i, into.strings.id(err instanceof Error ? err.name : ERROR_NAME) || 1);
  const r = (i - (i % MAX_CHILDREN)) / MAX_CHILDREN;
  if (into.errorChild[r] === -1) {
    into.errorChild[r] = i % MAX_CHILDREN;
    into.error.write(r, peerText(err));
  }
  into.closeChild(i, now());
}

/**
 * The current request's trace context as a `traceparent` value, for work it leaves behind (a
 * webhook event in the outbox); undefined outside a traced request.
 */
export function currentTraceParent(): string | undefined {
  const state = currentRequest();
  return state ? traceResponse(state) : undefined;
}

/** What a webhook delivery's span records of its result: attributes, and an error's text. */
export interface ClientOptions<T> {
  readonly outcome?: (result: T) => Attributes;
  readonly error?: (result: T) => string | undefined;
}

/**
 * Runs one outgoing call as a client span in a new trace linked to `linked` (the `traceparent`
 * of the request that caused it), passing `work` the `traceparent` to send. The sampler decides
 * from the new trace id and the link (`ClientSpans.sampled`); a span that is not exported is not
 * recorded and its `traceparent` is flagged not sampled. Without an endpoint, `work` gets
 * undefined and no `traceparent` is sent.
 *
 * @example
 * await clientSpan('POST', { 'url.full': url }, recorded, (traceparent) => send(…, traceparent), { outcome })
 */
export async function clientSpan<T>(
  name: string,
  attributes: Attributes,
  linked: string | undefined,
  work: (traceparent: string | undefined) => Promise<T>,
  options?: ClientOptions<T>,
): Promise<T> {
  const to = client;
  if (!to) return work(undefined);
  const link = parseTraceParent(linked);
  const traceId = newTraceId();
  const spanId = newSpanId();
  const exported = to.sampled(traceId, link?.sampled === true);
  const traceparent = formatTraceParent(traceId, spanId, exported);
  if (!exported) return work(traceparent);
  const span: ClientSpan = {
    name,
    traceId,
    spanId,
    link,
    start: now(),
    end: 0,
    attributes: { ...attributes },
    error: undefined,
  };
  try {
    const result = await work(traceparent);
    if (options?.outcome) Object.assign(span.attributes, options.outcome(result));
    span.error = options?.error?.(result);
    return result;
  } catch (err) {
    span.attributes['error.type'] = err instanceof Error ? err.name : ERROR_NAME;
    span.error = peerText(err);
    throw err;
  } finally {
    span.end = now();
    to.end(span);
  }
}
