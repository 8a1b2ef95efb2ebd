/**
 * The operations' ids, as the contract's `operationId`s: what a plan's or consumer's `costs` may
 * name (src/gateway/plans.ts). The table (src/api/operations.ts) uses exactly these, which
 * src/api/operations.test.ts checks; a list of its own so the keys file's checks need no handler.
 */
export const OPERATION_IDS = ['listPets', 'createPet', 'getPet', 'getRateLimit'] as const;
export type OperationId = (typeof OPERATION_IDS)[number];

/** Operations that read the caller's quota instead of spending it: they always cost 0. */
export const QUOTA_READERS: readonly OperationId[] = ['getRateLimit'];
