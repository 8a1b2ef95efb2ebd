// The API's operations table: one entry per operation of contract/openapi.yaml, each with its
// method, path, scope, schemas and handler. src/app.ts makes one route per entry.
import type { OperationId } from '../core/operation-ids.ts';
import { NewOrder } from '../core/order-records.ts';
import { isUnder } from '../core/paths.ts';
import { NewPet, PetPatch } from '../core/pet-records.ts';
import { getInventory } from './inventory.ts';
import { defineOperation, type Operation } from './operation-types.ts';
import { cancelOrder, completeOrder, getOrder, listOrders, placeOrder } from './orders.ts';
import { createPet, deletePet, getPet, listPets, updatePet } from './pets.ts';
import { getRateLimit } from './rate-limit.ts';
import {
  ConditionalHeaders,
  IdempotencyHeaders,
  ListQuery,
  ORDER_LIST_MUST_BE,
  OrderListQuery,
  OrderParams,
  PetParams,
} from './schemas.ts';

/** The version segment every API path starts with. */
export const API_PREFIX = '/v1';

/**
 * Every operation of the API, once. The routes, the scope check, the metrics labels and the
 * deprecation headers all come from it; src/api/operations.test.ts checks that it matches
 * contract/openapi.yaml, and lists the ids of `OPERATION_IDS` (src/core/operation-ids.ts), which
 * types each entry's `id`. To add an operation: src/api/README.md, "Adding an operation".
 */
export const OPERATIONS: readonly Operation[] = [
  defineOperation({
    id: 'listPets',
    stability: 'stable',
    method: 'GET',
    path: '/pets',
    scope: 'pets:read',
    query: ListQuery,
    weakEtag: true,
    memo: true,
    waitsForDueOrderExpiry: true,
    handler: listPets,
  }),
  defineOperation({
    id: 'createPet',
    stability: 'stable',
    method: 'POST',
    path: '/pets',
    scope: 'pets:write',
    headers: IdempotencyHeaders,
    body: NewPet,
    weakEtag: false,
    memo: false,
    waitsForDueOrderExpiry: false,
    handler: createPet,
  }),
  defineOperation({
    id: 'getPet',
    stability: 'stable',
    method: 'GET',
    path: '/pets/:petId',
    scope: 'pets:read',
    params: PetParams,
    // Deprecation is separate from stability: this is a stable operation due for removal. The
    // interface specification deprecates it and sets the sunset; the replacement is `GET /pets`
    // with the `status` filter, as the specification decides (it cannot fetch one pet by id). It
    // gives no start date, so `since` is the service's own
    // (docs/decisions/deprecation.md).
    deprecated: { since: '2026-01-01T00:00:00Z', sunset: '2030-12-05T00:00:00Z', successor: '../pets' },
    // Tagged by its handler: the pet's strong ETag, from its version.
    weakEtag: false,
    memo: true,
    waitsForDueOrderExpiry: true,
    handler: getPet,
  }),
  defineOperation({
    id: 'updatePet',
    stability: 'stable',
    method: 'PATCH',
    path: '/pets/:petId',
    scope: 'pets:write',
    params: PetParams,
    headers: ConditionalHeaders,
    body: PetPatch,
    bodyTypes: ['application/merge-patch+json', 'application/json'],
    // Tagged by its handler: the pet's strong ETag, from its new version.
    weakEtag: false,
    memo: false,
    waitsForDueOrderExpiry: false,
    handler: updatePet,
  }),
  defineOperation({
    id: 'deletePet',
    stability: 'stable',
    method: 'DELETE',
    path: '/pets/:petId',
    scope: 'pets:write',
    params: PetParams,
    headers: ConditionalHeaders,
    weakEtag: false,
    memo: false,
    waitsForDueOrderExpiry: false,
    handler: deletePet,
  }),
  defineOperation({
    id: 'getRateLimit',
    stability: 'stable',
    method: 'GET',
    path: '/rate_limit',
    // No scope: any valid key can read its own quota (the contract's `x-scopes: []`).
    readsQuota: true,
    weakEtag: false,
    memo: false,
    waitsForDueOrderExpiry: false,
    handler: getRateLimit,
  }),
  defineOperation({
    id: 'getInventory',
    stability: 'experimental',
    method: 'GET',
    path: '/store/inventory',
    scope: 'pets:read',
    weakEtag: true,
    memo: true,
    waitsForDueOrderExpiry: true,
    handler: getInventory,
  }),
  // Orders belong to each caller, but the memo keys a reply by its path and query alone, so no
  // order operation is memoised. None has a weak ETag either: the contract gives the order
  // operations no `ETag`, `If-None-Match` nor 304.
  defineOperation({
    id: 'placeOrder',
    stability: 'beta',
    method: 'POST',
    path: '/store/orders',
    scope: 'orders:write',
    headers: IdempotencyHeaders,
    body: NewOrder,
    weakEtag: false,
    memo: false,
    waitsForDueOrderExpiry: false,
    handler: placeOrder,
  }),
  defineOperation({
    id: 'listOrders',
    stability: 'beta',
    method: 'GET',
    path: '/store/orders',
    scope: 'orders:read',
    query: OrderListQuery,
    mustBe: ORDER_LIST_MUST_BE,
    weakEtag: false,
    memo: false,
    waitsForDueOrderExpiry: false,
    handler: listOrders,
  }),
  defineOperation({
    id: 'getOrder',
    stability: 'beta',
    method: 'GET',
    path: '/store/orders/:orderId',
    scope: 'orders:read',
    params: OrderParams,
    weakEtag: false,
    memo: false,
    waitsForDueOrderExpiry: false,
    handler: getOrder,
  }),
  defineOperation({
    id: 'completeOrder',
    stability: 'beta',
    method: 'POST',
    path: '/store/orders/:orderId/complete',
    scope: 'orders:write',
    params: OrderParams,
    weakEtag: false,
    memo: false,
    waitsForDueOrderExpiry: false,
    handler: completeOrder,
  }),
  defineOperation({
    id: 'cancelOrder',
    stability: 'beta',
    method: 'POST',
    path: '/store/orders/:orderId/cancel',
    scope: 'orders:write',
    params: OrderParams,
    weakEtag: false,
    memo: false,
    waitsForDueOrderExpiry: false,
    handler: cancelOrder,
  }),
] satisfies readonly { readonly id: OperationId }[];

/**
 * Returns the operations an instance serves: the stable and beta ones, plus the experimental ones
 * with `--experimental`. An operation not served answers like an unknown path, and the served
 * contract (`/openapi.*`) leaves it out.
 *
 * @example
 * servedOperations(false).some((op) => op.stability === 'experimental') // false
 */
export function servedOperations(experimental: boolean): readonly Operation[] {
  return experimental ? OPERATIONS : OPERATIONS.filter((op) => op.stability !== 'experimental');
}

/**
 * Returns whether `path` is under the API prefix, where the gateway checks every request, even to
 * an unknown path (401 before 404, so a caller without a key learns nothing about paths).
 *
 * @example
 * isApiPath('/v1/pets/7') // true
 * isApiPath('/v10') // false
 */
export function isApiPath(path: string): boolean {
  return isUnder(API_PREFIX, path);
}
