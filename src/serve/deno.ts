// The runtime adapter on Deno: `adapter.serve()` passes each request to the app's fetch function
// through Deno.serve, and drains the requests in flight itself before it shuts the server down.
import { getConnInfo } from 'hono/deno';
import type { RuntimeAdapter } from './adapter.ts';

interface DenoServer {
  readonly addr: { port: number };
  shutdown(): Promise<void>;
  readonly finished: Promise<void>;
}
interface DenoServeApi {
  serve(
    options: { port: number; hostname: string; onListen?: () => void },
    handler: (req: Request, info: unknown) => Response | Promise<Response>,
  ): DenoServer;
}
declare const Deno: DenoServeApi;

/** The Error body for requests that arrive while the server drains. */
const SHUTTING_DOWN = JSON.stringify({
  code: 'service_unavailable',
  message: 'The server is shutting down.',
  status: 503,
});

/**
 * Deno 2.9's `server.shutdown()` makes the bodies of requests in flight unreadable at once
 * (denoland/deno#36809: "BadResource: Cannot read body as underlying resource unavailable"), so a
 * slow upload would fail with a 500 instead of finishing. So `stop()` first waits for the
 * requests in flight, answering new ones 503 with `Connection: close`, and calls `shutdown()`
 * only once none is left. At the shutdown deadline the process exits (src/serve/signals.ts),
 * which drops the rest.
 */
export const adapter: RuntimeAdapter = {
  name: 'deno',
  async serve({ fetch, port, hostname }) {
    let inFlight = 0;
    let draining = false;
    let drained: (() => void) | undefined;
    const server = Deno.serve({ port, hostname, onListen: () => {} }, async (req, info) => {
      if (draining) {
        return new Response(SHUTTING_DOWN, {
          status: 503,
          headers: { 'Content-Type': 'application/json', Connection: 'close' },
        });
      }
      inFlight++;
      try {
        return await fetch(req, info);
      } finally {
        if (--inFlight === 0) drained?.();
      }
    });
    return {
      port: server.addr.port,
      stop: async (force = false) => {
        if (force) return;
        draining = true;
        if (inFlight > 0) await new Promise<void>((resolve) => (drained = resolve));
        await server.shutdown();
      },
    };
  },
  peerAddress: (c) => getConnInfo(c).remote.address ?? 'unknown',
};
