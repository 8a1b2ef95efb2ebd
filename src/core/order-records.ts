// An order's records, shared by the API and the store: `OrderStatus`, `NewOrder` (the body of
// `placeOrder`), `StoredOrder`, `ORDER_ID_PATTERN`, and the pet's status when an order closes.
import * as v from 'valibot';
import { MAX_ID } from './pet-records.ts';

/** A placed order's hold when `--order-hold` does not say: 30 minutes. */
export const DEFAULT_ORDER_HOLD_MS = 30 * 60 * 1_000;

/** Where an order is: `placed` holds its pet; the others are closed and final. */
export const OrderStatus = v.picklist(['placed', 'completed', 'cancelled', 'expired']);
export type OrderStatus = v.InferOutput<typeof OrderStatus>;

/** How a placed order may be closed by its owner. */
export type Closing = 'completed' | 'cancelled';

/**
 * The status an order's pet takes when the order closes so: a completed order sells it, a cancelled
 * one gives it back.
 */
export const petStatusOnClose = (to: Closing): 'sold' | 'available' => (to === 'completed' ? 'sold' : 'available');

/**
 * An order's id: `ord_` and 32 hex digits, the time it was placed then random bits, so ids tell
 * nothing of how many there are.
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
  /** Until when a placed order holds its pet; past it, the order is `expired`. */
  readonly holdUntil: number;
}
