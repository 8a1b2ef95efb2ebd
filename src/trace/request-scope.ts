/**
 * The request scope: what every step of one request shares without being handed it. The pipeline
 * opens it around the request (`inScope`); log lines, store calls and the gateway's child records
 * read it (`currentScope`). `AsyncLocalStorage` follows the request through every await, on Bun,
 * Deno and Node alike.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** One request's ids, and its record in the trace ring when requests are recorded. */
export interface RequestScope {
  /** The request's id (`X-Request-Id`). */
  readonly requestId: string;
  /** The trace the request belongs to (32 hex digits); undefined for a request not traced. */
  readonly traceId?: string;
  /** The request's span (16 hex digits). */
  readonly spanId?: string;
  /**
   * Whether the trace is exported (the W3C sampled flag): the sampler's decision at the start,
   * the final verdict once the request is answered (src/trace/spans.ts, `finishRequest`).
   */
  sampled?: boolean;
  /** The request's record in the trace ring (src/trace/ring.ts), and the record's generation. */
  readonly record?: number;
  readonly seq?: number;
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
  record?: number,
  seq?: number,
): RequestScope {
  return { requestId, traceId, spanId, sampled, record, seq };
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
 * Runs `work` in `scope`, the current scope through every await it makes; `work` is handed it too.
 *
 * @example
 * inScope({ requestId: 'r1' }, () => log.info('seen')) // the line carries "requestId":"r1"
 */
export function inScope<T>(scope: RequestScope, work: (scope: RequestScope) => T): T {
  return storage.run(scope, work, scope);
}
