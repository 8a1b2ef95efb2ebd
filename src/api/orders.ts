// Step 7 for the orders: `placeOrder`, `getOrder`, `listOrders`, `completeOrder` and
// `cancelOrder`. Each handler sees only the caller's own orders: another consumer's order is a
// 404, like a missing one.
import { ApiError } from '../core/api-error.ts';
import type { Closing, NewOrder, StoredOrder } from '../core/order-records.ts';
import { JSON_TYPE, type Reply } from '../core/reply.ts';
import { nextPageLink } from './list-pages.ts';
import type { ApiDeps, Input } from './operation-types.ts';
import type { IdempotencyHeaders, OrderListQuery, OrderParams } from './schemas.ts';

/** An order's JSON body, with `placedAt` and `holdUntil` as RFC 3339 date-times in UTC. */
function orderBody({ id, petId, status, placedAt, holdUntil }: StoredOrder): string {
  return JSON.stringify({
    id,
    petId,
    status,
    placedAt: new Date(placedAt).toISOString(),
    holdUntil: new Date(holdUntil).toISOString(),
  });
}

/** A reply with the order's body, and the given status (200 by default) and headers. */
function orderReply(order: StoredOrder, status = 200, headers?: Record<string, string>): Reply {
  return {
    status,
    body: orderBody(order),
    type: JSON_TYPE,
    ...(headers ? { headers } : {}),
  };
}

/**
 * The 404 for an order the caller does not have. Another consumer's order gets the same answer,
 * so a caller cannot learn whether an order exists.
 */
function noSuchOrder(id: string): ApiError {
  return new ApiError('not_found', `You have no order with id ${id}.`);
}

/**
 * `POST /store/orders`: holds an available pet for the caller until `holdUntil`; the same
 * transaction makes the pet `pending`. With an `Idempotency-Key`, a retry gets a 201 with the
 * order that key placed, in its current status (`Idempotent-Replayed: true`), which may by then be
 * `completed`, `cancelled` or `expired`. The same key with another pet gets a 409.
 */
export async function placeOrder(
  { body, headers, owner }: Input<unknown, unknown, IdempotencyHeaders, NewOrder>,
  { store, clock, orderHoldMs }: ApiDeps,
): Promise<Reply> {
  const idempotencyKey = headers['idempotency-key'];
  const result = await store.placeOrder({
    owner,
    petId: body.petId,
    holdMs: orderHoldMs,
    now: clock.now(),
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
  });
  switch (result.outcome) {
    case 'pet_not_found':
      // A separate code from getPet's `not_found`, which could also mean a wrong path: this tells
      // the client that the path is right and the pet it named does not exist.
      throw new ApiError('pet_not_found', `No pet has id ${body.petId}; an order needs an existing pet.`);
    case 'pet_unavailable':
      throw new ApiError('pet_unavailable', `Pet ${body.petId} is not available: it is pending or sold.`);
    case 'conflict':
      throw new ApiError(
        'idempotency_key_reused',
        'This Idempotency-Key placed an order for another pet; use a new key for a new order.',
      );
    case 'placed':
    case 'replayed': {
      // Resolves against the request's `/v1/store/orders` to `/v1/store/orders/{id}` (RFC 3986
      // replaces the base's last segment).
      const location = { Location: `orders/${result.order.id}` };
      return orderReply(
        result.order,
        201,
        result.outcome === 'replayed' ? { ...location, 'Idempotent-Replayed': 'true' } : location,
      );
    }
  }
}

/** `GET /store/orders/{orderId}`: one of the caller's orders, or 404. */
export async function getOrder(
  { params, owner }: Input<unknown, OrderParams>,
  { store, clock }: ApiDeps,
): Promise<Reply> {
  const order = await store.getOrder(owner, params.orderId, clock.now());
  if (!order) throw noSuchOrder(params.orderId);
  return orderReply(order);
}

/**
 * `GET /store/orders`: a page of the caller's orders, ascending by id, with a `Link` to the next
 * page when there is one, like `listPets`; the cursor is the last order's id.
 */
export async function listOrders({ query, owner }: Input<OrderListQuery>, { store, clock }: ApiDeps): Promise<Reply> {
  const { limit, status, cursor } = query;
  const page = await store.listOrders(owner, { limit: limit + 1, status, after: cursor }, clock.now());
  const body = `[${page.slice(0, limit).map(orderBody).join(',')}]`;
  if (page.length <= limit) return { status: 200, body, type: JSON_TYPE };
  const lastShown = page[limit - 1]?.id ?? '';
  return { status: 200, body, type: JSON_TYPE, headers: { Link: nextPageLink('orders', limit, status, lastShown) } };
}

/** `POST /store/orders/{orderId}/complete`: marks the order `completed` and its pet `sold`. */
export const completeOrder = (input: Input<unknown, OrderParams>, deps: ApiDeps) =>
  closeOwnOrder(input, deps, 'completed');

/**
 * `POST /store/orders/{orderId}/cancel`: marks the order `cancelled` and its pet `available`
 * again.
 */
export const cancelOrder = (input: Input<unknown, OrderParams>, deps: ApiDeps) =>
  closeOwnOrder(input, deps, 'cancelled');

/**
 * Closes a placed order as `to` (`completed` or `cancelled`). Repeating the close an order already
 * had answers the order unchanged, so a retry is safe; any other change to a closed order is a 409
 * (`order_closed`).
 */
async function closeOwnOrder(
  { params, owner }: Input<unknown, OrderParams>,
  { store, clock }: ApiDeps,
  to: Closing,
): Promise<Reply> {
  const result = await store.closeOrder(owner, params.orderId, to, clock.now());
  if (result.outcome === 'not_found') throw noSuchOrder(params.orderId);
  if (result.outcome === 'order_closed') {
    throw new ApiError(
      'order_closed',
      `Order ${params.orderId} is ${result.order.status}: only a placed order can be ${to}.`,
    );
  }
  return orderReply(result.order);
}
