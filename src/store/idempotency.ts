// `Idempotency-Key` on createPet: how long a key is remembered, what counts as "the same
// request", and how often the stores drop expired keys.
import { createHash } from 'node:crypto';
import type { NewPet } from '../core/pet-records.ts';

/** A key is remembered this long after the create that first used it. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1_000;
/** Expired keys are deleted lazily, by a create, at most this often per store. */
export const KEY_EXPIRY_INTERVAL_MS = 60 * 1_000;

/**
 * Digest of a validated create request (defaults applied), so a retry that only reorders fields,
 * changes whitespace or spells out the default status counts as the same request.
 *
 * @example
 * fingerprintOf({ name: 'Rex', categoryId: 1, status: 'available' }) // '5f0c…' (64 hex digits)
 */
export function fingerprintOf(pet: NewPet): string {
  return createHash('sha256')
    .update(JSON.stringify([pet.name, pet.categoryId, pet.status]))
    .digest('hex');
}

/** The operations whose keys `idempotency_keys` holds (placeOrder's live with its orders). */
export const KEYED_CREATES = ['createPet'] as const;

/**
 * The key space of a request's `Idempotency-Key`: one owner's keys for one operation, so the same
 * key sent to two operations names two requests. Stored in the `scope` column of
 * `idempotency_keys`.
 *
 * @example
 * idempotencyKeySpace('con_0123…:acme', 'createPet') // 'con_0123…:acme/createPet'
 */
export function idempotencyKeySpace(owner: string, operation: string): string {
  return `${owner}/${operation}`;
}

/**
 * Tells a store when to delete its expired keys next.
 *
 * @example
 * if (keyExpiry.due(once.now)) db.exec('DELETE FROM idempotency_keys WHERE expires_at <= ...')
 */
export class KeyExpirySchedule {
  #last = Number.NEGATIVE_INFINITY;

  /** True at most once per `KEY_EXPIRY_INTERVAL_MS`, measured on `now`. */
  due(now: number): boolean {
    if (now - this.#last < KEY_EXPIRY_INTERVAL_MS) return false;
    this.#last = now;
    return true;
  }
}
