// One delivery attempt: the body signed per the Standard Webhooks specification by the
// `standardwebhooks` package (`webhook-id`, `webhook-timestamp`, `webhook-signature:
// v1,<base64 HMAC-SHA256>`), POSTed with a timeout. Any 2xx counts as delivered; a redirect is not
// followed (only the configured URL is used). The connection goes to an address the attempt
// resolved and checked itself (`targetProblem`), through the `lookup` option of `node:http`,
// which Bun, Deno and Node honour, so a second DNS resolution cannot point it elsewhere.
import type { LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { AllowedRanges, targetProblem } from '../keys/webhook-targets.ts';
import { peerText } from '../redact.ts';
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
  /**
   * The delivery's span as W3C Trace Context, sent as `traceparent` so the receiver's trace
   * continues it.
   */
  readonly traceparent?: string;
}

/**
 * Delivered, or why not (for the outbox's `last_error`; never the secret); the receiver's status
 * when it answered.
 */
export type AttemptResult =
  | { readonly ok: true; readonly status?: number }
  | { readonly ok: false; readonly error: string; readonly status?: number };

/**
 * Every address a host name resolves to (the system resolver's answer, as `dns.lookup` gives it).
 */
export type Resolve = (host: string) => Promise<readonly { address: string; family: number }[]>;

/** Where an attempt may connect, and how names are resolved (a seam for tests). */
export interface Targets {
  /** Private ranges the operator allows (`--webhook-allow-cidr`). */
  readonly allowed: AllowedRanges;
  readonly resolve: Resolve;
}

/** No private range allowed; the system resolver. */
export const PUBLIC_TARGETS: Targets = {
  allowed: new AllowedRanges([]),
  resolve: async (host) => (await import('node:dns/promises')).lookup(host, { all: true, verbatim: true }),
};

/** A refused target address: the attempt fails with this message and nothing is sent. */
class RefusedTarget extends Error {
  override name = 'RefusedTarget';
}

/**
 * Sends one signed attempt; resolves to its result, a failed attempt included.
 *
 * @example
 * await send({ id: 'msg_1', payload: '{}', url: 'https://hooks.example/q', secret: 'whsec_…', at: Date.now() })
 */
export async function send(
  attempt: Attempt,
  timeoutMs = SEND_TIMEOUT_MS,
  stop?: AbortSignal,
  targets: Targets = PUBLIC_TARGETS,
): Promise<AttemptResult> {
  const signature = new Webhook(attempt.secret).sign(attempt.id, new Date(attempt.at), attempt.payload);
  const url = new URL(attempt.url);
  const host = url.hostname;
  // An address in the URL is connected to without a lookup: checked here instead.
  const literal = host.startsWith('[') ? host.slice(1, -1) : host;
  const refused = /^[0-9.]+$|:/.test(literal) ? targetProblem(host, literal, targets.allowed) : undefined;
  if (refused) return { ok: false, error: refused };
  const signal = stop ? AbortSignal.any([AbortSignal.timeout(timeoutMs), stop]) : AbortSignal.timeout(timeoutMs);
  try {
    const status = await post(url, attempt.payload, signal, checkedLookup(host, targets), {
      'Content-Type': 'application/json',
      'Content-Length': String(Buffer.byteLength(attempt.payload)),
      'User-Agent': `petstore/${VERSION}`,
      'webhook-id': attempt.id,
      'webhook-timestamp': String(Math.floor(attempt.at / 1_000)),
      'webhook-signature': signature,
      ...(attempt.traceparent ? { traceparent: attempt.traceparent } : {}),
    });
    return status >= 200 && status < 300 ? { ok: true, status } : { ok: false, error: `HTTP ${status}`, status };
  } catch (err) {
    if (err instanceof RefusedTarget) return { ok: false, error: err.message };
    if (stop?.aborted) return { ok: false, error: 'the server stopped before the answer' };
    if (signal.aborted) return { ok: false, error: `no answer within ${timeoutMs} ms` };
    return { ok: false, error: peerText(err) };
  }
}

/** A `lookup` that resolves `host` once and fails unless every address is allowed. */
function checkedLookup(host: string, { resolve, allowed }: Targets): LookupFunction {
  return (_name, options, callback) => {
    resolve(host).then(
      (found) => {
        const problem = found.length === 0 ? `${host} resolves to no address` : undefined;
        const refused = problem ?? found.map((a) => targetProblem(host, a.address, allowed)).find(Boolean);
        if (refused) return callback(new RefusedTarget(refused), '', 0);
        const usable = found.filter((a) => !options.family || a.family === options.family);
        if (options.all)
          return callback(
            null,
            usable.map((a) => ({ address: a.address, family: a.family })),
          );
        const first = usable[0] ?? found[0];
        return callback(null, first?.address ?? '', first?.family ?? 4);
      },
      (err: Error) => callback(err as NodeJS.ErrnoException, '', 0),
    );
  };
}

/**
 * POSTs `body` to `url` through `lookup`; resolves to the answer's status once its body is read.
 */
async function post(
  url: URL,
  body: string,
  signal: AbortSignal,
  lookup: LookupFunction,
  headers: Record<string, string>,
): Promise<number> {
  // Loaded at the first delivery: an instance without webhooks never evaluates the HTTP client.
  const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers, lookup, signal }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
