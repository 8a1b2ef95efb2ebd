// The in-memory backend (--data :memory:, and the tests' stores): MemoryStore keeps pets, orders,
// Idempotency-Keys and the webhook outbox in process memory, gone on restart.
import { type Clock, systemClock } from '../core/clock.ts';
import { type Closing, petStatusOnClose, type StoredOrder } from '../core/order-records.ts';
import { type Inventory, type NewPet, type Pet, type PetPatch, petOf, type StoredPet } from '../core/pet-records.ts';
import type { IfMatch } from '../core/preconditions.ts';
import type { PetSet } from '../core/reply.ts';
import { ChangeCounter } from './change-counter.ts';
import { planRemove, planUpdate } from './change-rules.ts';
import { IDEMPOTENCY_TTL_MS, idempotencyKeySpace, KEYED_CREATES } from './idempotency.ts';
import { newOrderId, orderExpiredEvent, retiredOwner } from './order-rows.ts';
import { MemoryOutbox } from './outbox.ts';
import type {
  CloseOrderResult,
  CreateOnceResult,
  DataStore,
  IdempotentCreate,
  ListOptions,
  OrderListOptions,
  OwnerMove,
  PlaceOrder,
  PlaceOrderResult,
  RemoveResult,
  UpdateResult,
} from './store.ts';

/** An order with the fields only the store sees: its owner and the key that placed it. */
interface KeptOrder {
  order: StoredOrder;
  owner: string;
}

interface RememberedKey {
  readonly fingerprint: string;
  /** The pet as the create answered it; a retry answers the same, however the pet changed since. */
  readonly pet: StoredPet;
  readonly expiresAt: number;
}

/** Pets in process memory (`--data :memory:`): gone on restart. */
export class MemoryStore implements DataStore {
  /** Sorted by id, since ids only grow, so a page starts with a binary search. */
  #pets: StoredPet[] = [];
  #nextId = 1;
  /** Pets per status, updated on every write, so the inventory needs no count. */
  readonly #inventory: Inventory = { available: 0, pending: 0, sold: 0 };
  /** Counts every pet change (src/store/change-counter.ts). */
  readonly #changes = new ChangeCounter();
  /** Idempotency keys in the order they were stored, which is also the order they expire. */
  readonly #keys = new Map<string, RememberedKey>();
  readonly outbox = new MemoryOutbox();
  readonly #orders = new Map<string, KeptOrder>();
  /** Each owner's order ids. */
  readonly #byOwner = new Map<string, Set<string>>();
  /** The order each owner's `Idempotency-Key` placed. */
  readonly #orderKeys = new Map<string, string>();
  /** The placed orders, the only ones whose hold can end. */
  readonly #placed = new Set<string>();
  /** No earlier than the earliest hold end of a placed order: until then no hold can be over. */
  #earliestHoldEnd = Number.POSITIVE_INFINITY;
  readonly #clock: Clock;

  constructor({ clock = systemClock }: { clock?: Clock } = {}) {
    this.#clock = clock;
  }

  async create(pet: NewPet): Promise<StoredPet> {
    return { ...this.#insert(pet) };
  }

  // Synchronous from the lookup to the insert: no other create can run in between.
  async createOnce(pet: NewPet, once: IdempotentCreate): Promise<CreateOnceResult> {
    this.#dropExpiredKeys(once.now);
    const id = `${idempotencyKeySpace(once.owner, 'createPet')}\u0000${once.key}`;
    const seen = this.#keys.get(id);
    if (seen && seen.expiresAt > once.now) {
      if (seen.fingerprint !== once.fingerprint) return { outcome: 'conflict' };
      return { outcome: 'replayed', pet: { ...seen.pet } };
    }
    this.#keys.delete(id);
    const stored = this.#insert(pet);
    this.#keys.set(id, { fingerprint: once.fingerprint, pet: stored, expiresAt: once.now + IDEMPOTENCY_TTL_MS });
    return { outcome: 'created', pet: { ...stored } };
  }

  async get(id: number): Promise<StoredPet | undefined> {
    const i = this.#firstAfter(id - 1);
    const pet = this.#pets[i];
    return pet?.id === id ? { ...pet } : undefined;
  }

  // Synchronous from the read to the write, so it acts as one transaction. Ended holds expire
  // first, so the pet, its version (If-Match) and its status count are those after the expiry.
  async update(id: number, patch: PetPatch, ifMatch?: IfMatch): Promise<UpdateResult> {
    this.#expireDueOrdersIn(this.#clock.now());
    const i = this.#firstAfter(id - 1);
    const current = this.#pets[i]?.id === id ? this.#pets[i] : undefined;
    const plan = planUpdate(current, patch, ifMatch);
    if (plan.outcome !== 'apply') return plan;
    const was = current as StoredPet;
    if (plan.statusChanges && this.#heldByOrder(id)) return { outcome: 'on_order', pet: { ...was } };
    if (!plan.changed) return { outcome: 'updated', pet: { ...was } };
    // The changed pet is a new object: an idempotency key keeps the object its create answered,
    // and a retry of that create must still answer the pet as it was then.
    const next: StoredPet = { ...plan.next, version: was.version + 1 };
    this.#pets[i] = next;
    this.#inventory[was.status]--;
    this.#inventory[next.status]++;
    this.#changes.changed({ ids: [id], statuses: plan.statusChanges });
    return { outcome: 'updated', pet: { ...next } };
  }

  async remove(id: number, ifMatch?: IfMatch): Promise<RemoveResult> {
    this.#expireDueOrdersIn(this.#clock.now());
    const i = this.#firstAfter(id - 1);
    const current = this.#pets[i]?.id === id ? this.#pets[i] : undefined;
    const plan = planRemove(current, ifMatch);
    if (plan.outcome !== 'apply') return plan;
    if (this.#heldByOrder(id)) return { outcome: 'on_order', pet: { ...(current as StoredPet) } };
    // #nextId only grows, so the id is never reused.
    this.#pets.splice(i, 1);
    this.#inventory[(current as StoredPet).status]--;
    this.#changes.changed({ ids: [id], members: true });
    return { outcome: 'removed' };
  }

  /**
   * Whether a placed order holds pet `id`; if so, its status cannot change and it cannot be
   * removed. Call it after expiring the ended holds.
   */
  #heldByOrder(id: number): boolean {
    for (const orderId of this.#placed) if ((this.#orders.get(orderId) as KeptOrder).order.petId === id) return true;
    return false;
  }

  async list({ limit, status, after = 0 }: ListOptions): Promise<Pet[]> {
    const page: Pet[] = [];
    for (let i = this.#firstAfter(after); i < this.#pets.length && page.length < limit; i++) {
      const pet = this.#pets[i] as StoredPet;
      if (status === undefined || pet.status === status) page.push(petOf(pet));
    }
    return page;
  }

  async inventory(): Promise<Inventory> {
    return { ...this.#inventory };
  }

  // Synchronous from the key's lookup to the order's insert: no other order can run in between.
  async placeOrder({ owner, petId, holdMs, now, idempotencyKey }: PlaceOrder): Promise<PlaceOrderResult> {
    this.#expireDueOrdersIn(now);
    const keyed = idempotencyKey === undefined ? undefined : `${owner}\u0000${idempotencyKey}`;
    const earlier = keyed === undefined ? undefined : this.#orderKeys.get(keyed);
    if (earlier !== undefined) {
      const { order } = this.#orders.get(earlier) as KeptOrder;
      return order.petId === petId ? { outcome: 'replayed', order } : { outcome: 'conflict' };
    }
    const pet = this.#pets[this.#firstAfter(petId - 1)];
    if (pet?.id !== petId) return { outcome: 'pet_not_found' };
    if (pet.status !== 'available') return { outcome: 'pet_unavailable' };
    this.#setStatus(pet, 'pending');
    const order: StoredOrder = { id: newOrderId(now), petId, status: 'placed', placedAt: now, holdUntil: now + holdMs };
    this.#orders.set(order.id, { order, owner });
    const mine = this.#byOwner.get(owner) ?? new Set<string>();
    this.#byOwner.set(owner, mine.add(order.id));
    this.#placed.add(order.id);
    this.#earliestHoldEnd = Math.min(this.#earliestHoldEnd, order.holdUntil);
    if (keyed !== undefined) this.#orderKeys.set(keyed, order.id);
    return { outcome: 'placed', order };
  }

  async getOrder(owner: string, id: string, now: number): Promise<StoredOrder | undefined> {
    this.#expireDueOrdersIn(now);
    const kept = this.#orders.get(id);
    return kept?.owner === owner ? kept.order : undefined;
  }

  async listOrders(owner: string, { limit, status, after }: OrderListOptions, now: number): Promise<StoredOrder[]> {
    this.#expireDueOrdersIn(now);
    return [...(this.#byOwner.get(owner) ?? [])]
      .filter((id) => after === undefined || id > after)
      .sort()
      .map((id) => (this.#orders.get(id) as KeptOrder).order)
      .filter((order) => status === undefined || order.status === status)
      .slice(0, limit);
  }

  async closeOrder(owner: string, id: string, to: Closing, now: number): Promise<CloseOrderResult> {
    this.#expireDueOrdersIn(now);
    const kept = this.#orders.get(id);
    if (kept?.owner !== owner) return { outcome: 'not_found' };
    const { order } = kept;
    if (order.status !== 'placed') return { outcome: order.status === to ? 'unchanged' : 'order_closed', order };
    kept.order = { ...order, status: to };
    this.#placed.delete(id);
    const pet = this.#pets[this.#firstAfter(order.petId - 1)];
    if (pet?.id === order.petId && pet.status === 'pending') this.#setStatus(pet, petStatusOnClose(to));
    return { outcome: 'closed', order: kept.order };
  }

  async expireDueOrders(now: number): Promise<number> {
    return this.#expireDueOrdersIn(now);
  }

  async retireOwner(owner: string): Promise<void> {
    const mine = this.#byOwner.get(owner);
    if (!mine) return;
    const heir = retiredOwner(owner);
    for (const id of mine) {
      const kept = this.#orders.get(id) as KeptOrder;
      if (kept.order.status === 'placed') {
        this.#placed.delete(id);
        kept.order = { ...kept.order, status: 'cancelled' };
        const pet = this.#pets[this.#firstAfter(kept.order.petId - 1)];
        if (pet?.id === kept.order.petId && pet.status === 'pending') this.#setStatus(pet, 'available');
      }
      this.#orders.set(id, { order: kept.order, owner: heir });
    }
    this.#byOwner.delete(owner);
    this.#byOwner.set(heir, mine);
    for (const key of this.#orderKeys.keys()) if (key.startsWith(`${owner}\u0000`)) this.#orderKeys.delete(key);
  }

  async adoptOwners(moves: readonly OwnerMove[]): Promise<void> {
    for (const { from, to } of moves) {
      // An order whose Idempotency-Key `to` already uses stays with `from`, as in the databases,
      // where the (owner, key) pair is unique.
      const kept = new Set<string>();
      for (const [keyed, id] of [...this.#orderKeys]) {
        if (!keyed.startsWith(`${from}\u0000`)) continue;
        const heirs = `${to}\u0000${keyed.slice(from.length + 1)}`;
        if (this.#orderKeys.has(heirs)) {
          kept.add(id);
          continue;
        }
        this.#orderKeys.delete(keyed);
        this.#orderKeys.set(heirs, id);
      }
      const theirs = this.#byOwner.get(from) ?? new Set<string>();
      const mine = this.#byOwner.get(to) ?? new Set<string>();
      for (const id of theirs) {
        if (kept.has(id)) continue;
        theirs.delete(id);
        mine.add(id);
        (this.#orders.get(id) as KeptOrder).owner = to;
      }
      if (mine.size > 0) this.#byOwner.set(to, mine);
      // Rename the keys in place, keeping their order, which is the order they expire.
      const renamed = KEYED_CREATES.map((op) => [
        `${idempotencyKeySpace(from, op)}\u0000`,
        `${idempotencyKeySpace(to, op)}\u0000`,
      ]);
      const keys = [...this.#keys];
      const taken = new Set(this.#keys.keys());
      this.#keys.clear();
      for (const [id, remembered] of keys) {
        const [prefix, heir] = renamed.find(([p]) => id.startsWith(p as string)) ?? [];
        const moved = prefix === undefined ? id : `${heir}${id.slice(prefix.length)}`;
        this.#keys.set(moved !== id && taken.has(moved) ? id : moved, remembered);
      }
    }
  }

  /**
   * Expires the orders whose hold is over, synchronously (no I/O in memory), so there is no run
   * to wait for.
   */
  startDueOrderExpiry(): undefined {
    this.#expireDueOrdersIn(this.#clock.now());
    return undefined;
  }

  /** The change count; always known in memory. */
  changeCount(): number {
    return this.#changes.count();
  }

  readsUnchangedSince(since: number, reads: PetSet | undefined): boolean {
    return this.#changes.readsUnchangedSince(since, reads);
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}

  #insert(pet: NewPet): StoredPet {
    const stored: StoredPet = {
      id: this.#nextId++,
      name: pet.name,
      categoryId: pet.categoryId,
      status: pet.status,
      version: 1,
    };
    this.#pets.push(stored);
    this.#inventory[stored.status]++;
    this.#changes.changed({ ids: [stored.id], members: true });
    return stored;
  }

  /**
   * Within the current synchronous write: expires every placed order whose hold is over at `now`,
   * makes its pet available and records `order.expired`.
   */
  #expireDueOrdersIn(now: number): number {
    if (now < this.#earliestHoldEnd) return 0;
    let expired = 0;
    let next = Number.POSITIVE_INFINITY;
    for (const id of this.#placed) {
      const kept = this.#orders.get(id) as KeptOrder;
      if (kept.order.holdUntil > now) {
        next = Math.min(next, kept.order.holdUntil);
        continue;
      }
      this.#placed.delete(id);
      kept.order = { ...kept.order, status: 'expired' };
      const pet = this.#pets[this.#firstAfter(kept.order.petId - 1)];
      if (pet?.id === kept.order.petId && pet.status === 'pending') this.#setStatus(pet, 'available');
      const event = orderExpiredEvent(kept.owner, kept.order, now);
      if (event) void this.outbox.record([event]);
      expired++;
    }
    this.#earliestHoldEnd = next;
    return expired;
  }

  /**
   * Moves a pet to `status` and bumps its version. The pet becomes a new object, because an
   * idempotency key may keep the old one to answer a retry of its create.
   */
  #setStatus(pet: StoredPet, status: Pet['status']): void {
    const i = this.#firstAfter(pet.id - 1);
    this.#inventory[pet.status]--;
    this.#inventory[status]++;
    this.#pets[i] = { ...pet, status, version: pet.version + 1 };
    this.#changes.changed({ ids: [pet.id], statuses: true });
  }

  /** Drops expired keys, oldest first: constant work per key over its life. */
  #dropExpiredKeys(now: number): void {
    for (const [id, remembered] of this.#keys) {
      if (remembered.expiresAt > now) return;
      this.#keys.delete(id);
    }
  }

  /** Index of the first pet with `id > after`. */
  #firstAfter(after: number): number {
    let lo = 0;
    let hi = this.#pets.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.#pets[mid] as StoredPet).id <= after) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
