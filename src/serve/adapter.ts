// What each runtime's server provides (RuntimeAdapter, RunningServer, ServeOptions), so the
// start-up code is the same on Bun, Deno and Node; and CONNECTION_LIMITS, which the adapters apply.
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.ts';

/**
 * Connection limits the adapters apply where their runtime has the setting (docs/operations.md,
 * "Resource bounds", lists what each runtime enforces):
 * - `idleTimeoutSeconds`: a connection that makes no progress this long is closed. Bun resets
 *   the timer only after a real amount of data, so a slow-loris client dribbling a byte at a
 *   time is cut off too; Node gets the same from the two timeouts below.
 * - `headersTimeoutMs` / `requestTimeoutMs`: the headers, and the whole request, must have
 *   arrived by then (Node: 408, then the connection is closed).
 * - `maxHeaderBytes`: request line and headers together (Bun's fixed limit is the same 16 KiB).
 * - `maxRequestBodyBytes`: a declared body above this would be refused by Bun with a bare 413
 *   before the app runs (and the connection reset under a client still sending): so it is as
 *   high as a length can be, and the app's own 64 KiB limit answers every over-limit body with
 *   the Error body (src/pipeline/body-limit.ts bounds what is then discarded).
 */
export const CONNECTION_LIMITS = {
  idleTimeoutSeconds: 10,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  maxHeaderBytes: 16 * 1024,
  maxRequestBodyBytes: Number.MAX_SAFE_INTEGER,
} as const;

/** What `startServer()` needs from a runtime's HTTP server. */
export interface RunningServer {
  readonly port: number;
  /** Stops accepting; resolves when in-flight requests are done (or `force` drops them). */
  stop(force?: boolean): Promise<void>;
}

export interface ServeOptions {
  fetch: (req: Request, env: unknown) => Response | Promise<Response>;
  port: number;
  hostname: string;
  /** `--header-timeout`: seconds to receive a request's headers (default `CONNECTION_LIMITS`). */
  headerTimeoutSeconds?: number;
  /** `--idle-timeout`: seconds a connection may sit idle (default `CONNECTION_LIMITS`). */
  idleTimeoutSeconds?: number;
  /**
   * Shares the port with the other workers of this process (`SO_REUSEPORT`): set only once the
   * supervisor has proved the port free without it (src/serve/supervisor.ts).
   */
  reusePort?: boolean;
}

/** One runtime's way to serve a fetch handler and to tell a request's socket peer. */
export interface RuntimeAdapter {
  readonly name: 'bun' | 'deno' | 'node';
  serve(options: ServeOptions): Promise<RunningServer>;
  peerAddress(c: Context<AppEnv>): string;
}
