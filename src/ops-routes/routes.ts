// The ops table: opsRoutes() lists the routes outside the API (health, metrics, the contract and
// /docs), which createApp() serves without the gateway; OpsOptions is what they need.
import type { OpsRoute } from '../core/ops-route.ts';
import type { Metrics } from '../metrics/registry.ts';
import { type DocsOptions, docsRoutes } from '../reference/routes.ts';
import { type HealthOptions, healthRoutes } from './health.ts';
import { metricsRoute } from './metrics.ts';

export interface OpsOptions extends HealthOptions {
  docs?: DocsOptions;
  /** `GET /metrics` is served with the API when given (not when it has a port of its own). */
  metrics?: Metrics;
}

/**
 * The table of routes outside the API: health, metrics, the contract and its reference page,
 * each with the id its requests are counted under.
 *
 * @example
 * for (const route of opsRoutes({ store, keys, log })) app.get(route.path, steps.opsRoute(route))
 */
export function opsRoutes({ docs, metrics, ...health }: OpsOptions): readonly OpsRoute[] {
  return [...healthRoutes(health), ...(metrics ? [metricsRoute(metrics)] : []), ...docsRoutes(docs)];
}
