// The runtime adapter on Bun, which the binary and production run: `adapter.serve()` hands each
// request to the app's fetch function through Bun.serve (ARCHITECTURE.md, start-up step S3).
import { getConnInfo } from 'hono/bun';
import { CONNECTION_LIMITS, type RuntimeAdapter } from './adapter.ts';

export const adapter: RuntimeAdapter = {
  name: 'bun',
  async serve({ fetch, port, hostname, idleTimeoutSeconds, reusePort = false }) {
    const idleTimeout = idleTimeoutSeconds ?? CONNECTION_LIMITS.idleTimeoutSeconds;
    const forward = (req: Request, self: Bun.Server<undefined>) => {
      if (req.url.startsWith('/')) {
        // HTTP/1.0 without Host: Bun hands over a relative URL, which Hono cannot route (an old
        // style health check got 404 for /healthz). The authority is then the server's own
        // (RFC 9112 section 3.3); the peer is looked up on the original request.
        const peer = self.requestIP(req);
        return fetch(new Request(new URL(req.url, `http://localhost:${self.port}`), req), { requestIP: () => peer });
      }
      return fetch(req, self);
    };
    const server = Bun.serve({
      port,
      hostname,
      development: false,
      // Off except for the workers of one process: with SO_REUSEPORT a second server on the same
      // port starts fine and the kernel splits connections between the two (an old version and a
      // new one, say), so the supervisor first proves the port free without it (`Listeners.bind`'s
      // `proveOnly`, src/serve/listeners.ts).
      reusePort,
      // Between requests. Before the first byte and while headers are incomplete Bun 1.4 closes
      // the connection after about 10 s whatever this says (scripts/connections.test.ts), so
      // `headerTimeoutSeconds` has no setting here.
      idleTimeout,
      maxRequestBodySize: CONNECTION_LIMITS.maxRequestBodyBytes,
      fetch(req, self) {
        if (req.method !== 'GET' && req.method !== 'HEAD') return forward(req, self);
        // Without a body, the request only waits for the server from here on: Bun's idle timer,
        // which would close the connection under it, is off until the answer. (With a body the
        // timer stays, to cut off a client that stops sending it; the configuration keeps it longer
        // than --store-timeout: `checkTogether()` of src/config.ts.)
        self.timeout(req, 0);
        return Promise.resolve(forward(req, self)).finally(() => self.timeout(req, idleTimeout));
      },
    });
    return { port: server.port ?? port, stop: (force = false) => server.stop(force) };
  },
  peerAddress: (c) => getConnInfo(c).remote.address ?? 'unknown',
};
