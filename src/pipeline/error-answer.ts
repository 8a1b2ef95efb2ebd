// The error answer: `toApiError()` maps whatever a step threw to an `ApiError`, and
// `answerError()` answers an `ApiError` through `answer()`.
import type { Context } from 'hono';
import { ApiError, serviceUnavailable } from '../core/api-error.ts';
import { StoreUnavailableError } from '../store/store-error.ts';
import { answer } from './answer.ts';

type ErrorReporter = (err: unknown, c: Context) => void;

/**
 * Maps whatever was thrown to the `ApiError` to answer. An `ApiError` stays as it is; a store that
 * cannot serve becomes a 503 `service_unavailable`, passed to `unavailable`; anything thrown after
 * the client closed the connection becomes a 400 `invalid_request`, not logged; anything else
 * becomes a 500, passed to `report`. No message carries the error's own text, which may hold
 * internals.
 *
 * @example
 * catch (err) { return answerError(c, toApiError(err, c, report)) }
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

/**
 * Answers a refusal or error with the contract's Error body, adding its own headers to those the
 * request gathered (rate limits, request id). Every refusal and error is answered here.
 *
 * @example
 * return answerError(c, NO_SUCH_PATH)
 */
export function answerError(c: Context, err: ApiError): Response {
  return answer(c, err.reply);
}
