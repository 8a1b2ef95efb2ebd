// The interface each runtime's server implements (RuntimeAdapter, RunningServer, ServeOptions), so
// start-up code is the same on Bun, Deno and Node; and CONNECTION_LIMITS, which the adapters apply.
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.ts';

/**
 * Connection limits the adapters apply where their runtime has the setting (docs/operations.md,
 * "Resource bounds", lists what each runtime enforces):
 * - `idleTimeoutSeconds`: a connection that makes no progress this long is closed. Bun resets
 *   the timer only after a real amount of data, so a slow-loris client sending a byte at a time
 *   is also cut off; Node gets the same from the two timeouts below.
 * - `headersTimeoutMs` / `requestTimeoutMs`: the headers, and the whole request, must have
 *   arrived by then (Node: 408, then the connection is closed).
 * - `maxHeaderBytes`: request line and headers together (Bun's fixed limit is the same 16 KiB).
 * - `maxRequestBodyBytes`: Bun refuses a larger declared body with a bare 413 before the app runs,
 *   and resets the connection while the client is still sending. So this is set as high as
 *   possible, and the app's own body limit answers every oversized body with the Error body
 *   (src/pipeline/body-limit.ts bounds how much is then read and discarded).
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
   * Shares the port with the other workers of this process (`SO_REUSEPORT`). Set only after the
   * supervisor has checked, without it, that the port is free: `Listeners.bind`'s `proveOnly`
   * (src/serve/listeners.ts), which `startServer()` (src/serve/start.ts) asks for when workers
   * serve.
   */
  reusePort?: boolean;
}

/** How one runtime serves a fetch handler and finds a request's peer address. */
export interface RuntimeAdapter {
  readonly name: 'bun' | 'deno' | 'node';
  serve(options: ServeOptions): Promise<RunningServer>;
  peerAddress(c: Context<AppEnv>): string;
}
