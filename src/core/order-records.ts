// An order's records, shared by the API and the store: `OrderStatus`, `NewOrder` (the body of
// `placeOrder`), `StoredOrder`, `ORDER_ID_PATTERN`, and the pet's status when an order closes.
import * as v from 'valibot';
import { MAX_ID } from './pet-records.ts';

/** How long a placed order holds its pet when `--order-hold` is not given. */
export const DEFAULT_ORDER_HOLD_MS = 30 * 60 * 1_000;

/** An order's status: `placed` holds its pet; the others are closed and final. */
export const OrderStatus = v.picklist(['placed', 'completed', 'cancelled', 'expired']);
export type OrderStatus = v.InferOutput<typeof OrderStatus>;

/** How a placed order may be closed by its owner. */
export type Closing = 'completed' | 'cancelled';

/**
 * The status an order's pet takes when the order closes this way: a completed order sells it, a
 * cancelled one makes it available again.
 */
export const petStatusOnClose = (to: Closing): 'sold' | 'available' => (to === 'completed' ? 'sold' : 'available');

/**
 * An order's id: `ord_` and 32 hex digits, the time it was placed followed by random bits, so ids
 * reveal nothing about how many orders there are.
 */
export const ORDER_ID_PATTERN = /^ord_[0-9a-f]{32}$/;

/** Request body of `placeOrder`. */
export const NewOrder = v.strictObject({
  petId: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_ID)),
});
export type NewOrder = v.InferOutput<typeof NewOrder>;

/** An order as the store keeps it; times in epoch ms. */
export interface StoredOrder {
  readonly id: string;
  readonly petId: number;
  readonly status: OrderStatus;
  /** When it was placed, on the store's clock. */
  readonly placedAt: number;
  /** When a placed order stops holding its pet; after it, the order is `expired`. */
  readonly holdUntil: number;
}
