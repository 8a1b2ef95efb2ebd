import { getConnInfo } from 'hono/bun';
import type { RuntimeAdapter } from './server.ts';

export const adapter: RuntimeAdapter = {
  name: 'bun',
  async serve({ fetch, port, hostname }) {
    const server = Bun.serve({ fetch, port, hostname, development: false });
    return { port: server.port ?? port, stop: (force = false) => server.stop(force) };
  },
  peerAddress: (c) => getConnInfo(c).remote.address ?? 'unknown',
};
