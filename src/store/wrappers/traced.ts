// Each store call as a child of the request's trace record, when requests are recorded: a wrapper
// derived from the method lists (`STORE_CALLS`, `OUTBOX_CALLS`) like the others, named
// `<call> <table>` (`ping` alone) and attributed by OpenTelemetry's database conventions. A call
// made outside a traced request (the delivery loop's, `DeliveryLoop`) has none.
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

/**
 * The idempotency look-up's answer, on the span of `createOnce` (the look-up and the insert are one
 * transaction).
 */
const IDEMPOTENCY: ChildOptions<unknown> = {
  outcome: { key: 'petstore.idempotency.outcome', of: (result) => (result as CreateOnceResult).outcome },
};

/**
 * Returns the table a call is about, its span's `db.collection.name`: `orders` for the order calls,
 * `pets` for the other store calls. That is the primary table where the same transaction writes
 * another too (`createOnce` its `idempotency_keys`, an order its pet). `ping` reads no table, so
 * its span has no collection and is named by the call alone, as the conventions name such a span.
 */
function tableOf(spec: CallSpec, collection: string): string | undefined {
  if (spec.counted === 'ping') return undefined;
  return spec.counted === 'order' ? 'orders' : collection;
}

/**
 * Returns `wrap` with each call in its child record: a time-out or an unreachable database (the
 * call's rejection) sets its status to Error.
 *
 * @example
 * const call = tracedCalls((run, { doing, mayWrite }) => bound.call(doing, mayWrite, run), 'sqlite')
 */
export function tracedCalls(wrap: CallWrap, system?: DbSystem): CallWrap {
  const spans = new Map<CallSpec, CallSpan>();
  for (const [calls, collection] of [
    [STORE_CALLS, 'pets'],
    [OUTBOX_CALLS, 'webhook_outbox'],
  ] as const) {
    for (const [method, spec] of Object.entries(calls) as [string, CallSpec][]) {
      const name = spec.traced ?? method;
      const table = tableOf(spec, collection);
      spans.set(spec, {
        name: table ? `${name} ${table}` : name,
        attributes: {
          ...(system ? { 'db.system.name': system } : {}),
          'db.operation.name': name,
          ...(table ? { 'db.collection.name': table } : {}),
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
