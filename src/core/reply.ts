// What a handler returns (`Reply`) and the headers a request collects for its response
// (`answerHeaders`): the shapes step 7 passes to step 8 (src/pipeline/answer.ts).
import type { Context } from 'hono';

/** The content codings a response body may be sent in. */
export type Coding = 'br' | 'gzip';

/** The media type of every JSON response, including the Error body. */
export const JSON_TYPE = 'application/json';

/** The headers of one response, keyed by name as sent. */
export type AnswerHeaders = Record<string, string>;

/**
 * A set of the store's pets: those a reply read (`Reply.reads`), or those a write changed
 * (`ChangeCounter.changed`). `ids` lists pets by id; `members` covers which pets exist (a create,
 * a removal, a page that ends the list); `statuses` covers any pet's status (a page filtered by
 * status, the inventory). A memoised reply is served while nothing it read has changed
 * (src/store/change-counter.ts).
 */
export interface PetSet {
  readonly ids: readonly number[];
  readonly members?: boolean;
  readonly statuses?: boolean;
}

/**
 * What a route, a step or the error path decides to answer. Only `answer()` turns it into a
 * `Response`, and nothing changes that `Response` afterwards except `traceresponse`, which the
 * pipeline rewrites when the final export decision differs from the head sampler's: the tail
 * sampling rules keep a trace the head sampler did not, or a head-sampled record was overwritten
 * in the trace ring while the request was served (`finishRequest` in src/trace/spans.ts,
 * `setTraceResponse` in src/pipeline/pipeline.ts). The only response the project builds outside
 * the app is Deno's 503 to a request that arrives while the server drains (src/serve/deno.ts).
 * The runtimes themselves answer some requests before the app runs, with a bare status and no
 * Error body: 400 to a malformed request, 431 past the header limit (16 KiB on Bun and Node), and
 * on Node 408 when the headers or the request come too slowly (`CONNECTION_LIMITS` in
 * src/serve/adapter.ts).
 */
export interface Reply {
  readonly status: number;
  /** The body as text (JSON, YAML, HTML) or bytes; none when absent or null. */
  readonly body?: string | Uint8Array<ArrayBuffer> | null;
  /** `Content-Type` of the body. */
  readonly type?: string;
  /** Headers of this reply, besides those the request collected on its way (rate limits, id). */
  readonly headers?: Readonly<AnswerHeaders>;
  /** The body's entity tag: a request whose `If-None-Match` matches it gets 304 without a body. */
  readonly etag?: string;
  /** The coding `body` is already in (a pre-compressed asset), so it is sent as is. */
  readonly encoding?: Coding;
  /**
   * What the reply read from the store, when it is memoised (src/pipeline/memo.ts); when absent, it
   * depends on every pet.
   */
  readonly reads?: PetSet;
}

// Types the variable this module keeps on Hono's context (`c.get('answerHeaders')`).
declare module 'hono' {
  interface ContextVariableMap {
    /** The headers collected for this request's response (`answerHeaders()`), set at step 1. */
    answerHeaders: AnswerHeaders;
  }
}

/**
 * Returns the headers collected for this request's response. Every step adds its fields to this
 * plain object (request id, rate-limit headers, CORS), and `answer()` passes the whole object to
 * `Response` once rather than one field at a time through `c.header()`
 * (bench/README.md#measured-costs-behind-the-codes-choices). It and `beginAnswer()` live in core
 * because src/gateway/ also writes rate-limit headers, and the layers (.dependency-cruiser.cjs)
 * put src/gateway/ below src/pipeline/.
 *
 * @example
 * answerHeaders(c)['Retry-After'] = '30'
 */
export function answerHeaders(c: Context): AnswerHeaders {
  let headers: AnswerHeaders | undefined = c.get('answerHeaders');
  // Step 1 (`beginAnswer`) sets them on every request. They are made here only where step 1 has
  // not run: a test of `answer()` alone, or an error that Hono's `onError` answers before step 1.
  if (headers === undefined) {
    headers = {};
    c.set('answerHeaders', headers);
  }
  return headers;
}

/**
 * Starts this request's headers with `fields`; called at step 1, before any step writes.
 *
 * @example
 * beginAnswer(c, { 'X-Request-Id': id })
 */
export function beginAnswer(c: Context, fields: AnswerHeaders): void {
  c.set('answerHeaders', fields);
}

/** Adds `value` to a list-valued field such as `Vary`. */
export function appendHeader(headers: AnswerHeaders, name: string, value: string): void {
  const current = headers[name];
  headers[name] = current ? `${current}, ${value}` : value;
}
