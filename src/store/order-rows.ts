// The order helpers every backend shares: ids, rows, the owner a removed consumer's orders move
// to, and the outbox event of an expired order.
import { createHash, randomBytes } from 'node:crypto';
import type { OrderStatus, StoredOrder } from '../core/order-records.ts';
import type { OutboxEvent } from './outbox.ts';
import { column } from './sql/pet-rows.ts';
import { StoreError } from './store-error.ts';

/**
 * A new order id: `ord_`, the epoch milliseconds in hex, then random bits. The random part means
 * an id reveals nothing about order volume and cannot be guessed from another; the time prefix
 * puts new ids at the end of the indexes, so a listing follows creation order.
 */
export function newOrderId(now = Date.now()): string {
  return `ord_${now.toString(16).padStart(12, '0')}${randomBytes(10).toString('hex')}`;
}

/** The owner a removed consumer's orders move to: never a caller's, never reused. */
export function retiredOwner(owner: string): string {
  return `retired:${randomBytes(16).toString('hex')}:${owner}`;
}

/**
 * The type of the event an expired order records. It is recorded whether or not the consumer has
 * a webhook, since the store does not know the keys; for a consumer without one it is dropped,
 * not failed.
 */
export const ORDER_EXPIRED = 'order.expired';

/**
 * An owner that is a consumer, as `ownerOf` writes it (src/keys/records.ts): its id, then its name.
 */
const CONSUMER_OWNER = /^con_[0-9a-f]{32}:(.+)$/;

/**
 * The consumer whose webhook hears of an owner's orders: `acme` for `con_…:acme` and for the
 * legacy owner `key:acme` (ARCHITECTURE.md's glossary); undefined for an address or a retired
 * owner.
 */
export function consumerOf(owner: string): string | undefined {
  return CONSUMER_OWNER.exec(owner)?.[1] ?? (owner.startsWith('key:') ? owner.slice('key:'.length) : undefined);
}

/**
 * The outbox record of an expired order, for its owner's webhook. Its id is a digest of the
 * order's id, so however many instances expire the order, one event is recorded and delivered.
 * Undefined for an owner that is not a consumer.
 *
 * @example
 * orderExpiredEvent('con_0123…:acme', order, Date.now()) // { id: 'msg_…', type: 'order.expired', … }
 */
export function orderExpiredEvent(owner: string, order: StoredOrder, at: number): OutboxEvent | undefined {
  const consumer = consumerOf(owner);
  if (consumer === undefined) return undefined;
  const type = ORDER_EXPIRED;
  const data = {
    consumer,
    order: {
      id: order.id,
      petId: order.petId,
      status: 'expired',
      placedAt: iso(order.placedAt),
      holdUntil: iso(order.holdUntil),
    },
  };
  return {
    id: `msg_${createHash('sha256').update(`${type}\n${order.id}`).digest('hex').slice(0, 32)}`,
    consumer,
    type,
    payload: JSON.stringify({ type, timestamp: new Date(at).toISOString(), data }),
    createdAt: at,
  };
}

/** Epoch ms as an RFC 3339 date-time in UTC, milliseconds kept. */
export const iso = (ms: number): string => new Date(ms).toISOString();

const STATUSES: ReadonlySet<unknown> = new Set(['placed', 'completed', 'cancelled', 'expired']);

/**
 * Turns a row of `ORDER_COLUMNS` (times in epoch ms) into an order; throws `StoreError` on a
 * malformed row.
 *
 * @example
 * orderFromRow({ id: 'ord_…', pet_id: 1, status: 'placed', placed_at: 1, hold_until: 2 })
 */
export function orderFromRow(row: unknown): StoredOrder {
  const id = column(row, 'id');
  const petId = Number(column(row, 'pet_id'));
  const status = column(row, 'status');
  const placedAt = Number(column(row, 'placed_at'));
  const holdUntil = Number(column(row, 'hold_until'));
  if (typeof id !== 'string' || !STATUSES.has(status) || ![petId, placedAt, holdUntil].every(Number.isSafeInteger)) {
    throw new StoreError('unexpected row in orders');
  }
  return { id, petId, status: status as OrderStatus, placedAt, holdUntil };
}

/** The columns every order query selects. */
export const ORDER_COLUMNS = 'id, pet_id, status, placed_at, hold_until';
