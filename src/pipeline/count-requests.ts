// Step 1's metrics (`--metrics`): `requestCounter()` times a request and, once it is answered,
// counts it by operation and status, each 429 by plan and code, and in its consumer's series.
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.ts';
import type { Caller } from '../gateway/gateway.ts';
import type { ConsumerMetrics } from '../metrics/consumer-series.ts';
import { operationIndex } from '../metrics/labels.ts';
import type { Metrics } from '../metrics/registry.ts';

export interface CountRequestsOptions {
  metrics: Metrics;
  /** A monotonic clock in milliseconds; tests pass a fake one. */
  now?: () => number;
  /**
   * Counts every request under this operation instead of the route's (the admin port's `admin`).
   */
  operation?: string;
}

/**
 * Makes the request counter: `start` and `finish`, which step 1 calls first and last. It counts
 * every request by operation (the id of the route that served it, else `other`) and status,
 * records its latency, and counts each 429 by the caller's plan and Error code. The pipeline makes
 * one only with `--metrics` or `--metrics-port`, so a server without them pays nothing.
 *
 * @example
 * const count = requestCounter({ metrics })
 * const started = count.start()
 * // ... the request is answered ...
 * count.finish(c, started, res.status)
 */
export function requestCounter({ metrics, now = () => performance.now(), operation }: CountRequestsOptions) {
  const fixed = operation === undefined ? undefined : operationIndex(operation);
  return {
    start(): number {
      metrics.started();
      return now();
    },
    /**
     * Counts the answered request and times it. `exportedTraceId`, the request's trace when it is
     * exported, becomes the latency's exemplar.
     */
    finish(c: Context<AppEnv>, started: number, status: number, exportedTraceId?: string): void {
      const seconds = (now() - started) / 1000;
      metrics.answered(fixed ?? operationIndex(c.get('operation')), status, seconds, exportedTraceId);
      const caller = c.get('caller');
      // Only the gateway answers 429 or 403, so such an answer is its refusal, and step 3 set the
      // refusal's code on the context.
      const refusal = status === 429 || status === 403 ? c.get('refusal') : undefined;
      if (status === 429 && refusal !== undefined) {
        metrics.refused(caller?.kind === 'consumer' ? caller.consumer.plan : 'anonymous', refusal);
      }
      if (caller) countConsumer(metrics.consumers, caller, status, refusal);
    },
  };
}

/**
 * Counts a request in its consumer's series: its status and last use, or why it was refused
 * (`refusal`, the gateway's 429 or 403).
 */
function countConsumer(consumers: ConsumerMetrics, caller: Caller, status: number, refusal: string | undefined): void {
  if (caller.kind === 'consumer') {
    consumers.answered(caller.consumer.name, caller.key.id, status, Date.now());
    if (refusal !== undefined) consumers.refused(caller.consumer.name, refusal);
  } else if (caller.key) {
    consumers.refused(caller.key.consumer.name, `key_${caller.credential}`);
  }
}
