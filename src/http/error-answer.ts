// How a throw becomes a refusal or an error: `toApiError()` maps what a step threw (a store that
// is down is a 503, anything unknown a 500); the pipeline's `fail()` answers it.
import type { Context } from 'hono';
import { ApiError, serviceUnavailable } from '../core/api-error.ts';
import { StoreUnavailableError } from '../store/store-error.ts';

export type ErrorReporter = (err: unknown, c: Context) => void;

/**
 * Whatever was thrown, as the ApiError to answer: known errors keep their status; a store that
 * cannot serve is a 503 `service_unavailable` (told to `unavailable`); anything else is a
 * logged 500 (told to `report`). Neither message carries the error's own text, which may hold
 * internals.
 *
 * @example
 * catch (err) { return fail(c, toApiError(err, c, report)) }
 */
export function toApiError(
  err: unknown,
  c: Context,
  report: ErrorReporter,
  unavailable: ErrorReporter = report,
): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof StoreUnavailableError) {
    unavailable(err, c);
    return serviceUnavailable('The pet store is temporarily unavailable; retry shortly.');
  }
  // A client that hangs up mid-body makes the body read throw (Bun: AbortError). Nobody
  // reads this answer; it is a 400 so logs and metrics do not count a server fault.
  if (c.req.raw.signal?.aborted) {
    return new ApiError('invalid_request', 'The client closed the connection before the request was read.');
  }
  report(err, c);
  return new ApiError('internal_error', 'The server failed to handle the request.');
}
