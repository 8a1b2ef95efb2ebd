import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { AppEnv } from '../env.ts';
import { ApiError } from '../errors.ts';
import type { Caller } from '../gateway/caller.ts';
import type { Metrics } from '../metrics.ts';
import type { ConsumerMetrics } from '../metrics-consumers.ts';
import { operationOf, type StoreOperation } from '../metrics-operations.ts';
import { storeErrorKind } from '../store/errors.ts';
import type { PetStore } from '../store/store.ts';

export interface CountRequestsOptions {
  metrics: Metrics;
  /** A monotonic clock in milliseconds; tests pass a fake one. */
  now?: () => number;
}

/**
 * Counts every request by operation and status and times it into the latency histogram, and
 * each 429 by the caller's plan and its Error code (`rate_limited`, `key_banned`, ...).
 * Installed only with `--metrics`, so a server without it pays nothing.
 *
 * @example
 * app.use(countRequests({ metrics }))
 */
export function countRequests({
  metrics,
  now = () => performance.now(),
}: CountRequestsOptions): MiddlewareHandler<AppEnv> {
  return async function countRequests(c, next) {
    const started = now();
    metrics.started();
    let status = 500;
    try {
      await next();
      status = c.res.status;
    } finally {
      metrics.answered(operationOf(c.req.method, routePath(c, -1)), status, (now() - started) / 1000);
    }
    // Hono keeps the error that onError answered in c.error.
    const caller = c.get('caller');
    if (status === 429 && c.error instanceof ApiError) {
      metrics.refused(caller?.kind === 'consumer' ? caller.consumer.plan : 'anonymous', c.error.code);
    }
    if (caller) countConsumer(metrics.consumers, caller, status, c.error);
  };
}

/** The per-consumer series of a request: its status and last use, or why it was refused. */
function countConsumer(consumers: ConsumerMetrics, caller: Caller, status: number, error: unknown): void {
  if (caller.kind === 'consumer') {
    consumers.answered(caller.consumer.name, caller.key.id, status, Date.now());
    if ((status === 429 || status === 403) && error instanceof ApiError)
      consumers.refused(caller.consumer.name, error.code);
  } else if (caller.key) {
    consumers.refused(caller.key.consumer.name, caller.credential === 'expired' ? 'key_expired' : 'key_not_yet_valid');
  }
}

/**
 * The store, counting the calls that fail; the error itself is passed on unchanged.
 *
 * @example
 * createApp({ store: countStoreErrors(store, metrics), ... })
 */
export function countStoreErrors(store: PetStore, metrics: Metrics): PetStore {
  // One rejection handler per operation, made once, so a call allocates only its promise.
  const failed = (operation: StoreOperation) => (err: unknown) => {
    metrics.storeError(operation, storeErrorKind(err));
    throw err;
  };
  const onCreate = failed('create');
  const onGet = failed('get');
  const onList = failed('list');
  const onPing = failed('ping');
  return {
    create: (pet) => store.create(pet).catch(onCreate),
    createOnce: (pet, once) => store.createOnce(pet, once).catch(onCreate),
    get: (id) => store.get(id).catch(onGet),
    list: (options) => store.list(options).catch(onList),
    ping: () => store.ping().catch(onPing),
    close: () => store.close(),
  };
}
