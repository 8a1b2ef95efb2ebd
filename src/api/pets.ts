import { type Context, Hono } from 'hono';
import { type Clock, systemClock } from '../clock.ts';
import type { AppEnv } from '../env.ts';
import { ApiError, methodNotAllowed } from '../http/errors.ts';
import { answer, answerHeaders } from '../http/answer.ts';
import { conditional, weakEtag } from '../http/etag.ts';
import { CreateHeaders, ListQuery, NewPet, type Pet, PetParams, type PetStatus } from './schemas.ts';
import { fingerprintOf } from '../store/idempotency.ts';
import type { PetStore } from '../store/store.ts';
import { paramsOf, queryOf, requireJson, validate } from './validate.ts';
import { pageBody } from '../routes/page-body.ts';

/** RFC 9745 `Deprecation`: getPet is deprecated since 2026-01-01T00:00:00Z. */
export const DEPRECATION = '@1767225600';
/** RFC 8594 `Sunset`: the day getPet is removed. */
export const SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT';
/**
 * Links are relative references (RFC 3986 section 4.2), resolved against the request's own URL:
 * behind a proxy that serves the API under a prefix they keep it, with no header to trust.
 * From `/v1/pets/42`, `../pets` is `/v1/pets`.
 */
const SUCCESSOR = '<../pets>; rel="successor-version"';
const JSON_TYPE = 'application/json';

const CURSOR_RADIX = 36;

export interface PetRoutesOptions {
  /** Where time comes from for the 24 h of an `Idempotency-Key`; tests pass a fake one. */
  clock?: Clock;
}

/**
 * The three operations of the contract, under `/pets` of the `/v1` mount.
 *
 * @example
 * app.route('/v1', petRoutes(new MemoryStore()))
 */
export function petRoutes(store: PetStore, { clock = systemClock }: PetRoutesOptions = {}) {
  const pets = new Hono<AppEnv>();
  // Plain functions the GET handlers call rather than layers: each layer costs on every request.
  const listQuery = queryOf(ListQuery);
  const petParams = paramsOf(PetParams);

  pets.get('/pets', async (c) => {
    const { limit, status, cursor } = listQuery(c);
    const after = cursor === undefined ? 0 : Number.parseInt(cursor, CURSOR_RADIX);
    const page = await store.list({ limit: limit + 1, status, after });
    let link = '';
    if (page.length > limit) {
      link = nextLink(limit, status, page[limit - 1]?.id ?? after);
      answerHeaders(c).Link = link;
    }
    const body = pageBody(page, limit);
    // The Link is part of the page: a pet added after a full last page changes its ETag too.
    return conditional(c, body, weakEtag(body, link), JSON_TYPE);
  });

  pets.post('/pets', requireJson(), validate('header', CreateHeaders), validate('json', NewPet), async (c) => {
    const pet = c.req.valid('json');
    const key = c.req.valid('header')['idempotency-key'];
    if (key === undefined) {
      return createdAnswer(c, await store.create(pet));
    }
    const once = { scope: scopeOf(c.get('caller')), key, fingerprint: fingerprintOf(pet), now: clock.now() };
    const result = await store.createOnce(pet, once);
    if (result.outcome === 'conflict') {
      throw new ApiError(
        'idempotency_key_reused',
        'This Idempotency-Key was used in the last 24 hours with a different request body; use a new key.',
      );
    }
    if (result.outcome === 'replayed') answerHeaders(c)['Idempotent-Replayed'] = 'true';
    return createdAnswer(c, result.pet);
  });

  pets.get('/pets/:petId', async (c) => {
    const headers = answerHeaders(c);
    headers.Deprecation = DEPRECATION;
    headers.Sunset = SUNSET;
    headers.Link = SUCCESSOR;
    const { petId } = petParams(c);
    const pet = await store.get(petId);
    if (!pet) throw new ApiError('not_found', `No pet has id ${petId}.`);
    const body = JSON.stringify(pet);
    return conditional(c, body, weakEtag(body), JSON_TYPE);
  });

  pets.all('/pets', methodNotAllowed(['GET', 'POST']));
  pets.all('/pets/:petId', methodNotAllowed(['GET']));
  return pets;
}

/** The 201 of a stored (or replayed) pet, with its `Location` relative to `/v1/pets`. */
function createdAnswer(c: Context, pet: Pet): Response {
  answerHeaders(c).Location = `pets/${pet.id}`;
  return answer(c, 201, JSON.stringify(pet), JSON_TYPE);
}

/** Whose idempotency keys these are: the API key's name (requests without one never get here). */
function scopeOf(caller: AppEnv['Variables']['caller']): string {
  return caller.kind === 'consumer' ? `key:${caller.consumer.name}` : `addr:${caller.address}`;
}

/**
 * RFC 8288 link to the page after the pet with id `lastId`, keeping the caller's filters,
 * relative to `/v1/pets` (so `pets?...`: the prefix of any proxy in front is kept). Every
 * part is URL-safe as it is (a number, a status name, a base-36 cursor): no encoder on the hot path.
 */
function nextLink(limit: number, status: PetStatus | undefined, lastId: number): string {
  const filter = status ? `&status=${status}` : '';
  return `<pets?limit=${limit}${filter}&cursor=${lastId.toString(CURSOR_RADIX)}>; rel="next"`;
}
