import type { OpsRoute } from '../core/ops-route.ts';
import { METRICS_CONTENT_TYPE } from '../metrics/labels.ts';
import type { Metrics } from '../metrics/registry.ts';

/**
 * `GET /metrics` in the Prometheus text format, no key, no rate limit.
 *
 * @example
 * const route = metricsRoute(metrics)
 */
export function metricsRoute(metrics: Metrics): OpsRoute {
  return {
    id: 'metrics',
    method: 'GET',
    path: '/metrics',
    handler: async () => ({
      status: 200,
      body: await metrics.render(),
      type: METRICS_CONTENT_TYPE,
      headers: { 'Cache-Control': 'no-store' },
    }),
  };
}
