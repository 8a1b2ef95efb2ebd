// `ChangeCounter` counts pet changes, so the memo (src/pipeline/memo.ts) can ask whether anything a
// reply read has changed since it was read, and never serve a stale answer.
import type { PetSet } from '../core/reply.ts';

/**
 * Slots in the table of when pets last changed, indexed by id modulo its size. Ids that share a
 * slot only make a memoised answer expire early.
 */
const SLOTS = 4_096;
const SLOT = SLOTS - 1;

/**
 * A change of every pet: another process's commit, a listener that lost its connection, a restore.
 */
export const EVERY_PET = 'every pet';
/** What a write changed: some pets, or every pet. */
export type PetChange = PetSet | typeof EVERY_PET;
/** A write that changes no pet (an outbox row, an order's owner). */
export const NO_PET: PetSet = { ids: [] };

/**
 * The change count: a counter that moves with every change this instance hears of, plus the
 * count at which each pet, the set of pets, and any status last changed. An answer read at count
 * `since` stays valid while nothing it read changed after `since` (`readsUnchangedSince`); see
 * `ReplyMemo` (src/pipeline/memo.ts) for how the memo uses it.
 *
 * Count a change once it is stored and before its caller sees the result. A read that began
 * earlier has a lower `since`, so its answer is not served after the change.
 *
 * @example
 * const changes = new ChangeCounter()
 * const since = changes.count()                    // before a read of pet 7
 * changes.changed({ ids: [8] })
 * changes.readsUnchangedSince(since, { ids: [7] }) // true
 * changes.changed(EVERY_PET)
 * changes.readsUnchangedSince(since, { ids: [7] }) // false
 */
export class ChangeCounter {
  #count = 0;
  /** When every pet last changed at once. */
  #every = 0;
  #members = 0;
  #statuses = 0;
  /** When a pet in each slot last changed (doubles, exact up to 2^53 changes). */
  readonly #pets = new Float64Array(SLOTS);

  /** The current count: read it before reading the store, and keep it with the answer. */
  count(): number {
    return this.#count;
  }

  /** Counts a stored change, so answers that read what it changed are no longer served. */
  changed(change: PetChange): void {
    const at = ++this.#count;
    if (change === EVERY_PET) {
      this.#every = at;
      return;
    }
    for (const id of change.ids) this.#pets[id & SLOT] = at;
    // A pet created or removed also moves the count of its status.
    if (change.members) this.#members = at;
    if (change.members || change.statuses) this.#statuses = at;
  }

  /**
   * Whether nothing `reads` names changed after `since`. Undefined `reads` means the answer
   * depends on every pet, so any change counts.
   */
  readsUnchangedSince(since: number, reads: PetSet | undefined): boolean {
    if (since === this.#count) return true;
    if (reads === undefined || this.#every > since) return false;
    if (reads.members && this.#members > since) return false;
    if (reads.statuses && this.#statuses > since) return false;
    for (const id of reads.ids) if ((this.#pets[id & SLOT] as number) > since) return false;
    return true;
  }
}
