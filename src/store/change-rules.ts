// What every backend decides about a change or a removal of a pet from the pet alone, as its
// write transaction reads it: found, `If-Match`, the transition. Whether an open order holds the
// pet (`on_order`) needs the orders, so each backend checks it after the plan, in its own
// transaction; the backends differ in that and in how they read, lock and write.
import { mayBecome, type Pet, type PetPatch, type StoredPet } from '../core/pet-records.ts';
import { type IfMatch, meets } from '../core/preconditions.ts';
import type { RemoveResult, UpdateResult } from './store.ts';

/** A change to write: the pet as it becomes; `changed` false when the patch changes nothing. */
export interface PlannedUpdate {
  readonly outcome: 'apply';
  readonly next: Pet;
  readonly changed: boolean;
  /** Whether the status changes: then an open order holding the pet refuses it (`on_order`). */
  readonly statusChanges: boolean;
}

/**
 * The answer to `update` that needs no write (not found, stale, not a transition), or the
 * change to write.
 *
 * @example
 * planUpdate({ id: 1, name: 'Rex', categoryId: 1, status: 'sold', version: 2 }, { status: 'available' })
 * // { outcome: 'invalid_transition', pet: ..., to: 'available' }
 */
export function planUpdate(
  current: StoredPet | undefined,
  patch: PetPatch,
  ifMatch: IfMatch | undefined,
): UpdateResult | PlannedUpdate {
  if (current === undefined) return { outcome: 'not_found' };
  if (!meets(ifMatch, current.version)) return { outcome: 'stale', pet: current };
  const next: Pet = {
    id: current.id,
    name: patch.name ?? current.name,
    categoryId: patch.categoryId ?? current.categoryId,
    status: patch.status ?? current.status,
  };
  if (!mayBecome(current.status, next.status)) return { outcome: 'invalid_transition', pet: current, to: next.status };
  const statusChanges = next.status !== current.status;
  const changed = statusChanges || next.name !== current.name || next.categoryId !== current.categoryId;
  return { outcome: 'apply', next, changed, statusChanges };
}

/**
 * The answer to `remove` that needs no write (not found, stale), or `apply`.
 *
 * @example
 * planRemove(undefined, '*') // { outcome: 'not_found' }
 */
export function planRemove(
  current: StoredPet | undefined,
  ifMatch: IfMatch | undefined,
): RemoveResult | { readonly outcome: 'apply' } {
  if (current === undefined) return { outcome: 'not_found' };
  if (!meets(ifMatch, current.version)) return { outcome: 'stale', pet: current };
  return { outcome: 'apply' };
}
