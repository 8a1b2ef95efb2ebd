import { Hono } from 'hono';
import type { AppEnv } from '../env.ts';
import { ApiError, errorResponse } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { PetStore } from '../store/store.ts';

/** Longest `/readyz` waits for the store before calling it unreachable. */
export const READY_TIMEOUT_MS = 2_000;

const NO_STORE = { 'Cache-Control': 'no-store' };

export interface HealthOptions {
  store: PetStore;
  /** The current keys (only their count is read; routes know nothing of the gateway); `/readyz` fails while none are loaded. */
  keys: () => { readonly size: number };
  log: Logger;
  /** Why the server should get no new traffic (e.g. it is shutting down), or undefined. */
  notReady?: () => string | undefined;
  /** Longest wait for the store's ping. */
  timeoutMs?: number;
}

/**
 * `GET /healthz`: the process answers. `GET /readyz`: it can serve the API, i.e. the store
 * answers a ping, keys are loaded and it is not shutting down; else 503 `service_unavailable`
 * with a message safe to show (the store's own error goes to the log, not to the client).
 * Both are outside `/v1`: no key, no rate limit.
 *
 * @example
 * app.route('/', healthRoutes({ store, keys: () => table, log }))
 */
export function healthRoutes({
  store,
  keys,
  log,
  notReady = () => undefined,
  timeoutMs = READY_TIMEOUT_MS,
}: HealthOptions) {
  const health = new Hono<AppEnv>();
  health.get('/healthz', (c) => c.json({ status: 'ok' }, 200, NO_STORE));
  health.get('/readyz', async (c) => {
    const reason =
      notReady() ?? (keys().size === 0 ? 'No API keys are loaded.' : await storeProblem(store, log, timeoutMs));
    if (reason === undefined) return c.json({ status: 'ready' }, 200, NO_STORE);
    return errorResponse(c, new ApiError('service_unavailable', reason, NO_STORE));
  });
  return health;
}

async function storeProblem(store: PetStore, log: Logger, timeoutMs: number): Promise<string | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([store.ping(), timeout]);
    return undefined;
  } catch (err) {
    log.warn('not ready: the store does not answer', { error: err instanceof Error ? err.message : String(err) });
    return 'The store is not reachable.';
  } finally {
    clearTimeout(timer);
  }
}
