import type { Context } from 'hono';
import type { AppEnv } from '../env.ts';

/** What `main` needs from a runtime's HTTP server. */
export interface RunningServer {
  readonly port: number;
  /** Stops accepting; resolves when in-flight requests are done (or `force` drops them). */
  stop(force?: boolean): Promise<void>;
}

export interface ServeOptions {
  fetch: (req: Request, env: unknown) => Response | Promise<Response>;
  port: number;
  hostname: string;
}

/** One runtime's way to serve a fetch handler and to tell a request's socket peer. */
export interface RuntimeAdapter {
  readonly name: 'bun' | 'deno' | 'node';
  serve(options: ServeOptions): Promise<RunningServer>;
  peerAddress(c: Context<AppEnv>): string;
}
