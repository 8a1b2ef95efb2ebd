// The shape of a table's operation (`OperationSpec`, `defineOperation()`), used by the API's and
// the admin API's tables, with `Input` (a handler's input at step 7), `ApiDeps` and `Deprecation`.
import type * as v from 'valibot';
import type { Clock } from '../core/clock.ts';
import type { KeyScope } from '../core/key-scopes.ts';
import type { RateLimitStatus } from '../core/rate-limit-status.ts';
import type { Reply } from '../core/reply.ts';
import type { DataStore } from '../store/store.ts';

/** The methods the tables' operations use; HEAD is served by every GET. */
export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** A deprecated operation's RFC 9745 `Deprecation`, RFC 8594 `Sunset`, and its successor. */
export interface Deprecation {
  /** When it became deprecated, an RFC 3339 date-time. */
  readonly since: string;
  /** When it is removed, an RFC 3339 date-time. */
  readonly sunset: string;
  /** What replaces it, relative to the operation's own URL (so a proxy's prefix is kept). */
  readonly successor: string;
}

/**
 * What an operation promises, as the contract's `x-stability-level` and the docs' versioning
 * section say: `stable` changes only compatibly within `/v1`; `beta` may change incompatibly
 * with 90 days' notice in the changelog and the contract; `experimental` may change or go at
 * any release and is served only by an instance started with `--experimental`.
 */
export type Stability = 'stable' | 'beta' | 'experimental';

/** What every handler works with, given once at start. */
export interface ApiDeps {
  /**
   * The store, wrapped (the shared change count, error counts, time bound, trace).
   * `openServerStore()` in src/serve/resources.ts lists the wrappers, from the outside in.
   */
  readonly store: DataStore;
  readonly clock: Clock;
  /** How long a placed order holds its pet (`--order-hold`), in ms. */
  readonly orderHoldMs: number;
}

/**
 * What the pipeline passes a handler: the validated input, and whose request it is. `inputReader`
 * (src/api/validate.ts) always sets every field, to `undefined` when the request has none, so
 * every input is an object literal of the same shape, built without a spread.
 */
export interface Input<Q = unknown, P = unknown, H = unknown, B = unknown> {
  readonly query: Q;
  readonly params: P;
  readonly headers: H;
  readonly body: B;
  /**
   * The caller, as the owner of its orders and `Idempotency-Key`s: its consumer's id and name
   * (`con_…:acme`, made by `ownerOf` in src/keys/records.ts). Handlers only pass it to the store,
   * which keys orders and `Idempotency-Key`s by it and reads the name back for an order's webhook
   * (`consumerOf` in src/store/order-rows.ts). Handlers know nothing else of keys or limits.
   */
  readonly owner: string;
  /**
   * The caller's quota, read without spending it: set only for an operation with `readsQuota`, and
   * `undefined` (present, not omitted) for any other.
   */
  readonly quota: RateLimitStatus | undefined;
  /**
   * The calling consumer and key id, for an `audited` operation (the admin API's audit trail);
   * `undefined` for any other.
   */
  readonly keyHolder: KeyHolder | undefined;
}

/** A key as logs and the audit trail name it: never its token or hash. */
export interface KeyHolder {
  readonly consumer: string;
  readonly id: string;
}

type Schema<T> = v.GenericSchema<unknown, T>;

/**
 * One operation of the API's table (src/api/operations.ts) or the admin API's
 * (src/admin/admin-operations.ts): everything the routes, the scope check, the metrics and the
 * contract test need to know about it.
 */
export interface OperationSpec<Q, P, H, B, D = ApiDeps> {
  /** The contract's `operationId`: the metrics label, the route's name, what `costs` name. */
  readonly id: string;
  readonly method: Method;
  /** Hono's path template under the API prefix, e.g. `/pets/:petId`. */
  readonly path: string;
  /** The scope a key needs; if absent, any valid key may call it (contract: `x-scopes: []`). */
  readonly scope?: KeyScope;
  /**
   * The operation reads the caller's quota instead of spending it: it costs 0 whatever the plan's
   * `costs` say, is answered during a ban (which it reports), and its handler gets `Input.quota`.
   */
  readonly readsQuota?: boolean;
  readonly deprecated?: Deprecation;
  /** What it promises (the contract's `x-stability-level`); `stable` if absent (the admin API). */
  readonly stability?: Stability;
  readonly query?: Schema<Q>;
  readonly params?: Schema<P>;
  /** Request headers, by lower-cased name. */
  readonly headers?: Schema<H>;
  /**
   * The JSON body; an operation with one reads only `application/json`, unless `bodyTypes` says
   * otherwise.
   */
  readonly body?: Schema<B>;
  /**
   * The media types of JSON the body may be sent as, the preferred first: `updatePet` reads a
   * JSON Merge Patch (`application/merge-patch+json`) and plain `application/json`.
   */
  readonly bodyTypes?: readonly string[];
  /**
   * Whether the pipeline tags a successful answer with a weak ETag made from its body and its
   * `Link` header (a page's next link is part of what the client sees), so a repeated request
   * with `If-None-Match` is answered 304. False for an operation whose handler tags its answer
   * itself (a pet's strong ETag, from its version) and for one whose answer is never tagged.
   */
  readonly weakEtag: boolean;
  /**
   * Whether a 200 is memoised by its path and query: true only where the answer depends on nothing
   * else. The memo's rule is `ReplyMemo`'s docstring (src/pipeline/memo.ts).
   */
  readonly memo: boolean;
  /**
   * Whether step 6.1 waits for the store's expiry of due orders under way before the handler runs
   * (the reads of pets, which show a pet's status). Who expires due orders, and when: the table in
   * step 6 of ARCHITECTURE.md's walk
   * ([the request's steps](../../ARCHITECTURE.md#the-request-in-the-pipelines-eight-steps)).
   */
  readonly waitsForDueOrderExpiry: boolean;
  /**
   * Whether the handler is told which key asks (`Input.keyHolder`): the admin API's changes are
   * audited by it.
   */
  readonly audited?: boolean;
  /** The words a 400 uses for what each field accepts; the API's (`MUST_BE`) when absent. */
  readonly mustBe?: Readonly<Record<string, string>>;
  handler(input: Input<Q, P, H, B>, deps: D): Promise<Reply>;
}

/** An entry of a table: an operation with its input types erased; `D` is its handlers' deps. */
export type Operation<D = ApiDeps> = OperationSpec<unknown, unknown, unknown, unknown, D>;

/**
 * An operation that needs nothing from the pipeline's store: it is never memoised and never waits
 * for due orders to expire. A pipeline without a store (the admin API's) serves only these.
 */
export type StorelessOperation<D> = Operation<D> & { readonly memo: false; readonly waitsForDueOrderExpiry: false };

/**
 * Types one table entry, inferring the handler's input from the entry's schemas. `M` and `R` keep
 * `memo` and `waitsForDueOrderExpiry` as the literals written (`false`, not `boolean`), so that
 * the admin API's entries type-check as `StorelessOperation`s; `I` keeps `id` as written, so that
 * the API's entries type-check against `OPERATION_IDS` (src/core/operation-ids.ts).
 *
 * @example
 * // weakEtag: false, as the handler tags the pet with its own strong ETag
 * defineOperation({ id: 'getPet', method: 'GET', path: '/pets/:petId', scope: 'pets:read',
 *   params: PetParams, weakEtag: false, memo: true, waitsForDueOrderExpiry: true,
 *   handler: async ({ params }) => ... })
 */
export function defineOperation<
  Q = undefined,
  P = undefined,
  H = undefined,
  B = undefined,
  D = ApiDeps,
  M extends boolean = boolean,
  R extends boolean = boolean,
  I extends string = string,
>(
  spec: OperationSpec<Q, P, H, B, D> & { readonly id: I; readonly memo: M; readonly waitsForDueOrderExpiry: R },
): Operation<D> & { readonly id: I; readonly memo: M; readonly waitsForDueOrderExpiry: R } {
  return spec as unknown as Operation<D> & { readonly id: I; readonly memo: M; readonly waitsForDueOrderExpiry: R };
}
