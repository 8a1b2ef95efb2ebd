// The monitoring table: monitoringRoutes() lists the routes outside the API (health, metrics, the
// contract and /docs), which createApp() serves without the gateway; MonitoringOptions is what
// they need.
import type { MonitoringRoute } from '../core/monitoring-route.ts';
import type { Metrics } from '../metrics/registry.ts';
import { type DocsOptions, docsRoutes } from '../reference/routes.ts';
import { type HealthOptions, healthRoutes } from './health.ts';
import { metricsRoute } from './metrics.ts';

export interface MonitoringOptions extends HealthOptions {
  docs?: DocsOptions;
  /** `GET /metrics` is served with the API when given (not when it has a port of its own). */
  metrics?: Metrics;
}

/**
 * The table of routes outside the API: health, metrics, the contract and its reference page,
 * each with the id its requests are counted under.
 *
 * @example
 * for (const route of monitoringRoutes({ store, keys, log }))
 *   app.get(route.path, handlers.monitoringRoute(route))
 */
export function monitoringRoutes({ docs, metrics, ...health }: MonitoringOptions): readonly MonitoringRoute[] {
  return [...healthRoutes(health), ...(metrics ? [metricsRoute(metrics)] : []), ...docsRoutes(docs)];
}
