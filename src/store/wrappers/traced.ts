/**
 * Each store call as a child of the request's trace record, when requests are recorded: a wrapper
 * derived from the method lists (`STORE_CALLS`, `OUTBOX_CALLS`) like the others, named
 * `<call> <collection>` and attributed by OpenTelemetry's database conventions. A call made
 * outside a traced request (the webhook worker's) has none.
 */
import type { Attributes } from '@opentelemetry/api';
import { type ChildOptions, childSpan } from '../../trace/spans.ts';
import { type CallSpec, type CallWrap, type CreateOnceResult, OUTBOX_CALLS, STORE_CALLS } from '../store.ts';

/** The database, as a span's `db.system.name` says it; none for the store in memory. */
export type DbSystem = 'sqlite' | 'postgresql';

interface CallSpan {
  readonly name: string;
  readonly attributes: Attributes;
  readonly options?: ChildOptions<unknown>;
}

/** The idempotency look-up's answer, on the span of `createOnce` (the look-up and the insert are one transaction). */
const IDEMPOTENCY: ChildOptions<unknown> = {
  outcome: { key: 'petstore.idempotency.outcome', of: (result) => (result as CreateOnceResult).outcome },
};

/**
 * `wrap` with each call in its child record: a time-out or an unreachable database (the call's
 * rejection) sets its status to Error.
 *
 * @example
 * const call = tracedCalls((run, { doing, write }) => bound.call(doing, write, run), 'sqlite')
 */
export function tracedCalls(wrap: CallWrap, system?: DbSystem): CallWrap {
  const spans = new Map<CallSpec, CallSpan>();
  for (const [calls, collection] of [
    [STORE_CALLS, 'pets'],
    [OUTBOX_CALLS, 'webhook_outbox'],
  ] as const) {
    for (const [name, spec] of Object.entries(calls) as [string, CallSpec][]) {
      // The order calls (counted as `order`) read and write the orders table.
      const table = spec.counted === 'order' ? 'orders' : collection;
      spans.set(spec, {
        name: `${name} ${table}`,
        attributes: {
          ...(system ? { 'db.system.name': system } : {}),
          'db.operation.name': name,
          'db.collection.name': table,
        },
        ...(name === 'createOnce' ? { options: IDEMPOTENCY } : {}),
      });
    }
  }
  return (run, spec) => {
    const span = spans.get(spec);
    return span ? childSpan(span.name, span.attributes, () => wrap(run, spec), span.options) : wrap(run, spec);
  };
}
