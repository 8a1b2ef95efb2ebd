// Step 7 for `GET /store/inventory`: `getInventory()` counts the store's pets by status.
// Its answer is memoised until a pet is created, removed or changes status.
import type { Reply } from '../core/reply.ts';
import type { ApiDeps } from './operation-types.ts';

/** What a count by status depends on (`Reply.reads`): every pet's status, no pet by id. */
const STATUSES = { ids: [], statuses: true };

/**
 * `GET /store/inventory`: how many pets have each status. Like a list page, the answer is memoised
 * (the table's `memo`) until a pet is created, removed or changes status, so the store counts once
 * per such change rather than once per request.
 *
 * @example
 * await getInventory(input, deps) // { status: 200, body: '{"available":2,"pending":0,"sold":1}', ... }
 */
export async function getInventory(_input: unknown, { store }: ApiDeps): Promise<Reply> {
  return { status: 200, body: JSON.stringify(await store.inventory()), type: 'application/json', reads: STATUSES };
}
