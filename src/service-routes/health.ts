// The service routes /healthz and /readyz, answered without the gateway: healthRoutes().
// /healthz says the process answers; /readyz says it can serve the API (store, keys, limiter, not
// shutting down).
import { ApiError } from '../core/api-error.ts';
import type { ServiceRoute } from '../core/service-route.ts';
import type { LimiterStatus } from '../gateway/gateway.ts';
import type { KeyTable } from '../keys/table.ts';
import type { Logger } from '../log.ts';
import { peerText } from '../redact.ts';
import type { DataStore } from '../store/store.ts';

/** How long `/readyz` waits for the store's ping before reporting it unreachable. */
const READY_TIMEOUT_MS = 2_000;

const NO_STORE = { 'Cache-Control': 'no-store' };
const JSON_TYPE = 'application/json';
const OK = JSON.stringify({ status: 'ok' });
/** The `/readyz` message while Redis is down in fail-closed mode, when /v1 answers 503 too. */
const LIMITER_DOWN = 'The rate limiter cannot reach Redis (--redis-fail closed).';

export interface HealthOptions {
  store: DataStore;
  /** The current keys; `/readyz` fails while none are loaded. */
  keyTable: () => KeyTable;
  log: Logger;
  /** Why the server should get no new traffic (e.g. it is shutting down), or undefined. */
  whyNotReady?: () => string | undefined;
  /** Longest wait for the store's ping. */
  timeoutMs?: number;
  /** Where rate limits are decided now (with `--redis`); absent or undefined: in this process. */
  limiterStatus?: () => LimiterStatus | undefined;
  /** Why the keys in force may be out of date (the key store unreachable), or undefined. */
  keysProblem?: () => string | undefined;
}

/**
 * `GET /healthz`: the process answers. `GET /readyz`: it can serve the API, i.e. the store
 * answers a ping, keys are loaded, the rate limiter can decide (not so with Redis down and
 * `--redis-fail closed`) and it is not shutting down; then 200 `{"status":"ready","limiter":…}`
 * naming where limits are decided (`memory`, `redis`, or `local` while Redis is down in
 * fail-open mode). Else 503 `service_unavailable` with a message safe to show (the store's
 * own error goes to the log, not to the client). Both are outside `/v1`: no key, no rate limit.
 *
 * @example
 * const routes = healthRoutes({ store, keyTable: () => table, log })
 */
export function healthRoutes({
  store,
  keyTable,
  log,
  whyNotReady = () => undefined,
  timeoutMs = READY_TIMEOUT_MS,
  limiterStatus,
  keysProblem = () => undefined,
}: HealthOptions): ServiceRoute[] {
  return [
    {
      id: 'healthz',
      method: 'GET',
      path: '/healthz',
      handler: () => ({ status: 200, body: OK, type: JSON_TYPE, headers: NO_STORE }),
    },
    {
      id: 'readyz',
      method: 'GET',
      path: '/readyz',
      async handler() {
        const limiter = limiterStatus?.();
        const reason =
          whyNotReady() ??
          (keyTable().size === 0 ? 'No API keys are loaded.' : undefined) ??
          keysProblem() ??
          (limiter && !limiter.ready ? LIMITER_DOWN : undefined) ??
          (await storeProblem(store, log, timeoutMs));
        if (reason === undefined) {
          const body = JSON.stringify({ status: 'ready', limiter: limiter ? limiter.backend : 'memory' });
          return { status: 200, body, type: JSON_TYPE, headers: NO_STORE };
        }
        throw new ApiError('service_unavailable', reason, NO_STORE);
      },
    },
  ];
}

async function storeProblem(store: DataStore, log: Logger, timeoutMs: number): Promise<string | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([store.ping(), timeout]);
    return undefined;
  } catch (err) {
    log.warn('not ready: the store does not answer', { error: peerText(err) });
    return 'The store is not reachable.';
  } finally {
    clearTimeout(timer);
  }
}
