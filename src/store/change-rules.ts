// The checks every backend makes on a pet update or removal using the pet alone, as its write
// transaction reads it: found, `If-Match`, the status transition. Whether an open order holds the
// pet (`on_order`) needs the orders, so each backend checks that after the plan, in its own
// transaction; the backends differ there and in how they read, lock and write.
import { mayBecome, type Pet, type PetPatch, type StoredPet } from '../core/pet-records.ts';
import { type IfMatch, meets } from '../core/preconditions.ts';
import type { RemoveResult, UpdateResult } from './store.ts';

/** A change to write: `next` is the updated pet; `changed` is false when nothing changes. */
export interface PlannedUpdate {
  readonly outcome: 'apply';
  readonly next: Pet;
  readonly changed: boolean;
  /** Whether the status changes; if so, an open order on the pet refuses it (`on_order`). */
  readonly statusChanges: boolean;
}

/**
 * Returns the `update` result when no write is needed (not found, stale, invalid transition), or
 * the change to write.
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
 * Returns the `remove` result when no write is needed (not found, stale), or `apply`.
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
