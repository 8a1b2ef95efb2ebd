// The runtime adapter on Node: `adapter.serve()` hands each request to the app's fetch function
// through @hono/node-server, with Node's timeouts set to the connection limits.
import type { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { CONNECTION_LIMITS, type RuntimeAdapter } from './adapter.ts';

/** While stopping, how often connections that finished their request are closed. */
const IDLE_SWEEP_MS = 50;
/**
 * Node destroys a socket whose timeout fires unless its request or response listens for
 * 'timeout'; a response waiting for the server listens with this, so only idle sockets close.
 */
const KEEP_OPEN = () => {};

export const adapter: RuntimeAdapter = {
  name: 'node',
  async serve({ fetch, port, hostname, headerTimeoutSeconds, idleTimeoutSeconds }) {
    const headersMs = (headerTimeoutSeconds ?? CONNECTION_LIMITS.headersTimeoutMs / 1000) * 1000;
    const idleMs = (idleTimeoutSeconds ?? CONNECTION_LIMITS.idleTimeoutSeconds) * 1000;
    const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
      const serverOptions = {
        headersTimeout: headersMs,
        // Node wants the whole request's limit at least the headers' one.
        requestTimeout: Math.max(CONNECTION_LIMITS.requestTimeoutMs, headersMs),
        keepAliveTimeout: idleMs,
        maxHeaderSize: CONNECTION_LIMITS.maxHeaderBytes,
        // Both timeouts are checked this often (Node's default, 30 s, would let a slow client stay
        // 40 s).
        connectionsCheckingInterval: 1_000,
      };
      // Without a body, the request only waits for the server once it is here. (With a body the
      // timer stays, to cut off a client that stops sending it; the configuration keeps it longer
      // than --store-timeout: `checkTogether()` of src/config.ts.)
      const answer = (req: Request, env: { outgoing: EventEmitter }) => {
        if (req.method === 'GET' || req.method === 'HEAD') env.outgoing.on('timeout', KEEP_OPEN);
        return fetch(req, env);
      };
      const s = serve({ fetch: answer, port, hostname, serverOptions }, () => resolve(s));
      // A connection that sends nothing at all is not covered by the two timeouts above.
      s.setTimeout(idleMs);
      s.once('error', reject);
    });
    const bound = (server.address() as AddressInfo).port;
    const closeIdle = () => {
      if ('closeIdleConnections' in server) server.closeIdleConnections();
    };
    return {
      port: bound,
      stop: (force = false) => {
        if (force) {
          if ('closeAllConnections' in server) server.closeAllConnections();
          return Promise.resolve();
        }
        return new Promise<void>((resolve) => {
          // close() waits for every connection, and closes only those idle at that moment: a
          // kept-alive connection whose request finishes later would hold it until the deadline.
          const sweep = setInterval(closeIdle, IDLE_SWEEP_MS);
          server.close(() => {
            clearInterval(sweep);
            resolve();
          });
          closeIdle();
        });
      },
    };
  },
  peerAddress: (c) => getConnInfo(c).remote.address ?? 'unknown',
};
