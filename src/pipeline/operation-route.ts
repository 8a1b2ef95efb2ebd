// What serving one operation needs, made and checked once per operation, when its route is added
// (`routeOf`): the pipeline's steps read it on every request of the operation.
import type { Deprecation, Operation } from '../api/operation-types.ts';
import { inputReader } from '../api/validate.ts';
import type { AnswerHeaders } from '../core/reply.ts';
import { operationIndex } from '../metrics/labels.ts';
import type { DataStore } from '../store/store.ts';
import type { ReplyMemo } from './memo.ts';

/** What an operation that waits for the due orders' expiry asks of the store: to start it. */
export type DueOrderExpiry = Pick<DataStore, 'startDueOrderExpiry'>;

/** What serving one operation needs, made and checked once, when its route is added. */
export interface OperationRoute<D> {
  readonly op: Operation<D>;
  /**
   * A deprecated operation's headers, made once from its `Deprecation` (`op.deprecated`) and the
   * same on every answer of it; undefined for the others.
   */
  readonly deprecationHeaders: AnswerHeaders | undefined;
  readonly readInput: ReturnType<typeof inputReader<D>>;
  /** Its index among the metrics' operations. */
  readonly metricsIndex: number;
  /**
   * The memo when this operation is memoised, else undefined, so step 6.2 (`memoOrRun`) need not
   * check `op.memo`.
   */
  readonly replyMemo: ReplyMemo | undefined;
  /**
   * The store's expiry of due orders when this operation waits for it
   * (`op.waitsForDueOrderExpiry`), else undefined, so step 6.1 (`afterDueOrderExpiry`) need not
   * check the flag.
   */
  readonly dueOrderExpiry: DueOrderExpiry | undefined;
}

/**
 * What `routeOf` takes from a table pipeline's parts (`TableParts`, src/pipeline/pipeline.ts): the
 * memo and the due orders' expiry, both set when the pipeline has the store. A route keeps each
 * only when its operation uses it.
 */
type StoreParts = Pick<OperationRoute<unknown>, 'replyMemo' | 'dueOrderExpiry'>;

/**
 * Returns what serving `op` needs. Call it once, when the route is added: it throws a `TypeError`
 * at start-up for an operation the pipeline cannot serve as the table says.
 */
export function routeOf<D>({ replyMemo, dueOrderExpiry }: StoreParts, op: Operation<D>): OperationRoute<D> {
  // An answer that shows the quota belongs to one caller, so it must not be memoised for others.
  if (op.memo && op.readsQuota) throw new TypeError(`pipeline: ${op.id} reads the quota and cannot be memoised`);
  // A memoised answer is found by its path and query alone, so its input must come from nothing
  // else. The caller's owner is in every input: a memoised handler must not read it, which no
  // check here can see, so the table's memoised handlers are pets' reads alone.
  if (op.memo && (op.headers || op.body)) {
    throw new TypeError(`pipeline: ${op.id} reads headers or a body and cannot be memoised by its path and query`);
  }
  if (op.memo && op.audited) throw new TypeError(`pipeline: ${op.id} is audited per caller and cannot be memoised`);
  if (op.memo && !replyMemo) throw new TypeError(`pipeline: ${op.id} is memoised, but the pipeline has no store`);
  if (op.waitsForDueOrderExpiry && !dueOrderExpiry) {
    throw new TypeError(`pipeline: ${op.id} waits for the due orders' expiry, but the pipeline has no store`);
  }
  return {
    op,
    deprecationHeaders: op.deprecated ? deprecationHeaders(op.deprecated) : undefined,
    readInput: inputReader(op),
    metricsIndex: operationIndex(op.id),
    replyMemo: op.memo ? replyMemo : undefined,
    dueOrderExpiry: op.waitsForDueOrderExpiry ? dueOrderExpiry : undefined,
  };
}

/**
 * Returns the RFC 9745 `Deprecation`, RFC 8594 `Sunset` and successor `Link` headers of a
 * deprecated operation.
 */
function deprecationHeaders({ since, sunset, successor }: Deprecation): AnswerHeaders {
  return {
    Deprecation: `@${Date.parse(since) / 1000}`,
    Sunset: new Date(sunset).toUTCString(),
    Link: `<${successor}>; rel="successor-version"`,
  };
}
