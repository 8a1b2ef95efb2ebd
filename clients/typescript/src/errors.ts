import type { components } from './generated/schema.ts';

/** The contract's error codes; a code a newer server adds still arrives as a string. */
export type ErrorCode = components['schemas']['Error']['code'] | 'unexpected_response';

/**
 * Thrown for every error answer: `code`, `message` and `status` from the service's Error body,
 * `headers` as answered (`Retry-After`, the rate-limit headers, `WWW-Authenticate`, …).
 *
 * @example
 * try {
 *   await petstore.getPet(42);
 * } catch (e) {
 *   if (e instanceof PetstoreError && e.code === 'not_found') console.log('no pet 42');
 *   else throw e;
 * }
 */
export class PetstoreError extends Error {
  override readonly name = 'PetstoreError';
  readonly code: ErrorCode | (string & {});
  readonly status: number;
  readonly headers: Headers;

  constructor(body: { code: string; message: string; status: number }, headers: Headers) {
    super(body.message);
    this.code = body.code;
    this.status = body.status;
    this.headers = headers;
  }

  /**
   * The error an answer carries. A body that is not the service's Error (a proxy's 502 page)
   * gives `unexpected_response` with the HTTP status.
   */
  static async of(response: Response): Promise<PetstoreError> {
    const text = await response.text().catch(() => '');
    const body = errorBody(text);
    return new PetstoreError(
      body ?? {
        code: 'unexpected_response',
        message: `HTTP ${response.status} without the service's Error body.`,
        status: response.status,
      },
      response.headers,
    );
  }
}

function errorBody(text: string): { code: string; message: string; status: number } | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  if (!('code' in parsed && 'message' in parsed && 'status' in parsed)) return undefined;
  const { code, message, status } = parsed;
  return typeof code === 'string' && typeof message === 'string' && typeof status === 'number'
    ? { code, message, status }
    : undefined;
}
