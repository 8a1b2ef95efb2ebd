// The API's operation ids and which of them read the caller's quota: what the keys file's `costs`
// may name (src/keys/), without the operations table and its handlers (src/api/operations.ts).

/**
 * Every operation of the API by its contract `operationId`, in the order of the operations table
 * (src/api/operations.ts), whose entries are typed by it. src/api/operations.test.ts checks that
 * the two list the same ids in the same order.
 */
export const OPERATION_IDS = [
  'listPets',
  'createPet',
  'getPet',
  'updatePet',
  'deletePet',
  'getRateLimit',
  'getInventory',
  'placeOrder',
  'listOrders',
  'getOrder',
  'completeOrder',
  'cancelOrder',
] as const;
export type OperationId = (typeof OPERATION_IDS)[number];

/**
 * The operations that read the caller's quota instead of spending it (the table's `readsQuota`):
 * they cost 0, whatever `costs` says.
 */
export const QUOTA_READERS: readonly OperationId[] = ['getRateLimit'];

/** The operations `costs` may name: all but those that read the quota. */
export const COSTED_OPERATIONS: readonly string[] = OPERATION_IDS.filter((id) => !QUOTA_READERS.includes(id));
