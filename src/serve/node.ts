// The runtime adapter on Node: `adapter.serve()` passes each request to the app's fetch function
// through @hono/node-server, with Node's timeouts set to the connection limits.
import type { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { CONNECTION_LIMITS, type RuntimeAdapter } from './adapter.ts';

/** While stopping, how often idle connections (their request finished) are closed. */
const IDLE_SWEEP_MS = 50;
/**
 * Node destroys a socket whose timeout fires unless its request or response has a 'timeout'
 * listener. A response still being prepared gets this one, so only idle sockets are closed.
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
        // Node requires the whole request's timeout to be at least the headers' timeout.
        requestTimeout: Math.max(CONNECTION_LIMITS.requestTimeoutMs, headersMs),
        keepAliveTimeout: idleMs,
        maxHeaderSize: CONNECTION_LIMITS.maxHeaderBytes,
        // How often both timeouts are checked; Node's default interval would let a slow client
        // stay well past them.
        connectionsCheckingInterval: 1_000,
      };
      // A GET or HEAD has no body, so once it arrives only the server is working: keep the socket
      // open until the answer. (With a body the timeout stays, to cut off a client that stops
      // sending; the configuration keeps it longer than --store-timeout: `checkTogether()` of
      // src/config.ts.)
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
          // close() waits for every connection but closes only those idle at that moment, so a
          // keep-alive connection whose request finishes later would hold it until the deadline.
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
