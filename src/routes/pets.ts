import { Hono } from 'hono';
import { ApiError, methodNotAllowed } from '../errors.ts';
import type { AppEnv } from '../env.ts';
import { ListQuery, NewPet, PetParams } from '../schemas.ts';
import type { PetStore } from '../store/store.ts';
import { requireJson, validate } from '../validate.ts';

/** RFC 9745 `Deprecation`: getPet is deprecated since 2026-01-01T00:00:00Z. */
export const DEPRECATION = '@1767225600';
/** RFC 8594 `Sunset`: the day getPet is removed. */
export const SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT';
const SUCCESSOR = '</v1/pets>; rel="successor-version"';

const CURSOR_RADIX = 36;

/**
 * The three operations of the contract, under `/pets` of the `/v1` mount.
 *
 * @example
 * app.route('/v1', petRoutes(new MemoryStore()))
 */
export function petRoutes(store: PetStore) {
  const pets = new Hono<AppEnv>();

  pets.get('/pets', validate('query', ListQuery), async (c) => {
    const { limit, status, cursor } = c.req.valid('query');
    const after = cursor === undefined ? 0 : Number.parseInt(cursor, CURSOR_RADIX);
    const page = await store.list({ limit: limit + 1, status, after });
    if (page.length > limit) {
      page.length = limit;
      c.header('Link', nextLink(limit, status, page[limit - 1]?.id ?? after));
    }
    return c.json(page, 200);
  });

  pets.post('/pets', requireJson(), validate('json', NewPet), async (c) => {
    const pet = await store.create(c.req.valid('json'));
    return c.json(pet, 201, { Location: `/v1/pets/${pet.id}` });
  });

  pets.get('/pets/:petId', validate('param', PetParams), async (c) => {
    c.header('Deprecation', DEPRECATION);
    c.header('Sunset', SUNSET);
    c.header('Link', SUCCESSOR);
    const { petId } = c.req.valid('param');
    const pet = await store.get(petId);
    if (!pet) throw new ApiError('not_found', `No pet has id ${petId}.`);
    return c.json(pet, 200);
  });

  pets.all('/pets', methodNotAllowed(['GET', 'POST']));
  pets.all('/pets/:petId', methodNotAllowed(['GET']));
  return pets;
}

/** RFC 8288 link to the page after the pet with id `lastId`, keeping the caller's filters. */
function nextLink(limit: number, status: string | undefined, lastId: number): string {
  const query = new URLSearchParams({ limit: String(limit) });
  if (status) query.set('status', status);
  query.set('cursor', lastId.toString(CURSOR_RADIX));
  return `</v1/pets?${query}>; rel="next"`;
}
