// Makes every route's handler and runs each request from Hono's route to its answer. The tree
// below is the one list of a table operation's eight steps, in the order they run; ARCHITECTURE.md
// shows the same tree (src/layout.test.ts checks it) and says what each step does. The make…
// functions (`makeOperationHandler`, `makeRequestHandler`, `makeServiceRouteHandler`) run once per
// route, when the app is built; the tree runs per request, each function indented under its caller:
//
//   handleRequest                   step 1, the route's handler
//     runRequest                    step 1, inside the request's state
//       serveOperation              steps 2 to 8
//         addCorsHeaders            step 2
//         passGateway               step 3: the gateway calls back for the rest
//           addDeprecationHeaders   step 4
//           checkBodyLimits         step 5
//             afterDueOrderExpiry   step 6.1: the rest, after any due orders' expiry under way
//               memoOrRun           step 6.2
//                 runHandler        step 7, through the memo's readOrJoin when memoised
//                 answer            step 8
//
// Steps 4 to 8 run inside the gateway's callback (`serveAdmitted`), so the gateway keeps the
// caller's in-flight slot until the answer is made or a step throws. Step 6.2 calls `answer`
// (step 8) from each of its three exits: a memo hit, the reply of an operation that is not
// memoised, and a read it ran or joined. Steps 6.1 to 7 take `parts, route, c, decision, caller`
// as separate arguments so that no object carries them. Of the closures that carry them, a
// request allocates only `serveAdmitted` always, `serveCheckedBody` once the gateway admits the
// request, `readReply` on a memo miss, and step 6.1's `then` callback when it waits for the due
// orders' expiry (bench/README.md#what-a-request-allocates-on-its-way). Besides these, step 1
// makes one for the request state (`handleRequest`'s) and the gateway one for the address.
//
// The file defines the app's handlers and the parts they share first, then the tree's functions
// in its order, each followed by its helpers, and last `serveNoRoute` and
// `makeServiceRouteHandler`, for the requests no operation serves. `handleRequest` is the closure
// `makeRequestHandler` returns and `serveOperation` the one `makeOperationHandler` passes it, so
// each of these make… functions stands where its closure runs in the tree.
//
// Names: a route handler (`RouteHandler`, what the make… functions return) is what Hono calls for
// a request; an operation handler (`op.handler`) is the table's function that step 7 runs; an
// `InnerHandler` is what step 1 wraps: `serveOperation`, `serviceRoute` or the unmatched path's.
import type { Context, ErrorHandler } from 'hono';
import type { KeyHolder, Operation, StorelessOperation } from '../api/operation-types.ts';
import { isApiPath } from '../api/operations.ts';
import type { AppEnv } from '../app-env.ts';
import { ApiError, methodNotAllowed, NO_SUCH_PATH } from '../core/api-error.ts';
import type { Clock } from '../core/clock.ts';
import type { Decision } from '../core/decision.ts';
import type { AnswerHeaders, Reply } from '../core/reply.ts';
import { answerHeaders, beginAnswer } from '../core/reply.ts';
import type { ServiceRoute, ServiceRouteId } from '../core/service-route.ts';
import { type AdmissionCheck, type ConsumerCaller, type GatedOperation, quotaStatus } from '../gateway/gateway.ts';
import { ownerOf } from '../keys/records.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics/registry.ts';
import { peerText } from '../redact.ts';
import { currentRequest, type RequestState } from '../trace/request-state.ts';
import { answer } from './answer.ts';
import { type BodyLimit, checkBodyOnGetOrHead, limitBody } from './body-limit.ts';
import { Cors } from './cors.ts';
import { requestCounter } from './count-requests.ts';
import { answerError, toApiError } from './error-answer.ts';
import { weakEtagOf } from './etag.ts';
import { ReplyMemo, type StoreChanges } from './memo.ts';
import { type DueOrderExpiry, type OperationRoute, routeOf } from './operation-route.ts';
import { type RequestStart, requestLog } from './request-log.ts';
import { requestTrace } from './request-trace.ts';
import { MAX_URI_BYTES, pathAndQuery, uriTooLong } from './uri-limit.ts';

/** Options of every pipeline, whether it serves an operations table or only service routes. */
export interface RouteHandlersOptions {
  log: Logger;
  clock: Clock;
  /**
   * The client's address: the trace's `client.address` for every request, and the log line's
   * `client` for requests the gateway does not see.
   */
  clientAddress: (c: Context<AppEnv>) => string;
  /** Largest accepted request body. */
  maxBodyBytes: number;
  /**
   * Whether the gateway serves a path; its answers get `Cache-Control: no-store`. Default: paths
   * under `/v1`.
   */
  isGatewayPath?: (path: string) => boolean;
  /** Origins whose pages may call the API (`--cors-origin`). With none, there is no CORS at all. */
  corsOrigins?: readonly string[];
  /** Counts requests when given (`--metrics` or `--metrics-port`). */
  metrics?: Metrics;
  /** Counts every request under this operation label, whatever route served it (the admin port). */
  countAs?: string;
  /** Makes a fresh request id when the client sent none usable. */
  newId?: () => string;
  /**
   * Whether the request's caller has a valid key: only then may its `traceparent` force a trace
   * to be exported.
   */
  hasValidKey?: (c: Context<AppEnv>) => boolean;
}

/** Options of a pipeline that serves an operations table. */
export interface TableRouteHandlersOptions<D> extends RouteHandlersOptions {
  /** Step 3's admission check, made by `createAdmissionCheck()` of src/gateway/gateway.ts. */
  admissionCheck: AdmissionCheck;
  /** What the table's handlers work with (the store, the clock). */
  deps: D;
  /** Returns the methods the table serves at a path (a 405's `Allow`), or undefined for none. */
  allowedMethods: (path: string) => readonly string[] | undefined;
  /**
   * The store, for step 6: the memo's change count and the expiry of due orders. Without it, the
   * table may hold only operations that are not memoised and do not wait for that expiry.
   */
  changesAndExpiry?: StoreChanges & DueOrderExpiry;
}

/**
 * Makes the route handlers of an app that serves only service routes (the metrics port). Each
 * request runs step 1 (`handleRequest`), then its service route or a 404.
 *
 * @example
 * const handlers = serviceRouteHandlers({ log, clock, clientAddress, maxBodyBytes: 65536 })
 * app.get(route.path, handlers.serviceRoute(route))
 * app.notFound(handlers.serveUnmatched)
 */
export function serviceRouteHandlers(options: RouteHandlersOptions) {
  const parts = partsOf(options);
  return routeHandlers(
    parts,
    makeRequestHandler(parts, (c) => answerError(c, NO_SUCH_PATH)),
  );
}

/**
 * Makes the route handlers of an app that serves an operations table (the API or the admin API):
 * those of `serviceRouteHandlers`, plus `handlerFor`, which makes one operation's handler. The
 * overloads require `changesAndExpiry` when the table has memoised operations or operations that
 * wait for the due orders' expiry (`waitsForDueOrderExpiry`).
 *
 * @example
 * const handlers = tableRouteHandlers({ log, clock, clientAddress, admissionCheck, deps,
 *   changesAndExpiry: store, allowedMethods, maxBodyBytes: 65536 })
 * app.on(op.method, `/v1${op.path}`, handlers.handlerFor(op))
 * app.notFound(handlers.serveUnmatched)
 */
export function tableRouteHandlers<D extends object>(
  options: TableRouteHandlersOptions<D> & { changesAndExpiry: StoreChanges & DueOrderExpiry },
): TableRouteHandlers<Operation<D>>;
export function tableRouteHandlers<D extends object>(
  options: TableRouteHandlersOptions<D>,
): TableRouteHandlers<StorelessOperation<D>>;
export function tableRouteHandlers<D extends object>(
  options: TableRouteHandlersOptions<D>,
): TableRouteHandlers<Operation<D>> {
  const { admissionCheck, deps, allowedMethods, changesAndExpiry } = options;
  const replyMemo = changesAndExpiry && new ReplyMemo(changesAndExpiry);
  const parts: TableParts<D> = {
    ...partsOf(options),
    admissionCheck,
    deps,
    allowedMethods,
    replyMemo,
    dueOrderExpiry: changesAndExpiry,
  };
  /**
   * What Hono's `notFound` hook calls. A path the gateway serves (`isGatewayPath`: under the API
   * prefix, or the admin prefix in the admin app) goes to `serveNoRoute`, which passes the gateway
   * first; any other path gets 404.
   */
  const serveUnmatched = makeRequestHandler(parts, (c) =>
    parts.isGatewayPath(c.req.path) ? serveNoRoute(parts, c) : answerError(c, NO_SUCH_PATH),
  );
  return { ...routeHandlers(parts, serveUnmatched), handlerFor: (op: Operation<D>) => makeOperationHandler(parts, op) };
}

/** The route handlers of an app that serves a table: those of every app, plus `handlerFor`. */
export interface TableRouteHandlers<O> extends ReturnType<typeof routeHandlers> {
  handlerFor(op: O): RouteHandler;
}

/**
 * Makes the route handlers every app has: service routes, `serveUnmatched` (for Hono's `notFound`
 * hook) and Hono's `onError`.
 */
function routeHandlers(parts: PipelineParts, serveUnmatched: RouteHandler) {
  /** Hono's `onError`: answers an error that escapes step 1 with the contract's Error body too. */
  const onError: ErrorHandler<AppEnv> = (err, c) => answerError(c, toApiError(err, c, parts.report, parts.unavailable));
  return {
    serviceRoute: (route: ServiceRoute) => makeServiceRouteHandler(parts, route),
    serveUnmatched,
    onError,
  };
}

/** What the steps of one pipeline share, made once from its options. */
interface PipelineParts {
  readonly isGatewayPath: (path: string) => boolean;
  readonly maxBodyBytes: number;
  readonly requestLog: ReturnType<typeof requestLog>;
  readonly tracing: ReturnType<typeof requestTrace>;
  /** Counts every request and its answer (`--metrics` or `--metrics-port`). */
  readonly requestMetrics: ReturnType<typeof requestCounter> | undefined;
  /** CORS for the API (`--cors-origin`); undefined without it. */
  readonly cors: Cors | undefined;
  /** Refuses a body over `maxBodyBytes` with the 413 (step 5). */
  readonly limitBody: BodyLimit;
  /**
   * Counts a memoised operation's request as a memo hit or miss (`--metrics` or `--metrics-port`).
   */
  readonly memoCount: ((metricsIndex: number, hit: boolean) => void) | undefined;
  /** How `toApiError` logs an unhandled error. */
  readonly report: (err: unknown, c: Context<AppEnv>) => void;
  /** How `toApiError` logs a store that is unavailable. */
  readonly unavailable: (err: unknown, c: Context<AppEnv>) => void;
}

/** What the steps of a pipeline that serves a table also share. */
interface TableParts<D> extends PipelineParts {
  readonly admissionCheck: AdmissionCheck;
  readonly deps: D;
  readonly allowedMethods: (path: string) => readonly string[] | undefined;
  /** The reply memo; undefined when the pipeline has no store. */
  readonly replyMemo: ReplyMemo | undefined;
  /**
   * The store's expiry of due orders; undefined when the pipeline has no store. `routeOf` gives it
   * only to operations that wait for it.
   */
  readonly dueOrderExpiry: DueOrderExpiry | undefined;
}

/** Makes the parts that every step of one pipeline shares. */
function partsOf({
  log,
  clock,
  clientAddress,
  maxBodyBytes,
  corsOrigins = [],
  metrics,
  countAs,
  newId,
  isGatewayPath = isApiPath,
  hasValidKey = () => false,
}: RouteHandlersOptions): PipelineParts {
  // Inside a request, the logger adds the request id from the request state. Hono's `onError`
  // runs after that state is closed, so its line names the request id itself.
  const errorFields = (c: Context<AppEnv>, err: unknown) =>
    currentRequest()
      ? { error: peerText(String(err)) }
      : { requestId: c.get('requestId'), error: peerText(String(err)) };
  return {
    isGatewayPath,
    maxBodyBytes,
    requestLog: requestLog({ log, clock, clientAddress, newId }),
    tracing: requestTrace({ clientAddress, hasValidKey }),
    requestMetrics: metrics && requestCounter({ metrics, operation: countAs }),
    cors: corsOrigins.length > 0 ? new Cors(corsOrigins) : undefined,
    limitBody: limitBody(maxBodyBytes),
    memoCount: metrics && ((metricsIndex, hit) => metrics.memoAnswered(metricsIndex, hit)),
    report: (err, c) => log.error('unhandled error', errorFields(c, err)),
    unavailable: (err, c) => log.warn('store unavailable', errorFields(c, err)),
  };
}

/**
 * Makes step 1, `handleRequest`, which runs `inner` (the rest of the request's steps). Every Hono
 * route's handler is one of these, so Hono runs one handler per request and no middleware: a
 * middleware or a catch-all route adds CPU time to every request
 * (bench/README.md#measured-costs-behind-the-codes-choices).
 *
 * `handleRequest` gives the request its id and opens its request state; `runRequest` does the rest
 * of step 1 inside that state and calls `inner`, which for an operation is `serveOperation`.
 *
 * @param traced False for a route that makes no trace: the service routes that probes and
 *   scrapers call.
 */
function makeRequestHandler(parts: PipelineParts, inner: InnerHandler, traced = true): RouteHandler {
  const { requestLog, tracing } = parts;
  return function handleRequest(c) {
    const start = requestLog.start(c);
    // Every log line and trace record made while the request is served reads its id and trace
    // from the request state (src/trace/request-state.ts).
    return tracing.run(c, start.id, traced, (state) => runRequest(parts, c, start, state, inner));
  };
}

/**
 * Step 1, inside the request state: sets the headers every answer carries, refuses an overlong
 * URI (414) and runs `inner`. Then it ends the trace record, writes the log line and the metrics,
 * and returns the answer. The 414 comes before step 2, so it carries no CORS headers: a URI that
 * long is never one the API serves, and its answer is the same for every origin.
 */
async function runRequest(
  { requestLog, requestMetrics, tracing, isGatewayPath, report, unavailable }: PipelineParts,
  c: Context<AppEnv>,
  start: RequestStart,
  state: RequestState,
  inner: InnerHandler,
): Promise<Response> {
  const metricsStart = requestMetrics?.start();
  const id = start.id;
  const traceresponse = tracing.header(state);
  // Every API answer is private to its caller and never sniffed (SECURITY.md).
  const headers: AnswerHeaders = isGatewayPath(c.req.path)
    ? { 'X-Request-Id': id, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' }
    : { 'X-Request-Id': id };
  if (traceresponse) headers.traceresponse = traceresponse;
  beginAnswer(c, headers);
  let res: Response;
  const tooLong = uriTooLong(c.req.url, MAX_URI_BYTES);
  if (tooLong) res = answerError(c, tooLong);
  else {
    try {
      res = await inner(c);
    } catch (err) {
      // Whatever a later step or the handler throws is answered here; `toApiError` makes an
      // unexpected error a 500.
      res = answerError(c, toApiError(err, c, report, unavailable));
    }
  }
  // The export decision is final only after the answer. When it differs from the head sampler's,
  // `traceresponse` is set again to show the final one.
  const head = state.sampled === true;
  const exported = tracing.finish(c, state, res.status);
  if (exported !== head && traceresponse) setTraceResponse(res, tracing.header(state));
  requestLog.finish(c, start, res.status, exported);
  if (requestMetrics && metricsStart !== undefined) {
    requestMetrics.finish(c, metricsStart, res.status, exported ? state.traceId : undefined);
  }
  return res;
}

/** Sets `res`'s `traceresponse`, when its headers can still be changed. */
function setTraceResponse(res: Response, value: string | undefined): void {
  if (value === undefined) return;
  try {
    res.headers.set('traceresponse', value);
  } catch {
    // Some responses have immutable headers; they keep the `traceresponse` set at the start.
  }
}

/**
 * Makes a table operation's route handler, which runs each request through steps 1 to 8.
 * `routeOf` checks the operation once, here, when its route is added. What each step does:
 * [ARCHITECTURE.md's walk](../../ARCHITECTURE.md#the-request-in-the-pipelines-eight-steps).
 */
function makeOperationHandler<D>(parts: TableParts<D>, op: Operation<D>): RouteHandler {
  const route = routeOf(parts, op);
  const { cors } = parts;
  // Named function expressions, so that stack traces and CPU profiles show each step's name.
  return makeRequestHandler(parts, function serveOperation(c) {
    c.set('operation', op.id);
    // No preflight gets here: OPTIONS matches no operation's route, so `serveNoRoute` answers it
    // before any key is asked for.
    cors?.addCorsHeaders(c);
    // Steps 4 to 8 run inside the gateway's callback, so the gateway frees the in-flight slot only
    // after the answer is made.
    return passGateway(parts, c, op, function serveAdmitted(decision, caller) {
      addDeprecationHeaders(c, route);
      return checkBodyLimits(parts, c, function serveCheckedBody() {
        return afterDueOrderExpiry(parts, route, c, decision, caller);
      });
    });
  });
}

/**
 * Step 3: asks the admission check (src/gateway/gateway.ts) to admit the request. Returns
 * `serveAdmitted`'s answer, or answers the refusal the check returns after setting its code as
 * `refusal`, where the trace and the metrics read it (src/app-env.ts).
 */
async function passGateway<D>(
  { admissionCheck }: TableParts<D>,
  c: Context<AppEnv>,
  op: GatedOperation,
  serveAdmitted: (decision: Decision, caller: ConsumerCaller) => Promise<Response>,
): Promise<Response> {
  const servedOrRefused = await admissionCheck(c, op, serveAdmitted);
  if (!(servedOrRefused instanceof ApiError)) return servedOrRefused;
  c.set('refusal', servedOrRefused.code);
  return answerError(c, servedOrRefused);
}

/**
 * Step 4: adds a deprecated operation's headers to its answer. The gateway's refusals are answered
 * before this step, so they carry none.
 */
function addDeprecationHeaders<D>(c: Context<AppEnv>, { deprecationHeaders }: OperationRoute<D>): void {
  if (deprecationHeaders) Object.assign(answerHeaders(c), deprecationHeaders);
}

/**
 * Step 5, the body's limits and type: refuses a body over the size limit (413), and a body that a
 * GET or HEAD declares when it is too large (413) or not JSON (415). Otherwise it returns
 * `next()`'s answer.
 */
async function checkBodyLimits(
  parts: PipelineParts,
  c: Context<AppEnv>,
  next: () => Promise<Response>,
): Promise<Response> {
  // The runtimes give a GET or HEAD no body stream, so only its headers can show a body.
  checkBodyOnGetOrHead(c, parts.maxBodyBytes);
  // An operation with a body schema (`op.body`) sent without a body has no stream either. Step 7
  // refuses it: 415 when its Content-Type is not JSON, else 400.
  if (!c.req.raw.body) return next();
  return parts.limitBody(c, next);
}

/**
 * Step 6.1: for an operation that waits for the due orders' expiry (`waitsForDueOrderExpiry`),
 * starts the store's expiry and runs step 6.2 once any run under way ends. Any other operation
 * goes straight to step 6.2. What the read answers when the expiry fails or is slow:
 * `startDueOrderExpiry` of `DataStore` (src/store/store.ts). Not async, so it makes no extra
 * promise when nothing is due.
 */
function afterDueOrderExpiry<D>(
  parts: TableParts<D>,
  route: OperationRoute<D>,
  c: Context<AppEnv>,
  decision: Decision,
  caller: ConsumerCaller,
): Promise<Response> {
  // Expiring a due order makes its pet `available` with a new version. A read of pets waits for
  // it, so it shows that status and the version a PATCH's `If-Match` must name.
  const expiring = route.dueOrderExpiry?.startDueOrderExpiry();
  if (!expiring) return memoOrRun(parts, route, c, decision, caller);
  return expiring.then(() => memoOrRun(parts, route, c, decision, caller));
}

/**
 * Step 6.2: answers a memoised operation from the memo (src/pipeline/memo.ts) while nothing its
 * reply read has changed. Otherwise, and for every operation that is not memoised (such as
 * `placeOrder`), it runs step 7 and answers its reply.
 */
async function memoOrRun<D>(
  parts: TableParts<D>,
  route: OperationRoute<D>,
  c: Context<AppEnv>,
  decision: Decision,
  caller: ConsumerCaller,
): Promise<Response> {
  const { replyMemo } = route;
  if (!replyMemo) return answer(c, await runHandler(parts, route, c, decision, caller));
  const { memoCount } = parts;
  // The memo's key is the path and query as sent. The same text always validates to the same
  // input, because `routeOf` refuses to memoise an operation that reads headers or a body.
  const target = pathAndQuery(c.req.url);
  const changeCount = replyMemo.changeCount();
  const memoised = replyMemo.get(target, changeCount);
  if (memoised) {
    memoCount?.(route.metricsIndex, true);
    return answer(c, memoised);
  }
  const { reply, joined } = await replyMemo.readOrJoin(target, changeCount, function readReply() {
    return runHandler(parts, route, c, decision, caller);
  });
  // A request that joined another's read counts as a hit: it did not read the store itself.
  memoCount?.(route.metricsIndex, joined);
  return answer(c, reply);
}

/**
 * Step 7: validates the input by the table's schemas (400, 415), runs the handler and returns its
 * reply, with a weak ETag when the table asks for one.
 */
async function runHandler<D>(
  { deps }: TableParts<D>,
  { op, readInput }: OperationRoute<D>,
  c: Context<AppEnv>,
  decision: Decision,
  caller: ConsumerCaller,
): Promise<Reply> {
  const quota = op.readsQuota ? quotaStatus(caller.consumer, decision) : undefined;
  const input = await readInput(c, ownerOf(caller.consumer), quota, keyHolderOf(op, caller));
  return addWeakEtag(op, await op.handler(input, deps));
}

/**
 * Returns `reply` with a weak ETag of its body when the table asks for one (`weakEtag`) and the
 * reply is a 200 with a string body and no ETag of its own; otherwise returns `reply` unchanged.
 * The tag covers a page's next-page `Link` too: a page with the same body but a different next
 * link must not get a 304.
 */
function addWeakEtag<D>(op: Operation<D>, reply: Reply): Reply {
  if (!op.weakEtag || reply.etag !== undefined || reply.status !== 200 || typeof reply.body !== 'string') return reply;
  const link = reply.headers?.Link;
  return { ...reply, etag: link === undefined ? weakEtagOf(reply.body) : weakEtagOf(reply.body, link) };
}

/** Returns the caller's consumer and API key id for an audited operation, else undefined. */
function keyHolderOf<D>(op: Operation<D>, caller: ConsumerCaller): KeyHolder | undefined {
  return op.audited ? { consumer: caller.consumer.name, id: caller.key.id } : undefined;
}

/**
 * Answers a request on a path the gateway serves (`isGatewayPath`: under the API prefix, or the
 * admin prefix in the admin app) that no operation serves with its method. It runs steps 2
 * (answering a preflight there), 3 and 5 as an operation does, so a caller without a key gets a
 * 401 and learns nothing about paths, and an oversized body gets its 413 and its connection
 * handled as on any path. Then it answers 405 with `Allow` when the table serves the path with
 * other methods, else 404.
 */
function serveNoRoute<D>(parts: TableParts<D>, c: Context<AppEnv>): Response | Promise<Response> {
  const { cors } = parts;
  if (cors) {
    cors.addCorsHeaders(c);
    const preflight = cors.answerPreflight(c);
    if (preflight) return preflight;
  }
  // Only an admitted caller learns which methods the path has.
  return passGateway(parts, c, NO_ROUTE, () =>
    checkBodyLimits(parts, c, async () => {
      const allowed = parts.allowedMethods(c.req.path);
      return answerError(c, allowed ? methodNotAllowed(c.req.method, allowed) : NO_SUCH_PATH);
    }),
  );
}

/** Makes a service route's handler: step 1, then the route's handler, answered by `answer`. */
function makeServiceRouteHandler(parts: PipelineParts, route: ServiceRoute): RouteHandler {
  return makeRequestHandler(
    parts,
    async function serviceRoute(c) {
      c.set('operation', route.id);
      return answer(c, await route.handler(c));
    },
    !UNTRACED.has(route.id),
  );
}

/** What step 1 runs inside the request's state: the rest of the request's steps. */
type InnerHandler = (c: Context<AppEnv>) => Response | Promise<Response>;

/** A Hono route's handler or `serveUnmatched`: takes the request and returns its one answer. */
type RouteHandler = (c: Context<AppEnv>) => Promise<Response>;

/** The service routes probes and scrapers call every few seconds: no trace is made of them. */
const UNTRACED: ReadonlySet<ServiceRouteId> = new Set(['healthz', 'readyz', 'metrics']);

/** What the gateway sees for a path no operation serves: the default cost of 1, and no scope. */
const NO_ROUTE: GatedOperation = {};
