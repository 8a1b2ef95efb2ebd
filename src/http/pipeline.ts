// A request's way from Hono's route to its answer, in eight numbered steps (the comment below,
// and ARCHITECTURE.md's walk): every API route's handler is made here from the operations table.
import type { Context, ErrorHandler } from 'hono';
import type { Deprecation, KeyHolder, Operation, UnkeptOperation } from '../api/operation-types.ts';
import { isApiPath } from '../api/operations.ts';
import { inputReader } from '../api/validate.ts';
import type { AppEnv } from '../app-env.ts';
import { ApiError, methodNotAllowed, NO_SUCH_PATH } from '../core/api-error.ts';
import type { Clock } from '../core/clock.ts';
import type { Decision } from '../core/decision.ts';
import type { OpsRoute } from '../core/ops-route.ts';
import type { AnswerHeaders, Reply } from '../core/reply.ts';
import { answerHeaders, beginAnswer } from '../core/reply.ts';
import {
  type ConsumerCaller,
  type GatedOperation,
  type GatewayPass,
  ownerOfCaller,
  quotaStatus,
} from '../gateway/gateway.ts';
import type { Logger } from '../log.ts';
import { operationIndex } from '../metrics/labels.ts';
import type { Metrics } from '../metrics/registry.ts';
import { peerText } from '../redact.ts';
import type { ChangeCount } from '../store/store.ts';
import { currentScope, type RequestScope } from '../trace/request-scope.ts';
import { answer } from './answer.ts';
import { checkBodyOnGet, limitBody } from './body-limit.ts';
import { corsStep } from './cors.ts';
import { requestCounter } from './count-requests.ts';
import { answerError, toApiError } from './error-answer.ts';
import { weakEtag } from './etag.ts';
import { AnswerMemo, type StoreChanges } from './memo.ts';
import { requestLogSteps } from './request-log.ts';
import { requestTrace } from './request-trace.ts';
import { MAX_URI_BYTES, pathAndQuery, uriTooLong } from './uri-limit.ts';

/** What every pipeline needs: the ops routes' and the metrics port's, and the API's too. */
export interface PipelineOptions {
  log: Logger;
  clock: Clock;
  /** The client's address, for the log line of requests the gateway does not see. */
  clientAddress: (c: Context<AppEnv>) => string;
  /** Largest accepted request body. */
  maxBodyBytes: number;
  /** Whether a path is one the gateway answers, whose answers are private (`no-store`): `/v1` by default. */
  gatedPath?: (path: string) => boolean;
  /** Origins whose pages may call the API (`--cors-origin`); none: no CORS at all. */
  corsOrigins?: readonly string[];
  /** Counts requests when given (`--metrics`). */
  metrics?: Metrics;
  /** The operation label every request is counted under, whatever route served it (the admin port's). */
  countAs?: string;
  /** Makes a fresh request id when the client sent none usable. */
  newId?: () => string;
  /** Whether the request's caller holds a valid key: only then may its `traceparent` force a trace to be exported. */
  holdsValidKey?: (c: Context<AppEnv>) => boolean;
}

/** What a pipeline that serves a table of operations needs besides: the gateway and the handlers' deps. */
export interface ApiPipelineOptions<D> extends PipelineOptions {
  /** The gateway's pass (src/gateway/gateway.ts). */
  gateway: GatewayPass;
  /** What handlers work with. */
  deps: D;
  /** The methods the table serves at a path, or undefined for a path it has not (a 405's `Allow`). */
  allowedMethods: (path: string) => readonly string[] | undefined;
  /**
   * The store's change count and what changed since (`DataStore.changeCount`, `unchanged`), and
   * its due expiry (`startDueExpiry`, awaited before a kept answer is looked up): an operation
   * whose answers are kept (`memo`) is served from the memo while nothing its answer read has
   * changed. Without it, only operations that are never kept can be added.
   */
  changes?: StoreChanges;
}

/**
 * The way of a request through the service, in the order it meets the steps. Every request
 * starts with step 1:
 * 1. `exchange`, around all the rest. It gives the request its id and the headers every answer
 *    carries (`X-Request-Id`; on the API `Cache-Control: no-store` and `nosniff`; `traceresponse`),
 *    and answers 414 for an overlong URI. Once the request is answered, it ends the span and
 *    writes the log line and the metrics.
 *
 * Then an API operation (`serveOperation`, made by `operationHandler`) goes on:
 * 2. CORS: a preflight is answered here, before any key is asked for.
 * 3. The gateway (src/gateway/gateway.ts) identifies the caller, takes its in-flight slot, asks the
 *    limiter, writes the rate-limit headers and checks the key's scope. A refusal is answered at
 *    once. An operation that reads the quota gets it from the limiter's decision, with its input.
 * 4. A deprecated operation's headers (`Deprecation`, `Sunset`, successor `Link`).
 * 5. The body's limits (413; a body sent with GET is held to the same rules), then the answer
 *    kept for this path and query, if there is one.
 * 6. The input, validated by the table's schemas (400, 415).
 * 7. The handler. Its reply is tagged with an ETag when the table says so.
 * 8. The one answer path (src/http/answer.ts): 304, compression, HEAD.
 *
 * A path under the API prefix that no operation serves (Hono's `notFound`) passes steps 2, 3 and
 * 5's body limits too, then gets 404 or 405. An ops route (`opsRoute`) runs its handler after step 1.
 *
 * Errors. Every refusal and error leaves through `fail`, which keeps the error for the log line
 * and the metrics and answers it with `answerError`. The gateway returns its refusals rather
 * than throwing them, because a throw through its async frames is slow. What a handler or a step
 * throws is caught in step 1 (`answerInScope`) and turned into an `ApiError` by `toApiError`.
 * Hono's `onError` sees only what escapes step 1, and answers it the same way.
 *
 * Each step is a function below, in this order. The steps share `PipelineParts`, made once by
 * `partsOf`; what one operation needs is made once when its route is added (`routeOf`).
 *
 * The steps nest rather than chain: each runs the rest inside itself, so step 1 sees the answer
 * of every later step, and the gateway holds the caller's in-flight slot until the answer is made.
 *
 *   exchange (1)
 *   └ answerInScope (1)
 *     └ serveOperation
 *       └ gated (2 CORS, 3 gateway(…, admitted))
 *         └ admitted: the deprecation headers (4)
 *           └ bodyChecked (5)
 *             └ answerOperation (5 kept answer, 6 input, 7 handler) → answer (8)
 *
 * `pipeline` makes the steps of an app without operations (the metrics port); `apiPipeline` adds
 * `operation` and the gateway, and its types ask for what serving a table needs.
 *
 * @example
 * const steps = apiPipeline({ log, clock, clientAddress, gateway: pass, deps, changes: store, allowedMethods, maxBodyBytes: 65536 })
 * app.on(op.method, `/v1${op.path}`, steps.operation(op))
 * app.notFound(steps.notFound)
 */
export function pipeline(options: PipelineOptions) {
  const parts = partsOf(options);
  return steps(
    parts,
    exchangeHandler(parts, (c) => fail(c, NO_SUCH_PATH)),
  );
}

export function apiPipeline<D extends object>(
  options: ApiPipelineOptions<D> & { changes: StoreChanges },
): ApiSteps<Operation<D>>;
export function apiPipeline<D extends object>(options: ApiPipelineOptions<D>): ApiSteps<UnkeptOperation<D>>;
export function apiPipeline<D extends object>(options: ApiPipelineOptions<D>): ApiSteps<Operation<D>> {
  const { gateway, deps, allowedMethods, changes } = options;
  const memo = changes && new AnswerMemo(changes);
  const parts: ApiParts<D> = { ...partsOf(options), gateway, deps, allowedMethods, changes, memo };
  /** Hono's `notFound`: a path no route serves; under the API prefix it meets the gateway first. */
  const notFound = exchangeHandler(parts, (c) =>
    parts.gatedPath(c.req.path) ? unserved(parts, c) : fail(c, NO_SUCH_PATH),
  );
  return { ...steps(parts, notFound), operation: (op: Operation<D>) => operationHandler(parts, op) };
}

/** The steps of an app that serves a table: those of every app, and one route per operation. */
export interface ApiSteps<O> extends ReturnType<typeof steps> {
  operation(op: O): Served;
}

/** The steps every app has: the outer step, ops routes, `notFound` and Hono's `onError`. */
function steps(parts: PipelineParts, notFound: Served) {
  /** Hono's `onError`, for what escapes `exchange`: the Error body all the same. */
  const onError: ErrorHandler<AppEnv> = (err, c) => fail(c, toApiError(err, c, parts.report, parts.unavailable));
  return {
    exchange: (inner: Inner) => exchangeHandler(parts, inner),
    opsRoute: (route: OpsRoute) => opsRouteHandler(parts, route),
    notFound,
    onError,
  };
}

/** What the steps of one pipeline share: its options, and the parts made once from them. */
interface PipelineParts {
  readonly gatedPath: (path: string) => boolean;
  readonly maxBodyBytes: number;
  readonly requestLog: ReturnType<typeof requestLogSteps>;
  readonly tracing: ReturnType<typeof requestTrace>;
  /** Counts every request and its answer (`--metrics`). */
  readonly requestMetrics: ReturnType<typeof requestCounter> | undefined;
  readonly cors: ReturnType<typeof corsStep> | undefined;
  readonly limit: ReturnType<typeof limitBody>;
  /** Counts a kept operation's request as a memo hit or miss (`--metrics`). */
  readonly memoCount: ((op: number, hit: boolean) => void) | undefined;
  /** How `toApiError` logs an unhandled error, and a store that is unavailable. */
  readonly report: (err: unknown, c: Context<AppEnv>) => void;
  readonly unavailable: (err: unknown, c: Context<AppEnv>) => void;
}

/** What the steps of a pipeline that serves a table share besides. */
interface ApiParts<D> extends PipelineParts {
  readonly gateway: GatewayPass;
  readonly deps: D;
  readonly allowedMethods: (path: string) => readonly string[] | undefined;
  readonly changes: StoreChanges | undefined;
  /** The kept answers, when the table has a store to keep them by. */
  readonly memo: AnswerMemo | undefined;
}

function partsOf({
  log,
  clock,
  clientAddress,
  maxBodyBytes,
  corsOrigins = [],
  metrics,
  countAs,
  newId,
  gatedPath = isApiPath,
  holdsValidKey = () => false,
}: PipelineOptions): PipelineParts {
  // Within a request the scope names it; Hono's `onError` runs after the scope is closed.
  const named = (c: Context<AppEnv>, err: unknown) =>
    currentScope() ? { error: peerText(String(err)) } : { requestId: c.get('requestId'), error: peerText(String(err)) };
  return {
    gatedPath,
    maxBodyBytes,
    requestLog: requestLogSteps({ log, clock, clientAddress, ...(newId ? { newId } : {}) }),
    tracing: requestTrace({ clientAddress, holdsValidKey }),
    requestMetrics: metrics && requestCounter({ metrics, ...(countAs ? { operation: countAs } : {}) }),
    cors: corsOrigins.length > 0 ? corsStep(corsOrigins) : undefined,
    limit: limitBody(maxBodyBytes),
    memoCount: metrics && ((op, hit) => metrics.memoAnswered(op, hit)),
    report: (err, c) => log.error('unhandled error', named(c, err)),
    unavailable: (err, c) => log.warn('store unavailable', named(c, err)),
  };
}

/**
 * Step 1 around `inner`, the rest of a request's way: every Hono route is one of these, so each
 * request matches one handler and Hono calls it without composing layers. Whatever `inner`
 * throws is answered here, so the log line and the metrics see every answer. The request
 * scope (src/trace/request-scope.ts) is opened here, holding its id and, unless `traced` is false, its
 * trace: every line logged and every span made while serving it reads the scope.
 */
function exchangeHandler(parts: PipelineParts, inner: Inner, traced = true): Served {
  const { requestLog, tracing } = parts;
  // Named as the step it serves, so a CPU profile names it.
  return function exchange(c) {
    const started = requestLog.start(c);
    return tracing.run(c, started.id, traced, (scope) => answerInScope(parts, c, started, scope, inner));
  };
}

/** Step 1 inside the request's scope: the headers every answer carries, 414, `inner`, then the log line, metrics and span. */
async function answerInScope(
  { requestLog, requestMetrics, tracing, gatedPath, report, unavailable }: PipelineParts,
  c: Context<AppEnv>,
  started: ReturnType<PipelineParts['requestLog']['start']>,
  scope: RequestScope,
  inner: Inner,
): Promise<Response> {
  const metricsStart = requestMetrics?.start();
  const id = started.id;
  const traceresponse = tracing.header(scope);
  // Every API answer is private to its caller and never sniffed (SECURITY.md).
  const headers: AnswerHeaders = gatedPath(c.req.path)
    ? { 'X-Request-Id': id, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' }
    : { 'X-Request-Id': id };
  if (traceresponse) headers.traceresponse = traceresponse;
  beginAnswer(c, headers);
  let res: Response;
  const tooLong = uriTooLong(c.req.url, MAX_URI_BYTES);
  if (tooLong) res = fail(c, tooLong);
  else {
    try {
      res = await inner(c);
    } catch (err) {
      res = fail(c, toApiError(err, c, report, unavailable));
    }
  }
  // The verdict is final once the answer is: when the tail rules keep a request the head did not
  // (slow, or a 5xx), or its record was lost, `traceresponse` is written again with it.
  const head = scope.sampled === true;
  if (tracing.finish(c, scope, res.status) !== head && traceresponse) setTraceResponse(res, tracing.header(scope));
  requestLog.finish(c, started, res.status, scope.sampled === true);
  if (requestMetrics && metricsStart !== undefined) requestMetrics.finish(c, metricsStart, res.status, scope);
  return res;
}

/** `res`'s `traceresponse`, when its headers can still be changed. */
function setTraceResponse(res: Response, value: string | undefined): void {
  if (value === undefined) return;
  try {
    res.headers.set('traceresponse', value);
  } catch {
    // A response whose headers are immutable keeps the decision made at the start.
  }
}

/** Steps 2 and 3, then `admitted` for a request the gateway lets through. */
async function gated<D>(
  { gateway, cors }: ApiParts<D>,
  c: Context<AppEnv>,
  op: GatedOperation,
  admitted: (decision: Decision, caller: ConsumerCaller) => Promise<Response>,
) {
  const preflight = cors?.(c);
  if (preflight) return preflight;
  const answered = await gateway(c, op, admitted);
  if (!(answered instanceof ApiError)) return answered;
  c.set('refusal', answered.code);
  return fail(c, answered);
}

/** Step 5's first half: the body's size (413) and a body sent with GET; then `next`. */
async function bodyChecked(
  { limit, maxBodyBytes }: PipelineParts,
  c: Context<AppEnv>,
  next: () => Promise<Response>,
): Promise<Response> {
  // No body stream: any GET or HEAD (the runtimes give them none), or a write sent without a
  // body (its 400 comes at step 6). Only a GET's or HEAD's headers can tell of a body, and
  // `checkBodyOnGet` looks at no other method.
  if (!c.req.raw.body) {
    checkBodyOnGet(c, maxBodyBytes);
    return next();
  }
  let response: Response | undefined;
  await limit(c, async () => {
    checkBodyOnGet(c, maxBodyBytes);
    response = await next();
  });
  // `limit` either called its continuation or threw the 413.
  return response as Response;
}

/**
 * An API operation's route: steps 1 to 8, with what the operation needs made once. Each step
 * calls the next: `exchange` (1) → `gated` (2, 3) → the deprecation headers (4) → `bodyChecked`
 * (5) → `answerOperation` (5's kept answer, 6, 7) → `answer` (8).
 */
function operationHandler<D>(parts: ApiParts<D>, op: Operation<D>): Served {
  const route = routeOf(parts, op);
  const { deprecated } = route;
  // Named as the step it serves, so a CPU profile names it.
  return exchangeHandler(parts, function serveOperation(c) {
    c.set('operation', op.id);
    return gated(parts, c, op, (decision, caller) => {
      if (deprecated) Object.assign(answerHeaders(c), deprecated);
      return bodyChecked(parts, c, () => answerOperation(parts, route, c, decision, caller));
    });
  });
}

/** What serving one operation needs, made and checked once, when its route is added. */
interface OperationRoute<D> {
  readonly op: Operation<D>;
  readonly deps: D;
  /** A deprecated operation's headers, the same on every answer of it; undefined for the others. */
  readonly deprecated: AnswerHeaders | undefined;
  readonly readInput: ReturnType<typeof inputReader<D>>;
  /** Its index among the metrics' operations. */
  readonly metricsIndex: number;
}

function routeOf<D>({ deps }: ApiParts<D>, op: Operation<D>): OperationRoute<D> {
  // A quota reader's answer is the caller's own: never kept for another.
  if (op.memo && op.readsQuota) throw new TypeError(`pipeline: ${op.id} reads the quota and cannot be kept`);
  // A kept answer is found by its path and query alone, so its input must come from nothing else.
  if (op.memo && (op.headers || op.body)) {
    throw new TypeError(`pipeline: ${op.id} reads headers or a body and cannot be kept by its path and query`);
  }
  const deprecated = op.deprecated ? deprecationHeaders(op.deprecated) : undefined;
  return { op, deps, deprecated, readInput: inputReader(op), metricsIndex: operationIndex(op.id) };
}

/** Steps 5 (the kept answer), 6 and 7: a kept answer is used while nothing it read has changed. */
async function answerOperation<D>(
  { changes, memo, memoCount }: ApiParts<D>,
  { op, deps, readInput, metricsIndex }: OperationRoute<D>,
  c: Context<AppEnv>,
  decision: Decision,
  caller: ConsumerCaller,
): Promise<Response> {
  // The path and query as sent: the same text always validates to the same input (`routeOf`
  // refuses a kept operation that reads headers or a body).
  const memoKey = op.memo && memo ? pathAndQuery(c.req.url) : undefined;
  let changeCount: ChangeCount;
  if (memoKey !== undefined && changes) {
    // An order whose hold has run out makes its pet available: the read waits for that expiry, so
    // it shows the pet `available` at the version a PATCH's `If-Match` will meet.
    const expiring = changes.startDueExpiry();
    if (expiring) await expiring;
    changeCount = changes.changeCount();
  }
  const kept = memoKey === undefined ? undefined : memo?.get(memoKey, changeCount);
  if (kept) {
    memoCount?.(metricsIndex, true);
    return answer(c, kept);
  }
  // A quota reader's input is the decision that admitted it.
  const quota = op.readsQuota ? quotaStatus(caller.consumer, decision) : undefined;
  const read = async () =>
    tagged(op, await op.handler(await readInput(c, ownerOfCaller(caller), quota, keyOf(op, caller)), deps));
  if (memoKey === undefined || !memo) return answer(c, await read());
  // A request answered by another's read under way is counted a hit: it read nothing itself.
  const { reply, joined } = await memo.readOrJoin(memoKey, changeCount, read);
  memoCount?.(metricsIndex, joined);
  return answer(c, reply);
}

/** Step 7's tag: a weak ETag of the reply's body, when the table says so and the reply has no tag of its own. */
function tagged<D>(op: Operation<D>, reply: Reply): Reply {
  if (!op.weakEtag || reply.etag !== undefined || reply.status !== 200 || typeof reply.body !== 'string') return reply;
  const link = reply.headers?.Link;
  return { ...reply, etag: link === undefined ? weakEtag(reply.body) : weakEtag(reply.body, link) };
}

/** The caller's consumer and key id, for an audited operation only. */
function keyOf<D>(op: Operation<D>, caller: ConsumerCaller): KeyHolder | undefined {
  return op.audited ? { consumer: caller.consumer.name, id: caller.key.id } : undefined;
}

/**
 * A path under the API prefix that no operation serves with this method: after CORS and the
 * gateway (401 before 404, so a caller without a key learns nothing of paths), 405 with
 * `Allow` for a path the table has, else 404.
 */
function unserved<D>(parts: ApiParts<D>, c: Context<AppEnv>): Promise<Response> {
  const allowed = parts.allowedMethods(c.req.path);
  const refusal = allowed ? methodNotAllowed(c.req.method, allowed) : NO_SUCH_PATH;
  // Its body is checked as a served path's is, so a 413 or 415 comes before the 404 or 405 there too.
  return gated(parts, c, UNSERVED, () => bodyChecked(parts, c, () => Promise.reject(refusal)));
}

/** An ops route: step 1, then its handler, answered through the one answer path. */
function opsRouteHandler(parts: PipelineParts, route: OpsRoute): Served {
  return exchangeHandler(
    parts,
    async function opsRoute(c) {
      c.set('operation', route.id);
      return answer(c, await route.handler(c));
    },
    !UNTRACED.has(route.id),
  );
}

/** Answers a refusal or error, and keeps it where the log line and metrics read it. */
function fail(c: Context<AppEnv>, err: ApiError): Response {
  c.error = err;
  return answerError(c, err);
}

/** What `exchange` wraps: the rest of a request's way after step 1. */
type Inner = (c: Context<AppEnv>) => Response | Promise<Response>;

/** A Hono route's handler, and `notFound`: the request in, its one answer out. */
type Served = (c: Context<AppEnv>) => Promise<Response>;

/** The ops routes probes and scrapers call every few seconds: no trace is made of them. */
const UNTRACED: ReadonlySet<string> = new Set(['healthz', 'readyz', 'metrics']);

/** What the gateway knows of a path no operation serves: it costs 1 and needs no scope. */
const UNSERVED: GatedOperation = {};

/** RFC 9745 `Deprecation`, RFC 8594 `Sunset` and the successor `Link` of a deprecated operation. */
function deprecationHeaders({ since, sunset, successor }: Deprecation): AnswerHeaders {
  return {
    Deprecation: `@${Date.parse(since) / 1000}`,
    Sunset: new Date(sunset).toUTCString(),
    Link: `<${successor}>; rel="successor-version"`,
  };
}
