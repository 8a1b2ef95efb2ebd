import type { Context, ErrorHandler, MiddlewareHandler, Next } from 'hono';
import type { AppEnv } from '../env.ts';
import type { GatewayPass } from '../gateway/index.ts';
import { limitBody } from '../http/steps/body-limit.ts';
import { refuseBodyOnGet } from '../api/validate.ts';
import { answerError } from './answer-error.ts';
import { corsFor } from '../http/steps/cors.ts';

export interface ApiPassOptions {
  /** The gateway's pass (`gateway()`), called as a function, not mounted as a layer. */
  gateway: GatewayPass;
  /** Largest accepted request body. */
  maxBodyBytes: number;
  /** Origins whose pages may call the API (`--cors-origin`); none: no CORS at all. */
  corsOrigins?: readonly string[];
  /** The app's one error handler, for the refusals of the steps in this layer. */
  onError: ErrorHandler<AppEnv>;
}

/**
 * The one layer of `/v1/*` before the routes, its steps in this order:
 * 1. CORS, only when origins are configured: a preflight is answered here, before the gateway,
 *    so it needs no key and costs no quota; an allowed origin's answers, 401 and 429 included,
 *    get its headers (`corsFor`);
 * 2. the gateway: identify, in-flight, limiter, rate-limit headers, 401/429 (`gateway`, which
 *    returns its refusals; they are answered here through the same error handler as a throw);
 * 3. only for an admitted request, the body's size (413, Hono's `bodyLimit`, which is skipped
 *    when there is no body, as it would skip itself) and a body sent with GET (`refuseBodyOnGet`):
 *    after the gateway, so these refusals carry the rate-limit headers like any answer.
 *
 * @example
 * app.use('/v1/*', apiPass({ gateway: gateway(options), maxBodyBytes: 65536, onError }))
 */
export function apiPass({
  gateway,
  maxBodyBytes,
  corsOrigins = [],
  onError,
}: ApiPassOptions): MiddlewareHandler<AppEnv> {
  const limit = limitBody(maxBodyBytes);

  function admitted(c: Context<AppEnv>, next: Next): Promise<void> {
    if (!c.req.raw.body) {
      refuseBodyOnGet(c, maxBodyBytes);
      return next();
    }
    return limited(c, next);
  }

  async function limited(c: Context<AppEnv>, next: Next): Promise<void> {
    await limit(c, () => {
      refuseBodyOnGet(c, maxBodyBytes);
      return next();
    });
  }

  async function pass(c: Context<AppEnv>, next: Next): Promise<void> {
    try {
      const refused = await gateway(c, () => admitted(c, next));
      if (refused) await answerError(c, refused, onError);
    } catch (err) {
      await answerError(c, err, onError);
    }
  }

  if (corsOrigins.length === 0) return pass;
  const cors = corsFor(corsOrigins);
  return function apiPass(c, next) {
    return cors(c, () => pass(c, next));
  };
}
