/**
 * One delivery attempt: the body signed as the Standard Webhooks specification says, by the
 * maintained `standardwebhooks` package (`webhook-id`, `webhook-timestamp`, `webhook-signature:
 * v1,<base64 HMAC-SHA256>`), POSTed with a timeout. Any 2xx is a delivery; a redirect is not
 * followed (the receiver's URL is the configured one, nothing else).
 */
import { Webhook } from 'standardwebhooks';
import { VERSION } from '../version.ts';

/** How long a receiver has to answer. */
export const SEND_TIMEOUT_MS = 5_000;

export interface Attempt {
  readonly id: string;
  readonly payload: string;
  readonly url: string;
  readonly secret: string;
  /** When it is signed (epoch ms): `webhook-timestamp`. */
  readonly at: number;
  /** The delivery's span as W3C Trace Context, sent as `traceparent` so the receiver's trace continues it. */
  readonly traceparent?: string;
}

/** Delivered, or why not (for the outbox's `last_error`; never the secret); the receiver's status when it answered. */
export type AttemptResult =
  | { readonly ok: true; readonly status?: number }
  | { readonly ok: false; readonly error: string; readonly status?: number };

/**
 * Sends one signed attempt.
 *
 * @example
 * await send({ id: 'msg_1', payload: '{}', url: 'https://hooks.example/q', secret: 'whsec_…', at: Date.now() })
 */
export async function send(attempt: Attempt, timeoutMs = SEND_TIMEOUT_MS, stop?: AbortSignal): Promise<AttemptResult> {
  const signature = new Webhook(attempt.secret).sign(attempt.id, new Date(attempt.at), attempt.payload);
  try {
    const res = await fetch(attempt.url, {
      method: 'POST',
      body: attempt.payload,
      redirect: 'manual',
      signal: stop ? AbortSignal.any([AbortSignal.timeout(timeoutMs), stop]) : AbortSignal.timeout(timeoutMs),
      headers: {
        'Content-Type': 'application/json',
        'User-Agent': `petstore/${VERSION}`,
        'webhook-id': attempt.id,
        'webhook-timestamp': String(Math.floor(attempt.at / 1_000)),
        'webhook-signature': signature,
        ...(attempt.traceparent ? { traceparent: attempt.traceparent } : {}),
      },
    });
    await res.body?.cancel().catch(() => {});
    const { status } = res;
    return status >= 200 && status < 300 ? { ok: true, status } : { ok: false, error: `HTTP ${status}`, status };
  } catch (err) {
    if (stop?.aborted) return { ok: false, error: 'the server stopped before the answer' };
    const name = err instanceof Error ? err.name : '';
    if (name === 'TimeoutError' || name === 'AbortError')
      return { ok: false, error: `no answer within ${timeoutMs} ms` };
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
}
