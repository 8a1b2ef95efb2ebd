// The ports that start-up (src/serve/start.ts) binds: the API's, the metrics' and the admin API's,
// all stopped together on shutdown.
import { metricsApp } from '../app.ts';
import type { Config } from '../config.ts';
import type { Metrics } from '../metrics/registry.ts';
import type { RunningServer, RuntimeAdapter, ServeOptions } from './adapter.ts';

/**
 * The server's listeners. The API and metrics ports are bound before the store opens, so a port
 * in use leaves no new database file behind; a request that arrives meanwhile waits for the app.
 */
export class Listeners {
  readonly all: RunningServer[];
  readonly #adapter: RuntimeAdapter;
  readonly #resolveApp: (fetch: ServeOptions['fetch']) => void;

  private constructor(
    readonly main: RunningServer,
    readonly metrics: RunningServer | undefined,
    adapter: RuntimeAdapter,
    resolveApp: (fetch: ServeOptions['fetch']) => void,
  ) {
    this.all = metrics ? [main, metrics] : [main];
    this.#adapter = adapter;
    this.#resolveApp = resolveApp;
  }

  /**
   * Binds the API's port and, when configured, the metrics port. With `proveOnly` (workers will
   * serve), the API's port is bound without `SO_REUSEPORT` and closed again: a port in use fails
   * the start here, as without workers, and the workers then share the port checked free (for a
   * port of 0, the number the system chose).
   */
  static async bind(
    config: Config,
    adapter: RuntimeAdapter,
    metrics: Metrics | undefined,
    { proveOnly = false }: { readonly proveOnly?: boolean } = {},
  ): Promise<Listeners> {
    let resolve: (fetch: ServeOptions['fetch']) => void = () => {};
    const app = new Promise<ServeOptions['fetch']>((r) => {
      resolve = r;
    });
    // The port is bound before the app exists, so early requests wait for it. Once it exists,
    // `handle` is the app itself, so later requests skip the promise.
    let handle: ServeOptions['fetch'] = (req, env) => app.then((fetch) => fetch(req, env));
    void app.then((fetch) => {
      handle = fetch;
    });
    let main = await adapter.serve({
      fetch: (req, env) => handle(req, env),
      port: config.port,
      hostname: config.host,
      headerTimeoutSeconds: config.headerTimeoutSeconds,
      idleTimeoutSeconds: config.idleTimeoutSeconds,
    });
    if (proveOnly) {
      await main.stop(true);
      main = { port: main.port, stop: async () => {} };
    }
    const metricsServer =
      metrics && config.metricsPort !== null
        ? await adapter.serve({ fetch: metricsApp(metrics).fetch, port: config.metricsPort, hostname: config.host })
        : undefined;
    return new Listeners(main, metricsServer, adapter, resolve);
  }

  /** Makes the API's port serve `fetch`, starting with the requests that waited for it. */
  answerWith(fetch: ServeOptions['fetch']): void {
    this.#resolveApp(fetch);
  }

  /** Adds the workers that serve the API's port; on shutdown they are stopped first. */
  addWorkerPool(pool: RunningServer): void {
    this.all.unshift(pool);
  }

  /** Binds another listener (the admin API's), which is stopped with the others. */
  async add(fetch: ServeOptions['fetch'], port: number, hostname: string): Promise<RunningServer> {
    const server = await this.#adapter.serve({ fetch, port, hostname });
    this.all.push(server);
    return server;
  }
}
