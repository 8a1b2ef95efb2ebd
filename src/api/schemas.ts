import * as v from 'valibot';

/** Largest id or categoryId: a JavaScript number holds integers exactly only up to 2^53 - 1. */
export const MAX_ID = Number.MAX_SAFE_INTEGER;
/** Longest accepted pet name, in Unicode code points (JSON Schema counts code points too). */
export const NAME_MAX_LENGTH = 100;
export const PAGE_SIZE_DEFAULT = 20;
export const PAGE_SIZE_MAX = 100;

/** Availability of an animal. */
export const PetStatus = v.picklist(['available', 'pending', 'sold']);
export type PetStatus = v.InferOutput<typeof PetStatus>;

const Id = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_ID));

const Name = v.pipe(
  v.string(),
  v.minLength(1),
  // PostgreSQL cannot store U+0000 in text; refusing it everywhere keeps the backends alike.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching U+0000 is the point.
  v.regex(/^[^\u0000]*$/, 'must not contain the NUL character U+0000'),
  v.check((s) => codePoints(s) <= NAME_MAX_LENGTH, `must be at most ${NAME_MAX_LENGTH} characters`),
);

/** Request body of `createPet`; unknown fields are refused so typos do not pass silently. */
export const NewPet = v.strictObject({
  name: Name,
  categoryId: Id,
  status: v.optional(PetStatus, 'available'),
});
export type NewPet = v.InferOutput<typeof NewPet>;

/** A stored animal; `status` is always present (a pet created without one got `available`). */
export const Pet = v.strictObject({
  id: Id,
  name: Name,
  categoryId: Id,
  status: PetStatus,
});
export type Pet = v.InferOutput<typeof Pet>;

/** Stable, documented values of `Error.code`. */
export const ERROR_CODES = [
  'invalid_request',
  'unauthorized',
  'insufficient_scope',
  'not_found',
  'method_not_allowed',
  'idempotency_key_reused',
  'conflict',
  'payload_too_large',
  'uri_too_long',
  'unsupported_media_type',
  'rate_limited',
  'key_banned',
  'too_many_concurrent_requests',
  'internal_error',
  'service_unavailable',
] as const;
export const ErrorCode = v.picklist(ERROR_CODES);
export type ErrorCode = v.InferOutput<typeof ErrorCode>;

/** The body of every error response. */
export const ErrorBody = v.strictObject({
  code: ErrorCode,
  message: v.string(),
  status: v.pipe(v.number(), v.integer(), v.minValue(400), v.maxValue(599)),
});
export type ErrorBody = v.InferOutput<typeof ErrorBody>;

/** Digits only: `Number()` would also take "1e3", " 7" or "0x10". */
const IntegerText = v.pipe(v.string(), v.regex(/^[0-9]{1,16}$/, 'must be a whole number'), v.transform(Number));

/** The cursor is the last id of the previous page in base 36; clients treat it as opaque. */
export const CURSOR_PATTERN = /^[0-9a-z]{1,11}$/;

/** Query of `listPets`. */
export const ListQuery = v.object({
  limit: v.optional(v.pipe(IntegerText, v.minValue(1), v.maxValue(PAGE_SIZE_MAX)), String(PAGE_SIZE_DEFAULT)),
  status: v.optional(PetStatus),
  cursor: v.optional(v.pipe(v.string(), v.regex(CURSOR_PATTERN, 'must be a cursor from a Link header'))),
});
export type ListQuery = v.InferOutput<typeof ListQuery>;

/** An `Idempotency-Key`: 1 to 255 visible ASCII characters, `!` to `~` (no spaces). */
export const IDEMPOTENCY_KEY_PATTERN = /^[!-~]{1,255}$/;

/** Headers of `createPet` (Hono hands them over lower-cased): an optional `Idempotency-Key`. */
export const CreateHeaders = v.object({
  'idempotency-key': v.optional(
    v.pipe(v.string(), v.regex(IDEMPOTENCY_KEY_PATTERN, 'must be 1 to 255 visible ASCII characters')),
  ),
});
export type CreateHeaders = v.InferOutput<typeof CreateHeaders>;

/**
 * What each field of a request accepts, in the contract's words. Every 400 about a field says
 * `<field>: must be <this>.`, whatever valibot found wrong, and never quotes the value: a JSON
 * number past 2^53 reaches the schema already rounded, so quoting it would misquote the client.
 * The contract lists these messages as the examples of its 400 responses (src/contract.test.ts).
 */
export const ALLOWED: Readonly<Record<string, string>> = {
  limit: `an integer from 1 to ${PAGE_SIZE_MAX}`,
  status: `one of ${PetStatus.options.join(', ')}`,
  cursor: 'the cursor of a Link header (1 to 11 characters of 0-9 and a-z)',
  petId: `an integer from 1 to ${MAX_ID}`,
  categoryId: `an integer from 1 to ${MAX_ID}`,
  name: `a string of 1 to ${NAME_MAX_LENGTH} characters without the NUL character U+0000`,
  'Idempotency-Key': '1 to 255 visible ASCII characters (! to ~, no spaces)',
};

/** Path of `getPet`. */
export const PetParams = v.object({
  petId: v.pipe(IntegerText, v.minValue(1), v.maxValue(MAX_ID)),
});
export type PetParams = v.InferOutput<typeof PetParams>;

function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

const Seconds = v.pipe(v.number(), v.integer(), v.minValue(0));

/** One window of a caller's quota, in units of cost, as `X-RateLimit-*` and `RateLimit` show it. */
export const QuotaWindow = v.strictObject({
  name: v.picklist(['minute', 'day', 'month']),
  limit: v.pipe(v.number(), v.integer(), v.minValue(1)),
  remaining: v.pipe(v.number(), v.integer(), v.minValue(0)),
  /** Unix seconds, as in `X-RateLimit-Reset`. */
  reset: Seconds,
});

/**
 * The body of `getRateLimit`: whose quota, its windows (shortest first; month only when the plan
 * has one) and the ban, if any. Handed to the handler ready made (`Input.quota`,
 * src/api/rate-limit.ts): the handler knows nothing of keys or limiters.
 */
export const RateLimitStatus = v.strictObject({
  consumer: v.string(),
  plan: v.string(),
  windows: v.array(QuotaWindow),
  ban: v.nullable(v.strictObject({ until: Seconds })),
});
export type RateLimitStatus = v.InferOutput<typeof RateLimitStatus>;
