import type { Attributes } from '@opentelemetry/api';
import type { Context } from 'hono';
import { routePath } from 'hono/route';
import type { AppEnv } from '../../env.ts';
import { redactTokens } from '../../redact.ts';
import { inScope, type RequestScope, requestScope } from '../../trace/scope.ts';
import { beginRequest, finishRequest, type SpanStart, traceResponse } from '../../trace/spans.ts';
import { pathOf } from './uri-limit.ts';

export interface RequestTraceOptions {
  /** The client's address as trusted (`client.address`). */
  clientAddress: (c: Context<AppEnv>) => string;
  /** Whether the caller holds a valid key: only then may its sampled flag force a trace. */
  vouched: (c: Context<AppEnv>) => boolean;
}

/**
 * The request's trace as three plain steps for `exchange`: `run` opens the request scope with
 * its ids and server span (named and attributed by OpenTelemetry's HTTP conventions), `header`
 * gives the `traceresponse` to answer with, `finish` ends the span with the answer. Never the
 * query, a header's value or a token: the path is recorded with anything token-shaped in it
 * replaced (`redactTokens`).
 *
 * @example
 * const tracing = requestTrace({ clientAddress, vouched })
 * tracing.run(c, requestId, true, async (scope) => { …; tracing.finish(c, scope, res.status); return res })
 */
export function requestTrace({ clientAddress, vouched }: RequestTraceOptions) {
  const start: SpanStart<Context<AppEnv>> = {
    tracestate: (c) => c.req.header('tracestate'),
    vouched,
    name: (c) => {
      const route = routeOf(c);
      return route ? `${c.req.method} ${route}` : c.req.method;
    },
    attributes: (c) => startAttributes(c, clientAddress),
  };
  return {
    /** Runs `work` in the request's scope, handing it the scope too. */
    run<T>(c: Context<AppEnv>, requestId: string, traced: boolean, work: (scope: RequestScope) => T): T {
      const scope = traced ? beginRequest(requestId, c.req.header('traceparent'), start, c) : requestScope(requestId);
      return inScope(scope, work);
    },
    /** The `traceresponse` to answer with; undefined for a request that is not traced. */
    header: traceResponse,
    finish(c: Context<AppEnv>, scope: RequestScope, status: number): void {
      if (scope.span) finishRequest(scope, status, endAttributes(c));
    },
  };
}

/** The route Hono matched (the operations table's path under its prefix), or undefined for none. */
function routeOf(c: Context<AppEnv>): string | undefined {
  const route = routePath(c);
  return route === '' || route.includes('*') ? undefined : route;
}

function startAttributes(c: Context<AppEnv>, clientAddress: RequestTraceOptions['clientAddress']): Attributes {
  const url = c.req.url;
  const route = routeOf(c);
  return {
    'http.request.method': c.req.method,
    'url.scheme': url.slice(0, url.indexOf(':')),
    'url.path': redactTokens(pathOf(url)),
    ...(route ? { 'http.route': route } : {}),
    'client.address': clientAddress(c),
  };
}

/** What the gateway made of the caller: its consumer's name, and `admitted` or the refusal's code. */
function endAttributes(c: Context<AppEnv>): Attributes {
  const caller = c.get('caller');
  const operation = c.get('operation');
  return {
    ...(operation ? { 'petstore.operation': operation } : {}),
    ...(caller?.kind === 'consumer' ? { 'petstore.consumer.name': caller.consumer.name } : {}),
    ...(caller ? { 'petstore.gateway.outcome': c.get('refusal') ?? 'admitted' } : {}),
  };
}
