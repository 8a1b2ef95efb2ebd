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
}

/** Delivered, or why not (for the outbox's `last_error`; never the secret). */
export type AttemptResult = { readonly ok: true } | { readonly ok: false; readonly error: string };

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
      },
    });
    await res.body?.cancel().catch(() => {});
    return res.status >= 200 && res.status < 300 ? { ok: true } : { ok: false, error: `HTTP ${res.status}` };
  } catch (err) {
    if (stop?.aborted) return { ok: false, error: 'the server stopped before the answer' };
    const name = err instanceof Error ? err.name : '';
    if (name === 'TimeoutError' || name === 'AbortError')
      return { ok: false, error: `no answer within ${timeoutMs} ms` };
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
}
