// What a handler returns (`Reply`) and the headers a request gathers for its answer
// (`answerHeaders`): the shapes step 7 hands to step 8 (src/pipeline/answer.ts).
import type { Context } from 'hono';

/** The codings an answer's body may be sent in. */
export type Coding = 'br' | 'gzip';

/** The media type of every JSON answer, the Error body's included. */
export const JSON_TYPE = 'application/json';

/** The headers of one answer, by name as sent. */
export type AnswerHeaders = Record<string, string>;

/**
 * A set of the store's pets: those a reply read (`Reply.reads`), or those a write changed
 * (`ChangeCounter.changed`). The pets by id, and whether it also depends on (or changed) which
 * pets exist (`members`: a create, a removal, a page that ends the list) or any pet's status
 * (`statuses`: a page filtered by status, the inventory). A memoised reply is served while none
 * of what it read has changed (src/store/change-counter.ts).
 */
export interface PetSet {
  readonly ids: readonly number[];
  readonly members?: boolean;
  readonly statuses?: boolean;
}

/**
 * What a route, a step or the error path decides to answer. `answer()` turns it into the one
 * `Response`: nothing else builds one, and nothing changes one afterwards except `traceresponse`,
 * which the pipeline writes again when the tail rules keep a trace the head did not
 * (`setTraceResponse` in src/pipeline/pipeline.ts). The one answer made outside the app is Deno's
 * 503 to a request that arrives while the server drains (src/serve/deno.ts).
 */
export interface Reply {
  readonly status: number;
  /** The body as text (JSON, YAML, HTML) or bytes; none when absent or null. */
  readonly body?: string | Uint8Array<ArrayBuffer> | null;
  /** `Content-Type` of the body. */
  readonly type?: string;
  /**
   * Fields of this answer besides the ones the request gathered on its way (rate limits, request
   * id).
   */
  readonly headers?: Readonly<AnswerHeaders>;
  /** Entity tag of the body: an `If-None-Match` that matches it gets 304 without a body. */
  readonly etag?: string;
  /**
   * The coding `body` is already in (a pre-compressed asset): sent as it is, never compressed
   * again.
   */
  readonly encoding?: Coding;
  /**
   * What the reply read from the store, when it is memoised (src/pipeline/memo.ts); none: it depends
   * on every pet.
   */
  readonly reads?: PetSet;
}

// The variable this module keeps on Hono's context, typed on every context
// (`c.get('answerHeaders')`).
declare module 'hono' {
  interface ContextVariableMap {
    /** The headers gathered for this request's answer (`answerHeaders()`), set at step 1. */
    answerHeaders: AnswerHeaders;
  }
}

/**
 * The headers gathered for this request's answer: every step adds its fields to this plain object
 * (request id, rate-limit headers, CORS), and `answer()` hands the whole object to `Response`
 * once, not a field at a time through `c.header()`
 * (bench/README.md#measured-costs-behind-the-codes-choices). It and `beginAnswer()` sit in core
 * because src/gateway/ writes the rate-limit headers too, and the layers (.dependency-cruiser.cjs)
 * put src/gateway/ below src/pipeline/, whose steps and `answer()` use them.
 *
 * @example
 * answerHeaders(c)['Retry-After'] = '30'
 */
export function answerHeaders(c: Context): AnswerHeaders {
  let headers: AnswerHeaders | undefined = c.get('answerHeaders');
  // Step 1 (`beginAnswer`) sets them on every request. Made here only where it has not run: a
  // test of `answer()` alone, or an error Hono's `onError` answers from before step 1 began.
  if (headers === undefined) {
    headers = {};
    c.set('answerHeaders', headers);
  }
  return headers;
}

/**
 * Starts the gathered headers with `fields`, before any step writes.
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
