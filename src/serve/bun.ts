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
        // HTTP/1.0 without Host: Bun passes a relative URL, which Hono cannot route (an old-style
        // health check would get 404 for /healthz). Use the server's own authority (RFC 9112
        // section 3.3), and look up the peer on the original request.
        const peer = self.requestIP(req);
        return fetch(new Request(new URL(req.url, `http://localhost:${self.port}`), req), { requestIP: () => peer });
      }
      return fetch(req, self);
    };
    const server = Bun.serve({
      port,
      hostname,
      development: false,
      // Off except for the workers of one process. With SO_REUSEPORT, a second server on the same
      // port (an old version and a new one, say) starts without error and the kernel splits the
      // connections between them, so the supervisor first checks the port is free without it
      // (`Listeners.bind`'s `proveOnly`, src/serve/listeners.ts).
      reusePort,
      // Applies between requests. Before the first byte and while headers are incomplete, Bun
      // closes the connection after its own fixed timeout (scripts/connections.test.ts), so
      // `headerTimeoutSeconds` has no setting here.
      idleTimeout,
      maxRequestBodySize: CONNECTION_LIMITS.maxRequestBodyBytes,
      fetch(req, self) {
        if (req.method !== 'GET' && req.method !== 'HEAD') return forward(req, self);
        // A GET or HEAD has no body, so from here on only the server is working: turn off Bun's
        // idle timer, which would close the connection, until the answer. (With a body the timer
        // stays, to cut off a client that stops sending; the configuration keeps it longer than
        // --store-timeout: `checkTogether()` of src/config.ts.)
        self.timeout(req, 0);
        return Promise.resolve(forward(req, self)).finally(() => self.timeout(req, idleTimeout));
      },
    });
    return { port: server.port ?? port, stop: (force = false) => server.stop(force) };
  },
  peerAddress: (c) => getConnInfo(c).remote.address ?? 'unknown',
};
