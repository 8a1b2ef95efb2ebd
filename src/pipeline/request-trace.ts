// Step 1's trace: `requestTrace()` opens the request state with its trace ids, gives the
// `traceresponse` header, and ends the request's trace record with the answer
// (src/trace/spans.ts). A record kept for export becomes the server span when it is exported.
import type { Context } from 'hono';
import { routePath } from 'hono/route';
import type { AppEnv } from '../app-env.ts';
import { inRequest, type RequestState, requestState } from '../trace/request-state.ts';
import { beginRequest, finishRequest, type SpanDetails, type SpanStart, traceResponse } from '../trace/spans.ts';

export interface RequestTraceOptions {
  /** The client's address as trusted (`client.address`). */
  clientAddress: (c: Context<AppEnv>) => string;
  /** Whether the caller has a valid key: only then may its `traceparent` force a trace. */
  hasValidKey: (c: Context<AppEnv>) => boolean;
}

/**
 * Makes the request's trace, as three calls for step 1: `run` opens the request state with its
 * trace ids, `header` gives the `traceresponse`, and `finish` ends the record with the answer. The
 * export never carries the query, a header's value or a token.
 *
 * @example
 * const tracing = requestTrace({ clientAddress, hasValidKey })
 * tracing.run(c, requestId, true, async (state) => {
 *   …
 *   tracing.finish(c, state, res.status)
 *   return res
 * })
 */
export function requestTrace({ clientAddress, hasValidKey }: RequestTraceOptions) {
  const start: SpanStart<Context<AppEnv>> = { tracestate: (c) => c.req.header('tracestate'), hasValidKey };
  const details: SpanDetails<Context<AppEnv>> = {
    method: (c) => c.req.method,
    url: (c) => c.req.url,
    route: matchedRoute,
    operation: (c) => c.get('operation'),
    consumer: (c) => consumerCaller(c)?.consumer.name,
    // The gateway's outcome, `admitted` or the refusal's code; undefined if it did not run.
    outcome: (c) => (c.get('caller') ? (c.get('refusal') ?? 'admitted') : undefined),
    client: clientAddress,
  };
  return {
    /** Runs `work` in the request's state, handing it the state too. */
    run<T>(c: Context<AppEnv>, requestId: string, traced: boolean, work: (state: RequestState) => T): T {
      const state = traced ? beginRequest(requestId, c.req.header('traceparent'), start, c) : requestState(requestId);
      return inRequest(state, work);
    },
    /** The `traceresponse` to answer with; undefined for a request that is not traced. */
    header: traceResponse,
    /**
     * Ends the request's trace record with the answer's status and returns whether the trace is
     * exported. The span details are read only for a record that is kept.
     */
    finish(c: Context<AppEnv>, state: RequestState, status: number): boolean {
      if (state.record === undefined) return state.sampled === true;
      return finishRequest(state, status, consumerCaller(c) !== undefined, details, c);
    },
  };
}

/** Returns the caller when it has a valid key, else undefined. */
function consumerCaller(c: Context<AppEnv>) {
  const caller = c.get('caller');
  return caller?.kind === 'consumer' ? caller : undefined;
}

/** Returns the route Hono matched (the operations table's path under its prefix), or undefined. */
function matchedRoute(c: Context<AppEnv>): string | undefined {
  const route = routePath(c);
  return route === '' || route.includes('*') ? undefined : route;
}
