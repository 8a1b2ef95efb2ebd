import type { Reply } from '../core/reply.ts';
import type { ApiDeps } from './operation.ts';

/**
 * `GET /store/inventory`: how many pets have each status. The answer is kept by the store's
 * version as list pages are (the table's `memo`), so the count is made once per change of the
 * store, not once per request.
 *
 * @example
 * await getInventory(input, deps) // { status: 200, body: '{"available":2,"pending":0,"sold":1}', ... }
 */
export async function getInventory(_input: unknown, { store }: ApiDeps): Promise<Reply> {
  return { status: 200, body: JSON.stringify(await store.inventory()), type: 'application/json' };
}
