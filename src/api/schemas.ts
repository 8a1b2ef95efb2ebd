// The valibot schemas of the API's query, path and header input that step 7 checks (`ListQuery`,
// `PetParams`, `OrderParams`, `IdempotencyHeaders`, …), and `MUST_BE`, the wording of a 400 per
// field. The body schemas (`NewPet`, `PetPatch`, `NewOrder`) are in src/core/pet-records.ts and
// src/core/order-records.ts.
import * as v from 'valibot';
import { ORDER_ID_PATTERN, OrderStatus } from '../core/order-records.ts';
import { MAX_ID, NAME_MAX_LENGTH, PetStatus } from '../core/pet-records.ts';

export const PAGE_SIZE_DEFAULT = 20;
export const PAGE_SIZE_MAX = 100;

/**
 * An integer in a query or path: up to 16 digits, then optionally a point and one or more zeros
 * (`7.0`, `7.000`), since JSON Schema counts such a number as an integer too. `Number()` alone
 * would also take texts the contract refuses, such as "1e3", " 7" and "0x10".
 */
const IntegerText = v.pipe(v.string(), v.regex(/^[0-9]{1,16}(\.0+)?$/), v.transform(Number));

/** The cursor is the last id of the previous page in base 36; clients treat it as opaque. */
export const CURSOR_PATTERN = /^[0-9a-z]{1,11}$/;

/** Query of `listPets`. */
export const ListQuery = v.object({
  limit: v.optional(v.pipe(IntegerText, v.minValue(1), v.maxValue(PAGE_SIZE_MAX)), String(PAGE_SIZE_DEFAULT)),
  status: v.optional(PetStatus),
  cursor: v.optional(v.pipe(v.string(), v.regex(CURSOR_PATTERN))),
});
export type ListQuery = v.InferOutput<typeof ListQuery>;

/** An `Idempotency-Key`: 1 to 255 visible ASCII characters, `!` to `~` (no spaces). */
export const IDEMPOTENCY_KEY_PATTERN = /^[!-~]{1,255}$/;

/** Headers of `createPet` and `placeOrder` (lower-cased by Hono): an optional `Idempotency-Key`. */
export const IdempotencyHeaders = v.object({
  'idempotency-key': v.optional(v.pipe(v.string(), v.regex(IDEMPOTENCY_KEY_PATTERN))),
});
export type IdempotencyHeaders = v.InferOutput<typeof IdempotencyHeaders>;

/**
 * What each request field accepts, in the contract's words: a 400 about a field says
 * `<field>: must be <this>.` The message never quotes the value, because a large JSON number
 * reaches the schema already rounded. The contract shows these messages (src/api/contract.test.ts).
 */
export const MUST_BE: Readonly<Record<string, string>> = {
  limit: `an integer from 1 to ${PAGE_SIZE_MAX}`,
  status: `one of ${PetStatus.options.join(', ')}`,
  cursor: 'the cursor of a Link header (1 to 11 characters of 0-9 and a-z)',
  petId: `an integer from 1 to ${MAX_ID}`,
  categoryId: `an integer from 1 to ${MAX_ID}`,
  name: `a string of 1 to ${NAME_MAX_LENGTH} characters without the NUL character U+0000`,
  'Idempotency-Key': '1 to 255 visible ASCII characters (! to ~, no spaces)',
  orderId: 'an order id: ord_ and 32 hex digits (0-9, a-f)',
};

/**
 * Headers of `updatePet` and `deletePet`: an optional `If-Match` of any text (a value that does
 * not match the pet's current ETag gets 412, as RFC 9110 says).
 */
export const ConditionalHeaders = v.object({
  'if-match': v.optional(v.string()),
});
export type ConditionalHeaders = v.InferOutput<typeof ConditionalHeaders>;

/** `MUST_BE` for the orders' listing, whose `status` and `cursor` are an order's. */
export const ORDER_LIST_MUST_BE: Readonly<Record<string, string>> = {
  ...MUST_BE,
  status: `one of ${OrderStatus.options.join(', ')}`,
  cursor: 'the cursor of a Link header (ord_ and 32 hex digits)',
};

/** Path of the operations on one order. */
export const OrderParams = v.object({
  orderId: v.pipe(v.string(), v.regex(ORDER_ID_PATTERN)),
});
export type OrderParams = v.InferOutput<typeof OrderParams>;

/** Query of `listOrders`: paged as `listPets`, filtered by an order's status. */
export const OrderListQuery = v.object({
  limit: ListQuery.entries.limit,
  status: v.optional(OrderStatus),
  cursor: v.optional(v.pipe(v.string(), v.regex(ORDER_ID_PATTERN))),
});
export type OrderListQuery = v.InferOutput<typeof OrderListQuery>;

/** Path of `getPet`, `updatePet` and `deletePet`. */
export const PetParams = v.object({
  petId: v.pipe(IntegerText, v.minValue(1), v.maxValue(MAX_ID)),
});
export type PetParams = v.InferOutput<typeof PetParams>;
