// The table of service routes: serviceRoutes() lists the routes outside the API (health, metrics,
// the contract and /docs), which createApp() serves without the gateway; ServiceRoutesOptions is
// what they need.
import type { ServiceRoute } from '../core/service-route.ts';
import type { Metrics } from '../metrics/registry.ts';
import { type DocsOptions, docsRoutes } from '../reference/docs-routes.ts';
import { type HealthOptions, healthRoutes } from './health.ts';
import { metricsRoute } from './metrics.ts';

export interface ServiceRoutesOptions extends HealthOptions {
  docs?: DocsOptions;
  /** `GET /metrics` is served with the API when given (not when it has a port of its own). */
  metrics?: Metrics;
}

/**
 * The table of routes outside the API: health, metrics, the contract and its reference page,
 * each with the id its requests are counted under.
 *
 * @example
 * for (const route of serviceRoutes({ store, keyTable, log }))
 *   app.get(route.path, handlers.serviceRoute(route))
 */
export function serviceRoutes({ docs, metrics, ...health }: ServiceRoutesOptions): readonly ServiceRoute[] {
  return [...healthRoutes(health), ...(metrics ? [metricsRoute(metrics)] : []), ...docsRoutes(docs)];
}
