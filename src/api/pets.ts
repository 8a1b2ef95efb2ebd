// Step 7 for the pets: the handlers of list, create, get, change and delete. Each handler gets
// its validated input and the store, and returns a `Reply` (src/core/reply.ts) rather than
// writing a response.
import { ApiError } from '../core/api-error.ts';
import {
  NEXT_STATUSES,
  type NewPet,
  type Pet,
  type PetPatch,
  type PetStatus,
  petOf,
  type StoredPet,
} from '../core/pet-records.ts';
import { ifMatchOf, petEtag } from '../core/preconditions.ts';
import { JSON_TYPE, type PetSet, type Reply } from '../core/reply.ts';
import { fingerprintOf, IDEMPOTENCY_TTL_MS } from '../store/idempotency.ts';
import { nextPageLink } from './list-pages.ts';
import type { ApiDeps, Input } from './operation-types.ts';
import type { ConditionalHeaders, IdempotencyHeaders, ListQuery, PetParams } from './schemas.ts';

const CURSOR_RADIX = 36;
/**
 * The most ids a full page lists as read. When more ids than this lie between the cursor and the
 * extra row read past the page (many pets were removed), the page depends on every create instead.
 */
const MOST_IDS_READ = 1_000;

/**
 * `GET /pets`: a page of pets after the cursor, ascending by id, with a `Link` to the next page
 * when there is one.
 *
 * @example
 * await listPets({ query: { limit: 20 }, ... }, deps) // { status: 200, body: '[...]', headers: { Link } }
 */
export async function listPets({ query }: Input<ListQuery>, { store }: ApiDeps): Promise<Reply> {
  const { limit, status, cursor } = query;
  const after = cursor === undefined ? 0 : Number.parseInt(cursor, CURSOR_RADIX);
  // Read one more than asked to learn whether a next page exists.
  const page = await store.list({ limit: limit + 1, status, after });
  const full = page.length > limit;
  const reads = pageReads(page, after, full, status !== undefined);
  if (!full) return { status: 200, body: JSON.stringify(page), type: JSON_TYPE, reads };
  const lastShown = page[limit - 1]?.id ?? after;
  return {
    status: 200,
    body: JSON.stringify(page.slice(0, limit)),
    type: JSON_TYPE,
    headers: { Link: nextPageLink('pets', limit, status, lastShown.toString(CURSOR_RADIX)) },
    reads,
  };
}

/**
 * Returns the pets a page depends on (`Reply.reads`), which the memo checks. A full page depends
 * on every id from its cursor to the extra row read past it: changing or removing one changes the
 * page, and so does a create in that range, since on PostgreSQL a create can commit after one
 * with a higher id. The last page also depends on every create and removal (`members`), and a
 * filtered page on every status change.
 */
function pageReads(page: readonly Pet[], after: number, full: boolean, filtered: boolean): PetSet {
  const probe = page.at(-1)?.id ?? after;
  if (!full || probe - after > MOST_IDS_READ) {
    return { ids: page.map((pet) => pet.id), members: true, statuses: filtered };
  }
  return { ids: Array.from({ length: probe - after }, (_, i) => after + 1 + i), statuses: filtered };
}

/**
 * `POST /pets`: stores the pet and answers 201. With an `Idempotency-Key`, a retry gets the first
 * create's 201 again (`Idempotent-Replayed: true`), showing the pet and ETag as they were then,
 * even if the pet has since changed or been removed. A different body with the same key gets 409.
 */
export async function createPet(
  { body, headers, owner }: Input<unknown, unknown, IdempotencyHeaders, NewPet>,
  { store, clock }: ApiDeps,
): Promise<Reply> {
  const key = headers['idempotency-key'];
  if (key === undefined) return createdReply(await store.create(body));
  const once = { owner, key, fingerprint: fingerprintOf(body), now: clock.now() };
  const result = await store.createOnce(body, once);
  if (result.outcome === 'conflict') {
    throw new ApiError(
      'idempotency_key_reused',
      `This Idempotency-Key was used in the last ${IDEMPOTENCY_TTL_MS / 3_600_000} hours with a different request body; use a new key.`,
    );
  }
  return createdReply(result.pet, result.outcome === 'replayed');
}

/** `GET /pets/{petId}`: one pet with its strong `ETag`, or 404. */
export async function getPet({ params }: Input<unknown, PetParams>, { store }: ApiDeps): Promise<Reply> {
  const { petId } = params;
  const pet = await store.get(petId);
  if (!pet) throw noSuchPet(petId);
  return petReply(200, pet, undefined, { ids: [petId] });
}

/**
 * `PATCH /pets/{petId}`: applies a JSON Merge Patch of the pet's name, category and status when
 * the pet still has the version `If-Match` names (any version when the header is absent). It
 * answers 200 with the whole pet and its new `ETag`. A status change must be a transition of
 * `NEXT_STATUSES`.
 */
export async function updatePet(
  { params, headers, body }: Input<unknown, PetParams, ConditionalHeaders, PetPatch>,
  { store }: ApiDeps,
): Promise<Reply> {
  const { petId } = params;
  const result = await store.update(petId, body, ifMatchOf(headers['if-match'], petId));
  switch (result.outcome) {
    case 'updated':
      return petReply(200, result.pet);
    case 'not_found':
      throw noSuchPet(petId);
    case 'stale':
      throw stale(petId);
    case 'on_order':
      throw onOrder(petId, 'its status cannot change until the order is completed or cancelled');
    case 'invalid_transition':
      throw notATransition(result.pet.status, result.to);
  }
}

/**
 * `DELETE /pets/{petId}`: removes the pet when it still has the version `If-Match` names (any
 * version when the header is absent), and answers 204. Its id is never given to another pet.
 */
export async function deletePet(
  { params, headers }: Input<unknown, PetParams, ConditionalHeaders>,
  { store }: ApiDeps,
): Promise<Reply> {
  const { petId } = params;
  const result = await store.remove(petId, ifMatchOf(headers['if-match'], petId));
  switch (result.outcome) {
    case 'removed':
      return { status: 204 };
    case 'not_found':
      throw noSuchPet(petId);
    case 'stale':
      throw stale(petId);
    case 'on_order':
      throw onOrder(petId, 'it cannot be removed until the order is completed or cancelled');
  }
}

/**
 * The 201 of a stored (or replayed) pet, with `Location: pets/{id}`. That relative URL resolves
 * against the request's `/v1/pets` to `/v1/pets/{id}` (RFC 3986 replaces the base's last segment).
 */
function createdReply(pet: StoredPet, replayed = false): Reply {
  const headers: Record<string, string> = { Location: `pets/${pet.id}` };
  if (replayed) headers['Idempotent-Replayed'] = 'true';
  return petReply(201, pet, headers);
}

/**
 * A reply whose body is one pet, with the pet's strong `ETag` (src/core/preconditions.ts), and
 * what it read (`reads`) when it is memoised. Every pet answer has this one shape, `headers` and
 * `reads` undefined when not given.
 */
function petReply(status: number, pet: StoredPet, headers?: Record<string, string>, reads?: PetSet): Reply {
  const body = JSON.stringify(petOf(pet));
  const etag = petEtag(pet.id, pet.version);
  return { status, body, type: JSON_TYPE, etag, headers, reads };
}

/** The 404 for a GET, PATCH or DELETE of a pet id that does not exist. */
function noSuchPet(petId: number): ApiError {
  return new ApiError('not_found', `No pet has id ${petId}.`);
}

/** The 412 of a PATCH or DELETE whose `If-Match` is not the pet's current strong `ETag`. */
function stale(petId: number): ApiError {
  return new ApiError(
    'precondition_failed',
    `Pet ${petId} has changed since the ETag sent in If-Match; nothing was changed. ` +
      'Read its current ETag (PATCH with {} changes nothing and answers it), then decide again.',
  );
}

/** The 409 for a status change or DELETE of a pet an open order holds; `consequence` says which. */
function onOrder(petId: number, consequence: string): ApiError {
  return new ApiError('pet_on_order', `Pet ${petId} is held by an open order: ${consequence}.`);
}

/**
 * The 409 for a status change that `NEXT_STATUSES` does not allow, naming the statuses allowed.
 *
 * @example
 * notATransition('sold', 'available').message
 * // 'status: a sold pet cannot become available; sold is final: its status never changes.'
 */
function notATransition(from: PetStatus, to: PetStatus): ApiError {
  const next = NEXT_STATUSES[from];
  const allowed =
    next.length === 0 ? `${from} is final: its status never changes` : `it may become ${next.join(' or ')}`;
  return new ApiError('invalid_transition', `status: a ${from} pet cannot become ${to}; ${allowed}.`);
}
