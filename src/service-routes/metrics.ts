// The service route GET /metrics: metricsRoute() renders the registry in the Prometheus text
// format, or OpenMetrics when the scraper asks. The table of service routes serves it on the API's
// port, metricsApp() on a port of its own.
import type { ServiceRoute } from '../core/service-route.ts';
import { OPENMETRICS_CONTENT_TYPE } from '../metrics/exemplars.ts';
import { METRICS_CONTENT_TYPE } from '../metrics/labels.ts';
import type { Metrics } from '../metrics/registry.ts';

/**
 * `GET /metrics` in the Prometheus text format, or OpenMetrics when asked for; no key, no rate
 * limit.
 *
 * @example
 * const route = metricsRoute(metrics)
 */
export function metricsRoute(metrics: Metrics): ServiceRoute {
  return {
    id: 'metrics',
    method: 'GET',
    path: '/metrics',
    // OpenMetrics (with the latency's exemplars) when the scraper asks for it, as Prometheus does.
    handler: async (c) =>
      c.req.header('accept')?.includes('application/openmetrics-text')
        ? {
            status: 200,
            body: await metrics.renderOpenMetrics(),
            type: OPENMETRICS_CONTENT_TYPE,
            headers: { 'Cache-Control': 'no-store', Vary: 'Accept' },
          }
        : {
            status: 200,
            body: await metrics.render(),
            type: METRICS_CONTENT_TYPE,
            headers: { 'Cache-Control': 'no-store', Vary: 'Accept' },
          },
  };
}
