import { Hono } from 'hono';
import type { AppEnv } from '../env.ts';
import { notFound, onError } from '../http/errors.ts';
import type { Metrics } from '../metrics/registry.ts';
import { METRICS_CONTENT_TYPE } from '../metrics/labels.ts';

/**
 * `GET /metrics` in the Prometheus text format, no key, no rate limit.
 *
 * @example
 * app.route('/', metricsRoutes(metrics))
 */
export function metricsRoutes(metrics: Metrics) {
  const routes = new Hono<AppEnv>();
  routes.get('/metrics', async (c) =>
    c.body(await metrics.render(), 200, { 'Content-Type': METRICS_CONTENT_TYPE, 'Cache-Control': 'no-store' }),
  );
  return routes;
}

/**
 * The whole app of the separate `--metrics-port` listener: `/metrics`, and the Error body
 * for anything else.
 *
 * @example
 * adapter.serve({ fetch: metricsApp(metrics).fetch, port: 9090, hostname: '127.0.0.1' })
 */
export function metricsApp(metrics: Metrics) {
  const app = new Hono<AppEnv>();
  app.route('/', metricsRoutes(metrics));
  app.notFound(notFound);
  app.onError(onError(() => {}));
  return app;
}
