// Traces each store call as a child span of the request, when requests are recorded. Like the
// other wrappers it is built from the method lists (`STORE_CALLS`, `OUTBOX_CALLS`); spans are named
// `<call> <table>` (`ping` alone), with OpenTelemetry's database attributes. A call made outside a
// traced request (such as `DeliveryLoop`'s) gets no span.
import type { Attributes } from '@opentelemetry/api';
import { type ChildOptions, childSpan } from '../../trace/spans.ts';
import { type CallSpec, type CallWrap, type CreateOnceResult, OUTBOX_CALLS, STORE_CALLS } from '../store.ts';

/** The database, as a span's `db.system.name`; none for the store in memory. */
export type DbSystem = 'sqlite' | 'postgresql';

interface CallSpan {
  readonly name: string;
  readonly attributes: Attributes;
  readonly options?: ChildOptions<unknown>;
}

/**
 * Puts the idempotency look-up's outcome on the span of `createOnce`, since the look-up and the
 * insert are one transaction.
 */
const IDEMPOTENCY: ChildOptions<unknown> = {
  outcome: { key: 'petstore.idempotency.outcome', of: (result) => (result as CreateOnceResult).outcome },
};

/**
 * Returns the call's main table, its span's `db.collection.name`: `orders` for the order calls,
 * `collection` for the others, even when the transaction writes another table too (`createOnce`
 * its `idempotency_keys`, an order its pet). `ping` reads no table, so its span has no collection
 * and is named by the call alone, as the conventions say.
 */
function tableOf(spec: CallSpec, collection: string): string | undefined {
  if (spec.counted === 'ping') return undefined;
  return spec.counted === 'order' ? 'orders' : collection;
}

/**
 * Returns `wrap` with each call in a child span; a rejected call (a timeout, an unreachable
 * database) sets the span's status to Error.
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
