/**
 * The request scope: what every step of one request shares without being handed it. The
 * pipeline opens it around the request (`inScope`); log lines, store calls and the gateway's
 * spans read it (`currentScope`). `AsyncLocalStorage` follows the request through every await,
 * on Bun, Deno and Node alike.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Context, Span } from '@opentelemetry/api';

/** One request's ids, and its span when one is recorded. */
export interface RequestScope {
  /** The request's id (`X-Request-Id`). */
  readonly requestId: string;
  /** The trace the request belongs to (32 hex digits); undefined for a request that is not traced. */
  readonly traceId?: string;
  /** The span the work under way belongs to (16 hex digits): the request's, or a child's. */
  readonly spanId?: string;
  /** Whether the trace is exported (the W3C sampled flag). */
  readonly sampled?: boolean;
  /** The recording span the work under way belongs to, with its context: the parent of the next child. */
  readonly span?: Span;
  readonly context?: Context;
}

/**
 * A request scope, every field present (undefined when absent): the steps that read a scope see
 * one shape of object whether the request is traced, sampled or neither, so a small share of
 * sampled requests does not make every reader handle several shapes.
 *
 * @example
 * requestScope('r1') // not traced: its lines carry requestId only
 */
export function requestScope(
  requestId: string,
  traceId?: string,
  spanId?: string,
  sampled?: boolean,
  span?: Span,
  context?: Context,
): RequestScope {
  return { requestId, traceId, spanId, sampled, span, context };
}

const storage = new AsyncLocalStorage<RequestScope>();

/**
 * The scope of the request being served, or undefined outside one (start-up, the webhook worker).
 *
 * @example
 * currentScope()?.requestId // 'b7c1…'
 */
export function currentScope(): RequestScope | undefined {
  return storage.getStore();
}

/**
 * Runs `work` with `scope` as the current scope, through every await it makes; `work` is handed it too.
 *
 * @example
 * inScope({ requestId: 'r1' }, () => log.info('seen')) // the line carries "requestId":"r1"
 */
export function inScope<T>(scope: RequestScope, work: (scope: RequestScope) => T): T {
  return storage.run(scope, work, scope);
}
