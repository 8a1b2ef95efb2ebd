// The request state: what every step of one request can read without it being passed in. The
// pipeline runs the request inside it (`inRequest`); log lines, store calls and the gateway's child
// spans read it (`currentRequest`). `AsyncLocalStorage` carries it across every await, on Bun, Deno
// and Node alike.
import { AsyncLocalStorage } from 'node:async_hooks';

/** One request's ids, and its record in the trace ring when requests are recorded. */
export interface RequestState {
  /** The request's id (`X-Request-Id`). */
  readonly requestId: string;
  /** The trace the request belongs to (32 hex digits); undefined for a request not traced. */
  readonly traceId?: string;
  /** The request's span (16 hex digits). */
  readonly spanId?: string;
  /**
   * Whether the trace is exported (the W3C sampled flag): the sampler's decision at the start, the
   * final export decision once the request is answered (src/trace/spans.ts, `finishRequest`). It
   * changes there because `traceResponse()` then writes the final flag into `traceresponse`.
   */
  sampled?: boolean;
  /** The request's record in the trace ring (src/trace/ring.ts), and the record's generation. */
  readonly record?: number;
  readonly seq?: number;
}

/**
 * A request state with every field present (undefined when absent), so readers always see one
 * object shape whether the request is traced, sampled or neither, and the engine's property
 * access stays monomorphic.
 *
 * @example
 * requestState('r1') // not traced: its lines carry requestId only
 */
export function requestState(
  requestId: string,
  traceId?: string,
  spanId?: string,
  sampled?: boolean,
  record?: number,
  seq?: number,
): RequestState {
  return { requestId, traceId, spanId, sampled, record, seq };
}

const storage = new AsyncLocalStorage<RequestState>();

/**
 * The state of the request being served, or undefined outside one: at start-up, and in the delivery
 * loop (`DeliveryLoop`).
 *
 * @example
 * currentRequest()?.requestId // 'b7c1…'
 */
export function currentRequest(): RequestState | undefined {
  return storage.getStore();
}

/**
 * Runs `work` with `state` as the current request state through every await; `work` also gets
 * `state` as its argument.
 *
 * @example
 * inRequest(requestState('r1'), () => log.info('seen')) // the line carries "requestId":"r1"
 */
export function inRequest<T>(state: RequestState, work: (state: RequestState) => T): T {
  return storage.run(state, work, state);
}
