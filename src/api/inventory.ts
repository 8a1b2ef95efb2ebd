// Step 7 for `GET /store/inventory`: `getInventory()` counts the store's pets by status.
// Its answer is memoised until a pet's status changes or a pet comes or goes.
import type { Reply } from '../core/reply.ts';
import type { ApiDeps } from './operation-types.ts';

/** What a count by status reads: every pet's status, none by id. */
const STATUSES = { ids: [], statuses: true };

/**
 * `GET /store/inventory`: how many pets have each status. The answer is memoised as list pages are
 * (the table's `memo`) until a pet's status changes or a pet comes or goes, so the count is made
 * once per such change, not once per request.
 *
 * @example
 * await getInventory(input, deps) // { status: 200, body: '{"available":2,"pending":0,"sold":1}', ... }
 */
export async function getInventory(_input: unknown, { store }: ApiDeps): Promise<Reply> {
  return { status: 200, body: JSON.stringify(await store.inventory()), type: 'application/json', reads: STATUSES };
}
