import { getConnInfo } from 'hono/deno';
import type { RuntimeAdapter } from './server.ts';

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

export const adapter: RuntimeAdapter = {
  name: 'deno',
  async serve({ fetch, port, hostname }) {
    const server = Deno.serve({ port, hostname, onListen: () => {} }, (req, info) => fetch(req, info));
    return {
      port: server.addr.port,
      stop: async (force = false) => {
        if (!force) await server.shutdown();
      },
    };
  },
  peerAddress: (c) => getConnInfo(c).remote.address ?? 'unknown',
};
