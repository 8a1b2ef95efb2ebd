import { type NewPet, type Pet, type PetPatch, petOf, type StoredPet } from '../core/pets.ts';
import type { IfMatch } from '../core/preconditions.ts';
import { planRemove, planUpdate } from './changes.ts';
import { IDEMPOTENCY_TTL_MS } from './idempotency.ts';
import { MemoryOutbox } from './outbox.ts';
import type { CreateOnceResult, IdempotentCreate, ListOptions, PetStore, RemoveResult, UpdateResult } from './store.ts';

interface RememberedKey {
  readonly fingerprint: string;
  /** The pet as the create answered it: a retry answers the same, whatever became of the pet. */
  readonly pet: StoredPet;
  readonly expiresAt: number;
}

/** Pets in process memory (`--data :memory:`): gone on restart. */
export class MemoryStore implements PetStore {
  /** Ascending by id, since ids only grow; a page starts with a binary search. */
  #pets: StoredPet[] = [];
  #nextId = 1;
  /** Moves on with every write. */
  #generation = 0;
  /** Idempotency keys in the order they were stored, which is the order they expire in. */
  readonly #keys = new Map<string, RememberedKey>();
  readonly outbox = new MemoryOutbox();

  async create(pet: NewPet): Promise<StoredPet> {
    return { ...this.#insert(pet) };
  }

  // Synchronous from the lookup to the insert: no other create can run in between.
  async createOnce(pet: NewPet, once: IdempotentCreate): Promise<CreateOnceResult> {
    this.#sweep(once.now);
    const id = `${once.scope}\u0000${once.key}`;
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

  // Synchronous from the read to the write, as one transaction.
  async update(id: number, patch: PetPatch, ifMatch?: IfMatch): Promise<UpdateResult> {
    const i = this.#firstAfter(id - 1);
    const current = this.#pets[i]?.id === id ? this.#pets[i] : undefined;
    const plan = planUpdate(current, patch, ifMatch);
    if (plan.outcome !== 'apply') return plan;
    const was = current as StoredPet;
    if (plan.statusChanges && this.#heldByOrder(id)) return { outcome: 'on_order', pet: { ...was } };
    if (!plan.changed) return { outcome: 'updated', pet: { ...was } };
    // A new object: an idempotency key keeps the one its create answered.
    const next: StoredPet = { ...plan.next, version: was.version + 1 };
    this.#pets[i] = next;
    this.#generation++;
    return { outcome: 'updated', pet: { ...next } };
  }

  async remove(id: number, ifMatch?: IfMatch): Promise<RemoveResult> {
    const i = this.#firstAfter(id - 1);
    const current = this.#pets[i]?.id === id ? this.#pets[i] : undefined;
    const plan = planRemove(current, ifMatch);
    if (plan.outcome !== 'apply') return plan;
    if (this.#heldByOrder(id)) return { outcome: 'on_order', pet: { ...(current as StoredPet) } };
    // #nextId only grows: the id is never given again.
    this.#pets.splice(i, 1);
    this.#generation++;
    return { outcome: 'removed' };
  }

  /**
   * Whether an open order holds pet `id`: then its status cannot change and it cannot be
   * removed. The orders of this store answer it; without them no pet is held.
   */
  #heldByOrder(_id: number): boolean {
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

  version(): number {
    return this.#generation;
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
    this.#generation++;
    return stored;
  }

  /** Drops expired keys from the oldest on: O(1) per key over its life. */
  #sweep(now: number): void {
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
