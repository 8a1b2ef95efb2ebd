import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { RuntimeAdapter } from './server.ts';

export const adapter: RuntimeAdapter = {
  name: 'node',
  async serve({ fetch, port, hostname }) {
    const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
      const s = serve({ fetch, port, hostname }, () => resolve(s));
      s.once('error', reject);
    });
    const bound = (server.address() as AddressInfo).port;
    return {
      port: bound,
      stop: (force = false) =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          if ('closeIdleConnections' in server) server.closeIdleConnections();
          if (force && 'closeAllConnections' in server) server.closeAllConnections();
        }),
    };
  },
  peerAddress: (c) => getConnInfo(c).remote.address ?? 'unknown',
};
