import type { Context, ErrorHandler } from 'hono';
import type { AppEnv } from '../env.ts';

/**
 * Answers an error thrown by a step of a folded layer (`exchange`, `apiPass`) through the app's
 * one error handler, as Hono's own dispatch does for a layer that throws (`c.error`, then the
 * handler's response as `c.res`), so the layer's own later steps (the log line, CORS's `Vary`)
 * still run. Anything not an `Error` goes on up, as in Hono.
 *
 * @example
 * try { step(c) } catch (err) { await answerError(c, err, onError) }
 */
export async function answerError(c: Context<AppEnv>, err: unknown, onError: ErrorHandler<AppEnv>): Promise<void> {
  if (!(err instanceof Error)) throw err;
  c.error = err;
  c.res = await onError(err, c);
}
