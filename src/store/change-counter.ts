// What keeps a memoised answer honest: `ChangeCounter` counts the changes of pets, so the memo
// (src/pipeline/memo.ts) can ask whether anything a reply read changed since it was read.
import type { PetSet } from '../core/reply.ts';

/**
 * Slots of the table of when pets last changed, by id modulo its size: ids that share one only
 * cost a memoised answer early.
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
 * The change count: a counter that moves with every change this instance hears of, and when each
 * pet (and the set of pets, and any status) last changed on it. An answer read at count `since`
 * stays true while nothing it read changed after `since` (`readsUnchangedSince`). What the memo
 * serves by it is stated in `ReplyMemo`'s docstring (src/pipeline/memo.ts).
 *
 * A change is counted once stored, before its caller hears of it. A read begun earlier has a
 * lower `since`, so its answer is not served after the change.
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
  /** When a pet whose id falls in each slot last changed (doubles: exact up to 2^53 changes). */
  readonly #pets = new Float64Array(SLOTS);

  /** The count: read it before a read from the store, and keep the answer with it. */
  count(): number {
    return this.#count;
  }

  /** Counts a change that is stored: the answers that read what it changed are no longer served. */
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
   * Whether nothing `reads` names changed after `since` (`reads` undefined: the answer depends on
   * every pet, so any change counts).
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
