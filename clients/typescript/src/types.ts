import type { PetstoreError } from './errors.ts';
import type { operations } from './generated/schema.ts';

/** Where the client's one warning (a deprecated operation's first use) goes. */
export interface Logger {
  warn(message: string): void;
}

/** Any `fetch`: the runtime's, a wrapper that records or proxies, a test server's. */
export type Fetch = (input: string, init: RequestInit) => Promise<Response>;

/** What `onRateLimit` is told before the client waits. */
export interface RateLimitInfo {
  /** The operation whose call waits. */
  operationId: string;
  /**
   * `paced`: the key has no request left until the window moves, so the client holds this one
   * back instead of sending it to be refused. Otherwise the 429's `code` (`rate_limited`,
   * `too_many_concurrent_requests`) that this wait answers.
   */
  reason: 'paced' | 'rate_limited' | 'too_many_concurrent_requests';
  /** Milliseconds the client is about to wait. */
  waitMs: number;
  /** The retry the wait comes before (1 for the first); 0 for a `paced` hold. */
  attempt: number;
  /** The 429 being retried; absent for a `paced` hold. */
  error?: PetstoreError;
}

export interface ClientOptions {
  /** The API key (`psk_…`), sent as `Authorization: Bearer`. */
  apiKey: string;
  /** The API's base URL, ending in `/v1`: production's or staging's. */
  baseUrl: string;
  /** Retries after the first try, on 429, connection errors, 502, 503 and 504 (default 3). */
  maxRetries?: number;
  /**
   * Called before each wait for the rate limit; return `false` to fail the call instead: with
   * the 429, or, for a `paced` hold, a `PetstoreError` `rate_limited` of the client's own
   * (status 429, `Retry-After` the hold's length; nothing was sent).
   */
  onRateLimit?: (info: RateLimitInfo) => unknown;
  /** Receives the deprecation warning (default `console`). */
  logger?: Logger;
  /** The `fetch` to send with (default `globalThis.fetch`). */
  fetch?: Fetch;
}

/** Options every method takes last. */
export interface CallOptions {
  /** Cancels the request and any wait before it or between its retries. */
  signal?: AbortSignal;
}

/** Options of an operation that takes an `Idempotency-Key` (`createPet`). */
export interface CreateOptions extends CallOptions {
  /** Sent as `Idempotency-Key` on every try of this call (default: a random UUID per call). */
  idempotencyKey?: string;
}

/** Options of an operation that takes `If-Match` (`updatePet`, `deletePet`). */
export interface ConditionalOptions extends CallOptions {
  /**
   * Sent as `If-Match`: the pet's `ETag` as an answer gave it (`etagOf`), or `*`. The change is
   * made only while the pet is at that version; otherwise the call fails with `PetstoreError`
   * `precondition_failed` (412) and nothing changes.
   */
  ifMatch?: string;
}

/** The JSON body of an operation's successful answers, from its contract responses. */
export type JsonSuccess<Responses> = {
  [S in keyof Responses]: S extends 200 | 201 | 202 | 203 | 206
    ? Responses[S] extends { content: { 'application/json': infer Body } }
      ? Body
      : never
    : S extends 204
      ? undefined
      : never;
}[keyof Responses];

/** Sends one operation: what every generated method hands over. */
export type Call = <K extends keyof operations>(
  id: K,
  path: Record<string, string | number>,
  body: unknown,
  query: Record<string, string | number | boolean | undefined> | undefined,
  options: (CreateOptions & ConditionalOptions) | undefined,
) => Promise<JsonSuccess<operations[K]['responses']>>;
