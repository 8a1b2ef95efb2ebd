// A pet's records, shared by the API and the store: the schemas `NewPet`, `Pet` and `PetPatch`,
// `StoredPet` (a pet and its version), and which status may follow which (`mayBecome()`).
import * as v from 'valibot';

/** The largest id or categoryId: a JavaScript number holds integers exactly only up to 2^53 - 1. */
export const MAX_ID = Number.MAX_SAFE_INTEGER;
/** The longest pet name accepted, in Unicode code points (as JSON Schema counts). */
export const NAME_MAX_LENGTH = 100;

/** Availability of an animal. */
export const PetStatus = v.picklist(['available', 'pending', 'sold']);
export type PetStatus = v.InferOutput<typeof PetStatus>;

const Id = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_ID));

const Name = v.pipe(
  v.string(),
  v.minLength(1),
  // PostgreSQL cannot store U+0000 in text; refusing it everywhere keeps the backends consistent.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching U+0000 is the point.
  v.regex(/^[^\u0000]*$/),
  v.check((s) => codePoints(s) <= NAME_MAX_LENGTH),
);

/** Request body of `createPet`; unknown fields are refused so typos do not pass silently. */
export const NewPet = v.strictObject({
  name: Name,
  categoryId: Id,
  status: v.optional(PetStatus, 'available'),
});
export type NewPet = v.InferOutput<typeof NewPet>;

/** A stored animal; `status` is always present (a pet created without one is `available`). */
export const Pet = v.strictObject({
  id: Id,
  name: Name,
  categoryId: Id,
  status: PetStatus,
});
export type Pet = v.InferOutput<typeof Pet>;

/**
 * A pet as the store keeps it. `version` changes with every change to the pet, gives its strong
 * `ETag` (src/core/preconditions.ts) and is never in the Pet body. Memory and SQLite count each
 * pet's versions; PostgreSQL takes them from one sequence, so they increase with gaps. Either way
 * a client only compares tags for equality.
 */
export type StoredPet = Pet & { readonly version: number };

/**
 * The body of `updatePet`, a JSON Merge Patch (RFC 7396) of a Pet: every member is optional, none
 * may be `null` (each is required on a Pet, so it cannot be removed), and unknown ones are refused.
 */
export const PetPatch = v.strictObject({
  name: v.optional(Name),
  categoryId: v.optional(Id),
  status: v.optional(PetStatus),
});
export type PetPatch = v.InferOutput<typeof PetPatch>;

/**
 * The statuses a pet may move to from each status; `sold` is final. A patch that keeps the
 * current status is not a transition and is always allowed.
 */
export const NEXT_STATUSES: Readonly<Record<PetStatus, readonly PetStatus[]>> = {
  available: ['pending', 'sold'],
  pending: ['available', 'sold'],
  sold: [],
};

/**
 * Returns whether a pet with status `from` may be given status `to`.
 *
 * @example
 * mayBecome('available', 'sold') // true
 * mayBecome('sold', 'available') // false
 */
export function mayBecome(from: PetStatus, to: PetStatus): boolean {
  return from === to || NEXT_STATUSES[from].includes(to);
}

/**
 * Returns the pet as its body shows it, without its version.
 *
 * @example
 * petOf({ id: 1, name: 'Rex', categoryId: 1, status: 'sold', version: 3 }) // { id: 1, name: 'Rex', categoryId: 1, status: 'sold' }
 */
export function petOf(stored: StoredPet): Pet {
  return { id: stored.id, name: stored.name, categoryId: stored.categoryId, status: stored.status };
}
/** How many pets have each status: `getInventory`'s answer. */
export type Inventory = { -readonly [S in PetStatus]: number };

function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}
