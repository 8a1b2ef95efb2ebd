// A request's way from Hono's route to its answer. Every route's handler is made here. The tree
// below is the code's one list of a table operation's eight steps, in the order they run;
// ARCHITECTURE.md's walk says what each does. The make… functions (`makeOperationHandler`,
// `makeRequestHandler`, `makeServiceRouteHandler`) run once each, when the app is built; the
// tree runs per request. Who calls whom, each function indented under its caller (ARCHITECTURE.md
// shows the same tree; src/layout.test.ts holds the two alike):
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
// caller's in-flight slot until the answer is made or a step throws. Step 8 does not follow
// step 7 in sequence: step 6.2 calls `answer` from each of its three exits (a memo hit, the reply
// of an operation that is not memoised, a read it ran or joined). Steps 6.1 to 7 pass `parts,
// route, c, decision, caller` as five arguments, so a request makes no object to carry them
// (what it does allocate: bench/README.md#what-a-request-allocates-on-its-way).
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

/** What every pipeline needs, whether it serves an operations table or only service routes. */
export interface RouteHandlersOptions {
  log: Logger;
  clock: Clock;
  /**
   * The client's address: the trace's `client.address` of every request, and the log line's of
   * requests the gateway does not see.
   */
  clientAddress: (c: Context<AppEnv>) => string;
  /** Largest accepted request body. */
  maxBodyBytes: number;
  /**
   * Whether a path is one the gateway answers, whose answers are private (`no-store`): `/v1` by
   * default.
   */
  isGatewayPath?: (path: string) => boolean;
  /** Origins whose pages may call the API (`--cors-origin`). With none, there is no CORS at all. */
  corsOrigins?: readonly string[];
  /** Counts requests when given (`--metrics` or `--metrics-port`). */
  metrics?: Metrics;
  /**
   * The operation label every request is counted under, whatever route served it (the admin
   * port's).
   */
  countAs?: string;
  /** Makes a fresh request id when the client sent none usable. */
  newId?: () => string;
  /**
   * Whether the request's caller has a valid key: only then may its `traceparent` force a trace
   * to be exported.
   */
  hasValidKey?: (c: Context<AppEnv>) => boolean;
}

/**
 * What a pipeline that serves a table of operations needs besides: the admission check and the
 * handlers' deps.
 */
export interface TableRouteHandlersOptions<D> extends RouteHandlersOptions {
  /**
   * The admission check (`AdmissionCheck`, made by `createAdmissionCheck()` of
   * src/gateway/gateway.ts): admits or refuses each request at step 3.
   */
  admissionCheck: AdmissionCheck;
  /** What the table's handlers work with (the store, the clock). */
  deps: D;
  /**
   * The methods the table serves at a path, or undefined for a path it has not (a 405's `Allow`).
   */
  allowedMethods: (path: string) => readonly string[] | undefined;
  /**
   * The store as step 6 uses it, for the memo's change count and the expiry of due orders. Without
   * it, the table may only add operations that are never memoised and expire no due orders first.
   */
  changesAndExpiry?: StoreChanges & DueOrderExpiry;
}

/**
 * Makes the route handlers of an app that serves service routes alone: the metrics port's. Each
 * request runs step 1 (`handleRequest`) and then its service route, or 404.
 *
 * @example
 * const handlers = serviceRouteHandlers({ log, clock, clientAddress, maxBodyBytes: 65536 })
 * app.get(route.path, handlers.serviceRoute(route))
 * app.notFound(handlers.notFound)
 */
export function serviceRouteHandlers(options: RouteHandlersOptions) {
  const parts = partsOf(options);
  return routeHandlers(
    parts,
    makeRequestHandler(parts, (c) => answerError(c, NO_SUCH_PATH)),
  );
}

/**
 * Makes the route handlers of an app that serves an operations table, the API's or the admin API's:
 * those of `serviceRouteHandlers`, and `handlerFor`, which makes one operation's route handler
 * (this file's header lists its steps). Its types ask for what serving the table needs: a table
 * with memoised operations or operations that wait for the due orders' expiry
 * (`waitsForDueOrderExpiry`) needs `changesAndExpiry`.
 *
 * @example
 * const handlers = tableRouteHandlers({ log, clock, clientAddress, admissionCheck, deps,
 *   changesAndExpiry: store, allowedMethods, maxBodyBytes: 65536 })
 * app.on(op.method, `/v1${op.path}`, handlers.handlerFor(op))
 * app.notFound(handlers.notFound)
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
   * Answers a path no route serves (Hono's `notFound`). Under the API prefix it meets the gateway
   * first.
   */
  const notFound = makeRequestHandler(parts, (c) =>
    parts.isGatewayPath(c.req.path) ? serveNoRoute(parts, c) : answerError(c, NO_SUCH_PATH),
  );
  return { ...routeHandlers(parts, notFound), handlerFor: (op: Operation<D>) => makeOperationHandler(parts, op) };
}

/**
 * The route handlers of an app that serves a table: those of every app, and `handlerFor`, which
 * makes one operation's.
 */
export interface TableRouteHandlers<O> extends ReturnType<typeof routeHandlers> {
  handlerFor(op: O): RouteHandler;
}

/** Makes the route handlers every app has: service routes, `notFound` and Hono's `onError`. */
function routeHandlers(parts: PipelineParts, notFound: RouteHandler) {
  /** Answers what escapes step 1 (Hono's `onError`) with the Error body all the same. */
  const onError: ErrorHandler<AppEnv> = (err, c) => answerError(c, toApiError(err, c, parts.report, parts.unavailable));
  return {
    serviceRoute: (route: ServiceRoute) => makeServiceRouteHandler(parts, route),
    notFound,
    onError,
  };
}

/** What the steps of one pipeline share: its options, and the parts made once from them. */
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

/** What the steps of a pipeline that serves a table share besides. */
interface TableParts<D> extends PipelineParts {
  readonly admissionCheck: AdmissionCheck;
  readonly deps: D;
  readonly allowedMethods: (path: string) => readonly string[] | undefined;
  /** The reply memo, over the store's change count, when the pipeline is given the store. */
  readonly replyMemo: ReplyMemo | undefined;
  /**
   * The store's expiry of due orders, when the pipeline is given the store: `routeOf` hands it to
   * the route of each operation that waits for the due orders' expiry.
   */
  readonly dueOrderExpiry: DueOrderExpiry | undefined;
}

/** Makes the parts every step of one pipeline shares, once, from its options. */
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
  // Within a request its state names it; Hono's `onError` runs once the request's state is left.
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
 * Makes a table operation's route handler (the API's or the admin API's): `routeOf` checks the
 * operation once, when its route is added, and the handler returned runs each request through
 * steps 1 to 8. Who calls whom: the tree in this file's header; what each step does and answers:
 * ARCHITECTURE.md's walk
 * ([the request's steps](../../ARCHITECTURE.md#the-request-in-the-pipelines-eight-steps)).
 */
function makeOperationHandler<D>(parts: TableParts<D>, op: Operation<D>): RouteHandler {
  const route = routeOf(parts, op);
  const { cors } = parts;
  // This function and the callbacks inside it are named as what they do, so a debugger's stack
  // and a CPU profile name them.
  return makeRequestHandler(parts, function serveOperation(c) {
    c.set('operation', op.id);
    // A preflight (OPTIONS) matches no operation's route, so `notFound` (`serveNoRoute`) answers
    // it before any key is asked for.
    cors?.addCorsHeaders(c);
    // Steps 4 to 8 run inside the gateway's callback, so it frees the in-flight slot only after the
    // answer.
    return passGateway(parts, c, op, function serveAdmitted(decision, caller) {
      addDeprecationHeaders(c, route);
      return checkBodyLimits(parts, c, function serveCheckedBody() {
        return afterDueOrderExpiry(parts, route, c, decision, caller);
      });
    });
  });
}

/**
 * Makes step 1, `handleRequest`, around `inner`, the rest of the request's steps. Every Hono
 * route's handler is one of these, so Hono calls one handler per request and composes no
 * middleware: an outer middleware and catch-all routes cost every request CPU (measured:
 * bench/README.md#measured-costs-behind-the-codes-choices).
 *
 * Step 1 is two functions: `handleRequest`, the handler made here, gives the request its id and
 * opens its state; `runRequest` does the rest of step 1 inside that state and calls `inner`. For
 * an operation, `inner` is `serveOperation` (steps 2 to 8).
 *
 * @param traced When false, the request makes no trace. The probes' and scrapers' service routes
 *   pass false.
 */
function makeRequestHandler(parts: PipelineParts, inner: InnerHandler, traced = true): RouteHandler {
  const { requestLog, tracing } = parts;
  return function handleRequest(c) {
    const start = requestLog.start(c);
    // The request's state (src/trace/request-state.ts) holds its id and trace: every log line
    // and trace record made while it is served reads it.
    return tracing.run(c, start.id, traced, (state) => runRequest(parts, c, start, state, inner));
  };
}

/**
 * Step 1 inside the request's state: sets the headers every answer carries, refuses an overlong
 * URI (414) and runs `inner`. Then it ends the trace record, writes the log line and the metrics,
 * and returns the answer.
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
      // A handler's or a step's throw becomes an `ApiError` here (500 for the unknown).
      res = answerError(c, toApiError(err, c, report, unavailable));
    }
  }
  // The trace's export decision is final once the request is answered. When the tail rules keep a
  // request the head sampler did not, `traceresponse` is written again.
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
    // A response whose headers are immutable keeps the decision made at the start.
  }
}

/**
 * Step 3: asks the gateway (src/gateway/gateway.ts) to admit the request, and returns
 * `serveAdmitted`'s answer or the answer to the refusal the gateway returned (`AdmissionCheck`).
 * A refusal's code is set as `refusal`, where the trace and the metrics read it (src/app-env.ts).
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

/** Step 4: adds a deprecated operation's headers to every answer after the gateway's. */
function addDeprecationHeaders<D>(c: Context<AppEnv>, { deprecationHeaders }: OperationRoute<D>): void {
  if (deprecationHeaders) Object.assign(answerHeaders(c), deprecationHeaders);
}

/**
 * Step 5: refuses a body over the size limit (413) and a body sent with GET or HEAD that is too
 * large or not JSON (413, 415). Otherwise it returns `next()`'s answer.
 */
async function checkBodyLimits(
  parts: PipelineParts,
  c: Context<AppEnv>,
  next: () => Promise<Response>,
): Promise<Response> {
  // The runtimes hand a GET or HEAD no body stream, so only its headers can tell of a body.
  checkBodyOnGetOrHead(c, parts.maxBodyBytes);
  // A write sent without a body has no stream either. Step 7 answers it 415 when its Content-Type
  // is not JSON, else 400.
  if (!c.req.raw.body) return next();
  return parts.limitBody(c, next);
}

/**
 * Step 6.1: runs step 6.2 after the due orders' expiry under way, if any. Only the route of an
 * operation that waits for it (`waitsForDueOrderExpiry`) holds the store's `dueOrderExpiry`
 * (`routeOf`): it starts the expiry (`startDueOrderExpiry()`) and, while a run is under way, runs
 * step 6.2 once it ends, so the answer shows the pets of orders whose hold ran out `available`. Any
 * other operation goes straight to step 6.2. What the read answers when the run fails or is
 * slow: `startDueOrderExpiry` of `DataStore` (src/store/store.ts). Not async, so it adds no
 * promise of its own when nothing is due.
 */
function afterDueOrderExpiry<D>(
  parts: TableParts<D>,
  route: OperationRoute<D>,
  c: Context<AppEnv>,
  decision: Decision,
  caller: ConsumerCaller,
): Promise<Response> {
  // Expiring an order whose hold ran out makes its pet `available`, with a new version. A read of
  // pets waits for that, so it shows the pet `available`, with the version a PATCH's `If-Match`
  // must name.
  const expiring = route.dueOrderExpiry?.startDueOrderExpiry();
  if (!expiring) return memoOrRun(parts, route, c, decision, caller);
  return expiring.then(() => memoOrRun(parts, route, c, decision, caller));
}

/**
 * Step 6.2: answers a memoised operation from the memo (src/pipeline/memo.ts) when nothing it read
 * has changed since. Otherwise, and for every operation that is not memoised (`placeOrder`), it
 * runs step 7 and answers its reply.
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
  // The path and query as sent: the same text always validates to the same input (`routeOf`
  // refuses a memoised operation that reads headers or a body).
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
  // A request answered by another's read under way counts as a hit: it read nothing itself.
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
  // A quota reader's input is the limiter's decision that admitted it.
  const quota = op.readsQuota ? quotaStatus(caller.consumer, decision) : undefined;
  // The owner names whose records the handler writes or reads: the caller's consumer.
  const input = await readInput(c, ownerOf(caller.consumer), quota, keyHolderOf(op, caller));
  return addWeakEtag(op, await op.handler(input, deps));
}

/**
 * Returns `reply` with a weak ETag of its body when the table asks for one (`weakEtag`) and the
 * reply is a 200 with a text body (a string) and no tag of its own; any other reply as it is. A
 * page's next-page `Link` is part of what the client holds: a page whose body is the same but
 * whose next link moved must not answer 304, so the tag covers the link too.
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
 * Answers a path under the API prefix that no operation serves with this method. It passes steps 2
 * (where a preflight is answered), 3 and 5 as an operation would, so a caller without a key learns
 * nothing of paths (401 before 404). Then 405 with `Allow` for a path the table has, else 404.
 */
function serveNoRoute<D>(parts: TableParts<D>, c: Context<AppEnv>): Response | Promise<Response> {
  const { cors } = parts;
  if (cors) {
    cors.addCorsHeaders(c);
    const preflight = cors.answerPreflight(c);
    if (preflight) return preflight;
  }
  // The path's methods are looked up only for an admitted caller.
  return passGateway(parts, c, NO_ROUTE, () =>
    checkBodyLimits(parts, c, async () => {
      const allowed = parts.allowedMethods(c.req.path);
      return answerError(c, allowed ? methodNotAllowed(c.req.method, allowed) : NO_SUCH_PATH);
    }),
  );
}

/**
 * Makes a service route's handler: step 1, then the route's own, answered through the one answer
 * path.
 */
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

/** A Hono route's handler, and `notFound`: the request in, its one answer out. */
type RouteHandler = (c: Context<AppEnv>) => Promise<Response>;

/** The service routes probes and scrapers call every few seconds: no trace is made of them. */
const UNTRACED: ReadonlySet<ServiceRouteId> = new Set(['healthz', 'readyz', 'metrics']);

/** What the gateway knows of a path no operation serves: it costs 1 and needs no scope. */
const NO_ROUTE: GatedOperation = {};
