// The gateway, step 3 of a request (src/pipeline/pipeline.ts). `createAdmissionCheck()` makes the
// admission check that every API request goes through; its docstring lists the checks in order.
// Other folders import src/gateway/ through this file only, so it also re-exports what they use,
// each under a line naming its users.
import type { Context } from 'hono';
import { LRUCache } from 'lru-cache';
import { canonicalAddress } from '../core/addresses.ts';
import { ApiError, serviceUnavailable } from '../core/api-error.ts';
import { type Clock, systemClock } from '../core/clock.ts';
import type { Decision, WindowName } from '../core/decision.ts';
import { ADMIN_SCOPE, type KeyScope } from '../core/key-scopes.ts';
import { type BanPolicy, DEFAULT_MAX_IN_FLIGHT } from '../keys/plans.ts';
import type { Consumer } from '../keys/records.ts';
import type { KeyTable } from '../keys/table.ts';
import { childSpan, closeChild, failChild, openChild } from '../trace/spans.ts';
import { type Caller, type ConsumerCaller, callerOf, type KeylessCaller } from './caller.ts';
import { decider } from './decide.ts';
import { HostInFlight, type HostSlotsMemory } from './host-in-flight.ts';
import { InFlight, tooManyInFlight, untouched } from './in-flight.ts';
import { adminKeyOnPublicApi, missingScope, unauthorized } from './key-checks.ts';
import type { FailoverLimiter } from './limiter/failover.ts';
import type { RateLimiter, Verdict } from './limiter/limiter.ts';
import type { OpenRedisLimiterOptions } from './limiter/open-redis.ts';
import { writeRateLimitHeaders } from './rate-limit-headers.ts';

// The re-exports, each under a line naming its users. Those marked `--workers` are the workers'
// protocol rather than the per-request surface: only src/serve/supervisor.ts and
// src/serve/worker.ts use them, so a change to them is a change to those two files as well.
//
// The caller found at step 3a, for the steps after it (src/pipeline/).
export type { Caller, ConsumerCaller } from './caller.ts';
// `--workers`, the supervisor: the host's in-flight table in shared memory, which it makes, and
// in which it frees the slots of a worker that exited.
export { clearWorker, type HostSlotsMemory, hostSlotsMemory } from './host-in-flight.ts';
// Where the Redis limiter decides now, for `/readyz`: the app, the health route, and the
// supervisor, which sends it to its workers.
export type { LimiterStatus } from './limiter/failover.ts';
// `--workers`: the host limiter's messages, which each worker's `RemoteLimiter` packs and the
// supervisor's `HostLimiter` answers, and the grants' memory the supervisor gives each worker.
export {
  type DecidedMessage,
  grantMemory,
  HostLimiter,
  type PackedAnswers,
  type PackedAsks,
  packAnswers,
  packAsks,
  RemoteLimiter,
  unpackAnswers,
  unpackAsks,
} from './limiter/host-limiter.ts';
// The limiters, for the wiring that picks one (src/serve/resources.ts, and `loadRedisLimiter()`
// below), their metrics (src/metrics/), and tests that run one in process.
export { SlidingWindowLimiter } from './limiter/in-process.ts';
export type { LeaseStats, RunKind } from './limiter/leases.ts';
export type { LimiterEvent, RateLimiter, Subject, Verdict } from './limiter/limiter.ts';
// Step 7's `Input.quota` for getRateLimit (`runHandler`, src/pipeline/pipeline.ts), and
// report-only's once-a-minute reporter (src/app.ts).
export { quotaStatus } from './quota.ts';
export { wouldRefuseReporter } from './report-only.ts';

/**
 * Opens the Redis limiter (`--redis`) with its quota leases and failover. The module is imported
 * on first call, so ioredis is loaded only when a server uses Redis.
 *
 * @example
 * const limiter = await loadRedisLimiter({
 *   url: 'redis://cache:6379', mode: 'open', fallback, log,
 * })
 */
export async function loadRedisLimiter(options: OpenRedisLimiterOptions): Promise<FailoverLimiter> {
  return (await import('./limiter/open-redis.ts')).openRedisLimiter(options);
}

// The caller the gateway passes to later steps (`c.get('caller')`). It is declared here, not in
// src/app-env.ts, because the gateway sets it and may not import app-env.ts, a higher layer in
// LAYERS (.dependency-cruiser.cjs).
declare module 'hono' {
  interface ContextVariableMap {
    /**
     * The caller found at step 3. Requests that skip the gateway (a service route, a 414) have
     * none, so the log line, metrics and trace read it with `?.`.
     */
    caller: Caller | undefined;
  }
}

export interface GatewayOptions {
  /** The current keys; a function, so a reload can swap the table between requests. */
  keyTable: () => KeyTable;
  limiter: RateLimiter;
  /** The client's address, as trusted: the socket peer, or X-Forwarded-For from a trusted proxy. */
  clientAddress: (c: Context) => string;
  /**
   * The ban for a consumer whose record sets none (keys file or `--keys store`), and for a keyless
   * client's address group.
   */
  ban?: BanPolicy;
  /** Most requests one consumer may have in flight (`--max-in-flight`). */
  maxInFlight?: number;
  /**
   * With `--workers`: the host's shared in-flight table and this worker's column, so the cap
   * applies across the host rather than per worker.
   */
  hostSlots?: { readonly memory: HostSlotsMemory; readonly worker: number };
  /** IPv6 callers without a valid key are counted by this prefix (`--ipv6-prefix`, default 56). */
  ipv6Prefix?: number;
  /** Called for each window that would have refused a report-only consumer (`report-only.ts`). */
  wouldRefuse?: (consumer: string, window: WindowName) => void;
  /**
   * Whether this gateway serves the admin API, where every key needs the `admin` scope. On the
   * public API a key with the `admin` scope is refused (403), whatever the operation's scope.
   */
  isAdminGateway?: boolean;
  /**
   * Called with a decision that has `notices` (a quota threshold crossed, a window exhausted, a ban
   * started, or such a notice repeated). The response waits for it, so the webhook is recorded
   * before the client can see the crossing (src/webhooks/notify.ts).
   */
  notify?: (consumer: Consumer, decision: Decision) => Promise<void>;
  clock?: Clock;
}

/**
 * What the gateway needs from the requested operation: its entry in the API's table, or `{}` for a
 * path no operation serves (cost 1, no scope).
 */
export interface GatedOperation {
  /** The operationId, the key of a consumer's `costs`. */
  readonly id?: string;
  /** The scope a key needs. Without one, any key passes. */
  readonly scope?: KeyScope;
  /** Whether the operation reads the quota; if so it costs 0 and passes during a ban. */
  readonly readsQuota?: boolean;
}

/**
 * The check `createAdmissionCheck()` returns, run once per request. If it admits the request, it
 * calls `serveAdmitted` with the decision and the caller (always a consumer caller: one with a
 * valid key), holds the in-flight slot until that settles, and resolves to its result. A refusal
 * (401, 403, 429, 503) resolves to the `ApiError` instead of throwing it: a throw through these
 * async frames is the largest cost in a refusal's own code
 * (bench/README.md#measured-costs-behind-the-codes-choices).
 */
export type AdmissionCheck = <T>(
  c: Context,
  op: GatedOperation,
  serveAdmitted: (decision: Decision, caller: ConsumerCaller) => Promise<T>,
) => Promise<T | ApiError>;

/**
 * Makes the admission check. This is the one full list of the gateway's checks, in the order they
 * run (docs/decisions/order-of-checks.md says why); the labels 3a-3g are sub-steps of the
 * request's step 3 and mark the code below. For each request the check:
 *
 * 3a. finds the caller, once (`callerOf()`, ./caller.ts): a key's consumer, or a keyless client
 *     (no key, or one that is unknown, revoked or outside its dates);
 * 3b. refuses a keyless client once the limiter has counted it against its address group, with
 *     the rate-limit headers: 429 `key_banned` while the group is banned, 429 `rate_limited` when
 *     it is over the free plan's limits (`PLAN_LIMITS.free`, src/keys/plans.ts), else 401
 *     `unauthorized`;
 * 3c. takes the consumer's in-flight slot before anything is awaited, and keeps it until
 *     `serveAdmitted` settles (at the cap: 429; the limiter is not asked, so no quota is spent);
 * 3d. asks the limiter to spend the operation's cost, once (`decider()`, ./decide.ts);
 * 3e. records the quota webhook the decision crossed (`notify`), before any answer;
 * 3f. writes the rate-limit headers;
 * 3g. refuses, the first that applies: a consumer over a limit (429, unless report-only); a key
 *     without the operation's `scope` (403), checked after the cost is spent, so probing for
 *     scopes costs quota; an admin key on the public API, or on the admin API a key without the
 *     scope `admin` (403).
 *
 * A limiter that cannot decide (Redis unreachable with `--redis-fail closed`) makes the answer 503
 * at 3b or 3d, without rate-limit headers.
 *
 * Costs: a request spends the operation's cost, from the consumer's `costs`, else 1. An operation
 * that reads the quota costs 0 and is never refused by the limiter, so a banned key can read its
 * ban. A report-only consumer (`enforce: false`) is never refused by the limiter: what it would
 * have been refused for goes to `wouldRefuse`, and its headers show the numbers as if enforced.
 *
 * @example
 * const admissionCheck = createAdmissionCheck({
 *   keyTable: () => table,
 *   limiter,
 *   clientAddress: () => '::1',
 * })
 * // serve's result, or the ApiError
 * const answered = await admissionCheck(c, { id: 'listPets', scope: 'pets:read' }, () => serve(c))
 */
export function createAdmissionCheck({
  keyTable,
  limiter,
  clientAddress,
  ban,
  maxInFlight = DEFAULT_MAX_IN_FLIGHT,
  hostSlots,
  ipv6Prefix,
  wouldRefuse,
  isAdminGateway = false,
  notify,
  clock = systemClock,
}: GatewayOptions): AdmissionCheck {
  const decide = decider({ limiter, ban, ...(ipv6Prefix === undefined ? {} : { ipv6Prefix }) });
  const inFlight = hostSlots
    ? new HostInFlight<Decision>(maxInFlight, hostSlots.memory, hostSlots.worker)
    : new InFlight<Decision>(maxInFlight);
  /**
   * Gets the limiter's decision for a keyless caller, in a child span when the request is traced.
   * A consumer caller's path (3d) opens and closes its span inline instead of using `childSpan()`,
   * which saves a closure and a promise on every keyed request
   * (bench/README.md#how-every-request-is-recorded-the-ring).
   */
  const decideForKeyless = (caller: KeylessCaller, cost: number) =>
    childSpan('gateway decide', NO_ATTRIBUTES, () => decide(caller, cost), DECISION_SPAN, cost);

  return async function admissionCheck(c, op, serveAdmitted) {
    // Lazy: only a keyless caller needs the address.
    const address = () => canonicalAddress(clientAddress(c));
    // 3a: who calls.
    const caller = callerOf(c.req.header('authorization'), keyTable(), clock.now(), address);
    c.set('caller', caller);
    if (caller.kind === 'keyless') {
      // 3b: a keyless client is counted, then refused.
      const verdict = await decideForKeyless(caller, 1);
      if (verdict.outcome === 'unavailable') return LIMITER_DOWN;
      const decision: Decision = verdict;
      const limited = limiterRefusal(decision);
      writeRateLimitHeaders(c, decision, limited !== undefined);
      return limited ?? unauthorized(caller);
    }
    const { consumer } = caller;
    const { id, name, limits } = consumer;
    // 3c: the slot is taken before the first await, so that of many concurrent requests at most
    // `maxInFlight` get past this line.
    if (!inFlight.enter(id)) {
      const now = Math.floor(clock.now() / 1000);
      // No quota is spent. The headers show the consumer's latest decision in flight, or its full
      // limits if none; Retry-After comes from `tooManyInFlight`, not from that decision.
      writeRateLimitHeaders(c, inFlight.latest(id) ?? untouched(limits, now), false, now);
      return tooManyInFlight(inFlight.max);
    }
    try {
      // 3d: the operation's cost, spent with the limiter.
      const cost = op.readsQuota ? 0 : op.id === undefined ? 1 : (consumer.costs[op.id] ?? 1);
      // The span is opened and closed inline; `decideForKeyless` says why.
      const child = openChild('gateway decide', NO_ATTRIBUTES, DECISION_SPAN, cost);
      let verdict: Verdict;
      try {
        verdict = await decide(caller, cost);
      } catch (err) {
        failChild(child, err);
        throw err;
      }
      closeChild(child, verdict, DECISION_SPAN.outcome);
      if (verdict.outcome === 'unavailable') return LIMITER_DOWN;
      const decision: Decision = verdict;
      // 3e: record the quota webhook before any answer.
      if (decision.notices && notify) await notify(consumer, decision);
      let limited: ApiError | undefined;
      if (decision.outcome !== 'admitted' && cost > 0) {
        if (consumer.enforce) limited = limiterRefusal(decision);
        else if (wouldRefuse) reportWouldRefuse(name, decision, cost, wouldRefuse);
      }
      // 3f: the rate-limit headers.
      writeRateLimitHeaders(c, decision, limited !== undefined);
      // 3g: the limiter's refusal first, then the key's scopes.
      const refused =
        limited ??
        missingScope(caller.key.scopes, op.scope) ??
        (isAdminGateway ? missingScope(caller.key.scopes, ADMIN_SCOPE) : adminKeyOnPublicApi(caller.key.scopes));
      if (refused) return refused;
      // Remembered while the consumer has requests in flight, for the headers of a 429 at the
      // cap (3c).
      inFlight.remember(id, decision);
      return await serveAdmitted(decision, caller);
    } finally {
      inFlight.leave(id);
    }
  };
}

/**
 * Returns a function that tells whether an `Authorization` header holds a key valid now. The
 * tracer uses it because only the `traceparent` of a caller with a valid key may decide sampling.
 *
 * @example
 * validAuthorizationTest(() => table)('Bearer psk_…') // true
 */
export function validAuthorizationTest(
  keys: () => KeyTable,
  clock: Clock = systemClock,
): (authorization: string | undefined) => boolean {
  const nowhere = () => '';
  return (authorization) => callerOf(authorization, keys(), clock.now(), nowhere).kind === 'consumer';
}

const DECISION_SPAN = {
  valueKey: 'petstore.gateway.cost',
  outcome: {
    key: 'petstore.gateway.decision',
    of: (verdict: Verdict) => verdict.outcome,
  },
};
const NO_ATTRIBUTES = Object.freeze({});

/** The 503 of a limiter that cannot decide (Redis down with `--redis-fail closed`). */
const LIMITER_DOWN = serviceUnavailable('Rate limits cannot be checked right now; retry shortly.');

/** Calls `wouldRefuse` for each window whose remaining is below the cost. */
function reportWouldRefuse(
  consumer: string,
  decision: Decision,
  cost: number,
  wouldRefuse: (consumer: string, window: WindowName) => void,
): void {
  for (const w of decision.windows) if (w.remaining < cost) wouldRefuse(consumer, w.name);
}

/**
 * 429s keyed by outcome and wait, the only two things a refusal depends on, so each distinct 429
 * is built once (bench/README.md#measured-costs-behind-the-codes-choices).
 */
const cachedLimiterRefusals = new LRUCache<string, ApiError>({ max: 1_024 });

/**
 * Returns the decision's 429, or undefined if it admits the request. A banned keyless address
 * also gets `key_banned`: the contract has one code for any ban.
 */
function limiterRefusal({ outcome, retryAfter }: Decision): ApiError | undefined {
  if (outcome !== 'key_banned' && outcome !== 'rate_limited') return undefined;
  const key = `${outcome} ${retryAfter}`;
  let refused = cachedLimiterRefusals.get(key);
  if (refused === undefined) {
    refused =
      outcome === 'key_banned'
        ? new ApiError('key_banned', `Too many requests after being limited; banned for ${retryAfter} more seconds.`)
        : new ApiError('rate_limited', `Rate limit exceeded; retry in ${retryAfter} seconds.`);
    cachedLimiterRefusals.set(key, refused);
  }
  return refused;
}
