// The store's interface, `DataStore`. It says what the handlers and the memo may ask of any
// backend (memory, SQLite, PostgreSQL), and what each write gives back.
import type { Closing, OrderStatus, StoredOrder } from '../core/order-records.ts';
import type { Inventory, NewPet, Pet, PetPatch, PetStatus, StoredPet } from '../core/pet-records.ts';
import type { IfMatch } from '../core/preconditions.ts';
import type { PetSet } from '../core/reply.ts';
import type { Outbox } from './outbox.ts';

/**
 * A snapshot of the store's counter of pet changes (`DataStore.changeCount`), which readers only
 * pass back to `readsUnchangedSince`. A backend returns a number; with `--workers` it is a pair of
 * counts (src/store/wrappers/shared-change-count.ts). Undefined means the store cannot tell what
 * changed (see `ReplyMemo` in src/pipeline/memo.ts). It is `unknown` so each backend can use its
 * own shape; a branded type would need a cast in every backend.
 *
 * The memo treats two `===` counts as "nothing changed", so a backend returns a number and the
 * shared count returns the same pair object until either count moves. Counts that are not `===`
 * go to `readsUnchangedSince`.
 */
export type ChangeCount = unknown;

/** One page request: pets with `id > after`, ascending, at most `limit`. */
export interface ListOptions {
  readonly limit: number;
  readonly status?: PetStatus;
  readonly after?: number;
}

/** A create the client may retry: it carries an `Idempotency-Key`. */
export interface IdempotentCreate {
  /**
   * The key's owner (e.g. `con_0123…:acme`), so two callers never share keys. The key is stored in
   * the owner's createPet key space (`idempotencyKeySpace`), the `scope` column of
   * `idempotency_keys`.
   */
  readonly owner: string;
  /** The `Idempotency-Key` header as sent. */
  readonly key: string;
  /** Digest of the request (`fingerprintOf`): the same key with another request is a conflict. */
  readonly fingerprint: string;
  /** The current epoch ms, from the app's clock; the key is kept `IDEMPOTENCY_TTL_MS` from now. */
  readonly now: number;
}

/** What `createOnce` did: stored a new pet, found the one the key made before, or refused. */
export type CreateOnceResult =
  | { readonly outcome: 'created'; readonly pet: StoredPet }
  | { readonly outcome: 'replayed'; readonly pet: StoredPet }
  | { readonly outcome: 'conflict' };

/**
 * What `update` did. Checked in this order, in the writing transaction: the pet exists, it meets
 * `If-Match` (else `stale`), the status change is allowed (`NEXT_STATUSES`), and no open order
 * holds the pet (`on_order`). A patch that changes nothing is `updated` with its version
 * unchanged. A refusal carries the pet the write saw; the API answers it with the Error body only.
 */
export type UpdateResult =
  | { readonly outcome: 'updated'; readonly pet: StoredPet }
  | { readonly outcome: 'not_found' }
  | { readonly outcome: 'stale'; readonly pet: StoredPet }
  /** `to`: the status the patch asked for, which `pet.status` may not become. */
  | { readonly outcome: 'invalid_transition'; readonly pet: StoredPet; readonly to: PetStatus }
  | { readonly outcome: 'on_order'; readonly pet: StoredPet };

/** What `remove` did, checked as `update` checks (an order holds the pet: `on_order`). */
export type RemoveResult =
  | { readonly outcome: 'removed' }
  | { readonly outcome: 'not_found' }
  | { readonly outcome: 'stale'; readonly pet: StoredPet }
  | { readonly outcome: 'on_order'; readonly pet: StoredPet };

/** One move for `adoptOwners`, from one owner to another (owners as in `PlaceOrder.owner`). */
export interface OwnerMove {
  readonly from: string;
  readonly to: string;
}

/**
 * An order to place for `owner` on `petId`, holding the pet `holdMs` from `now` (on PostgreSQL,
 * from the database's clock).
 */
export interface PlaceOrder {
  /** The order's owner (e.g. `con_0123…:acme`); only its owner ever sees it. */
  readonly owner: string;
  readonly petId: number;
  readonly holdMs: number;
  /** The current epoch ms, from the app's clock; PostgreSQL uses its own clock instead. */
  readonly now: number;
  /**
   * The `Idempotency-Key`: a retry with it for the same pet answers the order it placed, in its
   * current status.
   */
  readonly idempotencyKey?: string;
}

/** What `placeOrder` did. */
export type PlaceOrderResult =
  | { readonly outcome: 'placed' | 'replayed'; readonly order: StoredOrder }
  /** The key placed an order for another pet. */
  | { readonly outcome: 'conflict' }
  | { readonly outcome: 'pet_not_found' }
  /** The pet is not `available`: `pending` (on order, or set so by a PATCH) or `sold`. */
  | { readonly outcome: 'pet_unavailable' };

/**
 * What `closeOrder` did: `closed` the order as asked; found it already closed that way
 * (`unchanged`); found it closed another way (`order_closed`); or found no order of the owner's
 * with that id (`not_found`).
 */
export type CloseOrderResult =
  | { readonly outcome: 'closed' | 'unchanged' | 'order_closed'; readonly order: StoredOrder }
  | { readonly outcome: 'not_found' };

/** One page of an owner's orders: ids after `after`, ascending, at most `limit`. */
export interface OrderListOptions {
  readonly limit: number;
  readonly status?: OrderStatus;
  readonly after?: string;
}

/**
 * Where pets live, with what belongs beside them: orders, idempotency keys and the webhook
 * outbox. Pet ids are assigned by the store and increase.
 */
export interface DataStore {
  /** Stores a new pet; resolves only once it is durable for this backend. */
  create(pet: NewPet): Promise<StoredPet>;
  /**
   * Like `create`, remembering the key with the pet in the same transaction, so a crash cannot
   * keep one without the other; a live key answers its first pet (`replayed`) or, with another
   * fingerprint, `conflict`. Creates with the same key never both store a pet, even when
   * concurrent or on different instances sharing the database.
   */
  createOnce(pet: NewPet, once: IdempotentCreate): Promise<CreateOnceResult>;
  /**
   * The pet with its current version, or undefined when no pet has this id (never had, or deleted).
   */
  get(id: number): Promise<StoredPet | undefined>;
  /**
   * Applies `patch` to pet `id` when it meets `ifMatch` (none: no precondition), moving its
   * version; see `UpdateResult` for what is checked. Resolves once durable, as `create` does.
   */
  update(id: number, patch: PetPatch, ifMatch?: IfMatch): Promise<UpdateResult>;
  /**
   * Removes pet `id` when it meets `ifMatch`; see `RemoveResult`. Its id is never given to
   * another pet, and an idempotency key that made it still answers the create's 201.
   */
  remove(id: number, ifMatch?: IfMatch): Promise<RemoveResult>;
  /** A page of pets with ids above `options.after`, ascending (see `ListOptions`). */
  list(options: ListOptions): Promise<readonly Pet[]>;
  /** How many pets have each status. */
  inventory(): Promise<Inventory>;
  /**
   * Places an order: in one transaction the pet moves `available -> pending` by a conditional write
   * and the order is stored, so two orders never hold one pet, whichever instance placed them.
   */
  placeOrder(place: PlaceOrder): Promise<PlaceOrderResult>;
  // The order calls' `now` is epoch ms from the app's clock (a test's fake clock too); PostgreSQL
  // ignores it and compares holds with the database's `now()`, the one clock of a fleet.
  /** `owner`'s order, expired first when its hold is over; undefined when it has no such order. */
  getOrder(owner: string, id: string, now: number): Promise<StoredOrder | undefined>;
  /** A page of `owner`'s orders, ascending by id, those whose hold is over expired first. */
  listOrders(owner: string, options: OrderListOptions, now: number): Promise<readonly StoredOrder[]>;
  /**
   * Closes `owner`'s placed order, and moves its pet in the same transaction: `completed` sells
   * it, `cancelled` makes it available. An order whose hold is over is expired instead.
   */
  closeOrder(owner: string, id: string, to: Closing, now: number): Promise<CloseOrderResult>;
  /**
   * Expires every due order (a placed order whose hold is over): the order `expired`, its pet
   * `available`, `order.expired` recorded in the outbox, each a conditional write, so an order
   * expires once whichever instances try. Resolves with how many this call expired. The order
   * sweep awaits it (src/serve/start.ts); a read of pets starts it (`startDueOrderExpiry`).
   */
  expireDueOrders(now: number): Promise<number>;
  /**
   * Retires the owner of a deleted consumer: cancels its placed orders (their pets become
   * available) and moves all its orders to an owner no one has, so a consumer created again under
   * the same name starts with no orders and free `Idempotency-Key`s.
   */
  retireOwner(owner: string): Promise<void>;
  /**
   * Moves each `from` owner's orders and createPet `Idempotency-Key`s to `to`, so a consumer
   * stored under its name alone takes what it stored before (`Consumer.adopts` in
   * src/keys/records.ts). An order or key whose `Idempotency-Key` `to` already uses stays with
   * `from`, since one owner cannot hold the same key twice. Resolves once durable.
   */
  adoptOwners(moves: readonly OwnerMove[]): Promise<void>;
  /**
   * Starts the due orders' expiry, one run at a time, and returns the run to wait on, if any. The
   * run is `expireDueOrders()` under way; undefined means nothing is left to wait for. A read of
   * pets waits for it (step 6.1 of src/pipeline/pipeline.ts), so it shows them as a write will find
   * them. A read whose answer may be memoised calls it before `changeCount()`.
   *
   * A failed run does not fail the read: a backend's run never rejects, so the read goes on and
   * shows the pets as stored, with nothing memoised (`changeCount()` stays undefined past the
   * earliest hold end), and the next read or the order sweep (src/serve/start.ts, which logs and
   * counts its failures) tries again. A wait past `--store-timeout`, or begun while the database
   * is unreachable, does reject: the bound-and-traced store (`boundAndTraced()`) bounds it as any
   * call, and the read answers 503. The run goes on, and the next read waits for it.
   */
  startDueOrderExpiry(): Promise<void> | undefined;
  /**
   * The current change count (`ChangeCounter.count`); read it before a read whose answer may be
   * memoised. Undefined when the store cannot tell what changed, or while an ended hold is not yet
   * expired; then nothing is memoised or served (src/pipeline/memo.ts). Synchronous: PostgreSQL
   * keeps it in memory, SQLite reads `PRAGMA data_version` now and then.
   */
  changeCount(): ChangeCount;
  /**
   * Whether nothing `reads` names changed since the store's change count was `since`
   * (`ChangeCounter.readsUnchangedSince`).
   */
  readsUnchangedSince(since: ChangeCount, reads: PetSet | undefined): boolean;
  /** The webhook outbox kept with the pets (same file or database), when the backend has one. */
  readonly outbox?: Outbox;
  /** Resolves when the store can serve requests; rejects with the reason otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A store behind a wrapper (the time bound, error counts): `backend` is the store its calls reach.
 */
export interface WrappedStore extends DataStore {
  readonly backend: DataStore;
}

/** The names of `T`'s methods that return a promise. */
type Calls<T> = { [K in keyof T]-?: T[K] extends (...args: never[]) => Promise<unknown> ? K : never }[keyof T];

/** What the wrappers (the time bound, error counts) need to know of one call of the store. */
export interface CallSpec {
  /**
   * What the call does, as a timeout's message says it:
   * `store pet: no answer from the store within 2000 ms`.
   */
  readonly doing: string;
  /**
   * Whether it may change something, even when its name says read. A call that may write and
   * times out says its outcome is unknown (`StoreTimeoutError`); with several workers, one that
   * changed something or failed moves the change count every worker's memo reads
   * (`sharedChangeCount`).
   */
  readonly mayWrite: boolean;
  /** The `operation` its failures are counted under (`petstore_store_errors_total`). */
  readonly counted: string;
  /**
   * The name its trace span and `db.operation.name` carry when it is not the method's: the name
   * stored traces and their queries select on.
   */
  readonly traced?: string;
}

/**
 * Every async call of `DataStore`, once. `wrapStore` builds every wrapper from this list, so a call
 * added to the interface does not compile until it is listed here, and no wrapper can miss it.
 *
 * Not listed: `close`, and three calls of step 6 that return at once or hand back a run already
 * started (`startDueOrderExpiry`, `changeCount`, `readsUnchangedSince`). `wrapStore` passes these
 * through unless a wrapper supplies its own (`OwnCalls`); the bound-and-traced wrapper bounds
 * `startDueOrderExpiry`'s promise as a call of `STORE_CALLS.expireDueOrders`.
 */
export const STORE_CALLS = {
  create: { doing: 'store pet', mayWrite: true, counted: 'create' },
  createOnce: { doing: 'store pet', mayWrite: true, counted: 'create' },
  get: { doing: 'read pet', mayWrite: false, counted: 'get' },
  update: { doing: 'change pet', mayWrite: true, counted: 'update' },
  remove: { doing: 'remove pet', mayWrite: true, counted: 'remove' },
  list: { doing: 'list pets', mayWrite: false, counted: 'list' },
  inventory: { doing: 'count pets', mayWrite: false, counted: 'inventory' },
  placeOrder: { doing: 'place order', mayWrite: true, counted: 'order' },
  // A read of orders may expire due holds first, so it may write: on SQLite and in memory every
  // due one; on PostgreSQL, every due one only when an order it reads is due.
  getOrder: { doing: 'read order', mayWrite: true, counted: 'order' },
  // As getOrder: it may expire due holds.
  listOrders: { doing: 'list orders', mayWrite: true, counted: 'order' },
  closeOrder: { doing: 'close order', mayWrite: true, counted: 'order' },
  expireDueOrders: { doing: 'expire orders', mayWrite: true, counted: 'order', traced: 'expireOrders' },
  retireOwner: { doing: 'retire owner', mayWrite: true, counted: 'order' },
  adoptOwners: { doing: 'adopt owners', mayWrite: true, counted: 'order' },
  ping: { doing: 'ping', mayWrite: false, counted: 'ping' },
} as const satisfies Record<Exclude<Calls<DataStore>, 'close'>, CallSpec>;

/** Every call of the webhook outbox, as `STORE_CALLS` lists the store's. */
export const OUTBOX_CALLS = {
  record: { doing: 'record events', mayWrite: true, counted: 'outbox' },
  claim: { doing: 'claim events', mayWrite: true, counted: 'outbox' },
  settle: { doing: 'settle event', mayWrite: true, counted: 'outbox' },
  trim: { doing: 'trim outbox', mayWrite: true, counted: 'outbox' },
  stats: { doing: 'read outbox', mayWrite: false, counted: 'outbox' },
} as const satisfies Record<Calls<Outbox>, CallSpec>;

/**
 * A call of `STORE_CALLS` or `OUTBOX_CALLS` passed through a wrapper: `run` makes the call itself,
 * and the wrapper resolves with what `run` resolves with.
 */
export type CallWrap = <T>(run: () => Promise<T>, spec: CallSpec) => Promise<T>;

/**
 * Returns the calls of `target` that `calls` lists, each passed through `wrap`. `wrapStore` builds
 * on it; the tests' fake store uses it alone on a MemoryStore (test/fake-store.ts).
 *
 * @example
 * const calls = wrapCalls(memory, STORE_CALLS, (run) => gate.then(run)) // every call waits for `gate`
 */
export function wrapCalls<T extends object, K extends keyof T & string>(
  target: T,
  calls: Readonly<Record<K, CallSpec>>,
  wrap: CallWrap,
): Pick<T, K> {
  const wrapped: Partial<Record<K, unknown>> = {};
  for (const name of Object.keys(calls) as K[]) {
    const spec = calls[name];
    const method = target[name] as (...args: unknown[]) => Promise<unknown>;
    wrapped[name] = (...args: unknown[]) => wrap(() => method.apply(target, args), spec);
  }
  return wrapped as Pick<T, K>;
}

/** The calls outside `STORE_CALLS` (step 6's three, and `close`): a wrapper may give its own. */
export type OwnCalls = Partial<
  Pick<DataStore, 'startDueOrderExpiry' | 'changeCount' | 'readsUnchangedSince' | 'close'>
>;

/**
 * Wraps `store`: every call of `STORE_CALLS` goes through `wrap`, and so do the outbox's
 * `OUTBOX_CALLS` unless `outbox` is `'as is'`. The other calls pass straight through unless `own`
 * replaces them. `backend` is the innermost store, where `keyStoreOf()` (key-store.ts) finds the
 * keys of `--keys store`.
 *
 * @example
 * const counted = wrapStore(store, (run, { counted }) => run().catch(countAs(counted)))
 */
export function wrapStore(
  store: DataStore | WrappedStore,
  wrap: CallWrap,
  own: OwnCalls = {},
  outbox: 'wrapped' | 'as is' = 'wrapped',
): WrappedStore {
  const inner = store.outbox;
  return {
    ...wrapCalls(store, STORE_CALLS, wrap),
    ...(inner ? { outbox: outbox === 'wrapped' ? wrapCalls(inner, OUTBOX_CALLS, wrap) : inner } : {}),
    backend: 'backend' in store ? store.backend : store,
    startDueOrderExpiry: () => store.startDueOrderExpiry(),
    changeCount: () => store.changeCount(),
    readsUnchangedSince: (since, reads) => store.readsUnchangedSince(since, reads),
    close: () => store.close(),
    ...own,
  };
}
