// The API's single error type, `ApiError`: a code from `ERROR_CODES`, its status, and the Error
// body. Every refusal and failure of a request is one; `serviceUnavailable()`, `tooLarge()`,
// `notJson()` and `methodNotAllowed()` make the common ones.
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import * as v from 'valibot';
import { JSON_TYPE, type Reply } from './reply.ts';

/** Stable, documented values of `Error.code`. */
const ERROR_CODES = [
  'invalid_request',
  'unauthorized',
  'insufficient_scope',
  'not_found',
  'method_not_allowed',
  'idempotency_key_reused',
  'conflict',
  'invalid_transition',
  'pet_on_order',
  'precondition_failed',
  'pet_unavailable',
  'order_closed',
  'pet_not_found',
  'payload_too_large',
  'uri_too_long',
  'unsupported_media_type',
  'rate_limited',
  'key_banned',
  'too_many_concurrent_requests',
  'internal_error',
  'service_unavailable',
] as const;
export const ErrorCode = v.picklist(ERROR_CODES);
export type ErrorCode = v.InferOutput<typeof ErrorCode>;

/** The body of every error response. */
export const ErrorBody = v.strictObject({
  code: ErrorCode,
  message: v.string(),
  status: v.pipe(v.number(), v.integer(), v.minValue(400), v.maxValue(599)),
});
export type ErrorBody = v.InferOutput<typeof ErrorBody>;

/**
 * The `Retry-After` of a 503: most store faults (a lock wait, a failover, a dropped connection)
 * pass within seconds.
 */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 1;

const STATUS_BY_CODE: Record<ErrorCode, ContentfulStatusCode> = {
  invalid_request: 400,
  unauthorized: 401,
  insufficient_scope: 403,
  not_found: 404,
  method_not_allowed: 405,
  idempotency_key_reused: 409,
  conflict: 409,
  invalid_transition: 409,
  pet_on_order: 409,
  precondition_failed: 412,
  pet_unavailable: 409,
  order_closed: 409,
  pet_not_found: 404,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  rate_limited: 429,
  key_banned: 429,
  too_many_concurrent_requests: 429,
  internal_error: 500,
  service_unavailable: 503,
};

/**
 * The API's error type, answered with the Error body. A handler or a step throws it, and
 * step 1 (`runRequest` in src/pipeline/pipeline.ts) answers it; the gateway returns its refusals
 * instead (`AdmissionCheck`, src/gateway/gateway.ts, says why). Hono's `onError` answers only what
 * escapes step 1. One ApiError may answer many requests, so it and its headers are immutable.
 *
 * @example
 * throw new ApiError('not_found', 'No pet has id 42.')
 */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: ContentfulStatusCode;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ErrorCode, message: string, headers: Record<string, string> = {}) {
    const status = STATUS_BY_CODE[code];
    // A 4xx is an expected answer and nobody reads its stack, which is costly to capture
    // (bench/README.md#measured-costs-behind-the-codes-choices). A 5xx keeps its stack.
    const stackTraceLimit = Error.stackTraceLimit;
    if (status < 500) Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'ApiError';
    this.code = code;
    this.status = status;
    this.headers = Object.freeze(headers);
  }

  /**
   * The reply: the Error body and the error's headers. Built once and cached, since the gateway
   * makes some refusals once and answers many requests with them.
   */
  get reply(): Reply {
    this.#reply ??= {
      status: this.status,
      body: JSON.stringify({ code: this.code, message: this.message, status: this.status } satisfies ErrorBody),
      type: JSON_TYPE,
      headers: this.headers,
    };
    return this.#reply;
  }

  #reply: Reply | undefined;
}

/**
 * Returns a 503 `service_unavailable` with `Retry-After`, for when something the answer needs is
 * down for now.
 *
 * @example
 * throw serviceUnavailable('Rate limits cannot be checked right now; retry shortly.')
 */
export function serviceUnavailable(message: string): ApiError {
  return new ApiError('service_unavailable', message, { 'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS) });
}

/** Returns the 413 for a body over `maxBytes`, wherever the size is found. */
export function tooLarge(maxBytes: number): ApiError {
  return new ApiError('payload_too_large', `The request body is larger than ${maxBytes} bytes.`);
}

/**
 * Returns the 415 for a body in none of the media types the operation reads (`application/json`
 * unless it says otherwise), with `headers` such as PATCH's `Accept-Patch`.
 *
 * @example
 * notJson(['application/merge-patch+json', 'application/json'])
 * // 415 "The request body must be application/merge-patch+json or application/json."
 */
export function notJson(types: readonly string[] = [JSON_TYPE], headers?: Record<string, string>): ApiError {
  return new ApiError('unsupported_media_type', `The request body must be ${types.join(' or ')}.`, headers);
}

/** The 404 for a path no route serves. */
export const NO_SUCH_PATH = new ApiError('not_found', 'No resource exists at this path.');

/**
 * Returns the 405 for a known path requested with a method it does not serve, with `Allow`.
 *
 * @example
 * methodNotAllowed('DELETE', ['GET', 'POST']) // 405, Allow: GET, POST
 */
export function methodNotAllowed(method: string, allowed: readonly string[]): ApiError {
  const allow = allowed.join(', ');
  return new ApiError('method_not_allowed', `${method} is not allowed here; use ${allow}.`, { Allow: allow });
}
