// The keys file's valibot schemas (`KeysDocument`: consumers, their keys, revoked keys' tombstones)
// and `FIELDS`, the same checks of each field, which `petstore keys` and the admin API reuse.
import * as v from 'valibot';
import { ADMIN_SCOPE, KEY_SCOPES } from '../core/key-scopes.ts';
import { COSTED_OPERATIONS } from '../core/operation-ids.ts';
import { PLAN_NAMES } from './plans.ts';
import { normalWebhookUrl, webhookUrlProblem } from './webhook-targets.ts';

/** A key's or consumer's name, as the keys file and `petstore keys` accept it; logs show it. */
export const KEY_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const NAME_MESSAGE = 'must be 1-64 letters, digits, ".", "_" or "-"';

/** RFC 3339 date-time (section 5.6): a `T`, seconds, and `Z` or an offset. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Epoch ms of an RFC 3339 date-time, or NaN when it is not one (also for a day the month lacks,
 * such as 2027-02-30, which `Date.parse` would roll over into March).
 *
 * @example
 * rfc3339('2027-02-20T00:00:00Z') // 1803081600000
 * rfc3339('2027-13-01') // NaN
 */
export function rfc3339(text: string): number {
  const m = RFC3339.exec(text);
  if (!m) return Number.NaN;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as number[];
  const date = new Date(Date.UTC(year as number, (month as number) - 1, day as number));
  const valid =
    date.getUTCMonth() === (month as number) - 1 &&
    date.getUTCDate() === day &&
    (hour as number) < 24 &&
    (minute as number) < 60 &&
    (second as number) < 61;
  return valid ? Date.parse(text) : Number.NaN;
}

const QUOTA_MESSAGE = 'must be an integer from 1 to 1000000000';
const Quota = v.pipe(
  v.number(QUOTA_MESSAGE),
  v.integer(QUOTA_MESSAGE),
  v.minValue(1, QUOTA_MESSAGE),
  v.maxValue(1_000_000_000, QUOTA_MESSAGE),
);
const Limits = v.strictObject({ perMinute: Quota, perDay: Quota, perMonth: v.optional(Quota) });
/** Units a request to each operation costs; `keyRecords` checks that each fits the quotas. */
const Costs = v.record(
  v.picklist(COSTED_OPERATIONS, `must name an operation that costs something: ${COSTED_OPERATIONS.join(', ')}`),
  Quota,
);
const URL_MESSAGE = 'must be an https:// URL, or http:// to a loopback address (127.0.0.1, [::1], localhost)';

/**
 * True for a URL a webhook may be configured with (src/keys/webhook-targets.ts).
 *
 * @example
 * webhookUrlAllowed('http://127.0.0.1:9000/hook') // true
 * webhookUrlAllowed('https://10.0.0.1/hook') // false
 */
export function webhookUrlAllowed(text: string): boolean {
  return webhookUrlProblem(text) === undefined;
}

/** A webhook URL: refused with its problem's message, kept normalised (a punycode host). */
const WebhookUrl = v.pipe(
  v.string(URL_MESSAGE),
  v.rawCheck(({ dataset, addIssue }) => {
    const problem = dataset.typed ? webhookUrlProblem(dataset.value) : undefined;
    if (problem !== undefined) addIssue({ message: problem });
  }),
  v.transform(normalWebhookUrl),
);

/** A Standard Webhooks secret: `whsec_` and the base64 of 24 to 64 random bytes. */
const SECRET = /^whsec_(?:[A-Za-z0-9+/]{4}){8,22}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const SECRET_MESSAGE = 'must be "whsec_" and the base64 of 24 to 64 random bytes (the value is not shown)';
/** Where notifications go; the secret signs them and is never logged or shown. */
const Webhook = v.strictObject(
  {
    url: WebhookUrl,
    secret: v.pipe(v.string(SECRET_MESSAGE), v.regex(SECRET, SECRET_MESSAGE)),
  },
  'must be an object with exactly "url" and "secret" (the value is not shown)',
);
const THRESHOLD_MESSAGE = 'must be a list of 1 to 10 different integers from 1 to 100 (percent of a quota)';
const Thresholds = v.pipe(
  v.array(
    v.pipe(
      v.number(THRESHOLD_MESSAGE),
      v.integer(THRESHOLD_MESSAGE),
      v.minValue(1, THRESHOLD_MESSAGE),
      v.maxValue(100, THRESHOLD_MESSAGE),
    ),
    THRESHOLD_MESSAGE,
  ),
  v.minLength(1, THRESHOLD_MESSAGE),
  v.maxLength(10, THRESHOLD_MESSAGE),
  v.check((list) => new Set(list).size === list.length, THRESHOLD_MESSAGE),
);
/** What a consumer sets besides its quotas (src/keys/plans.ts, `Terms`), and its notifications. */
const Terms = {
  costs: v.optional(Costs),
  enforce: v.optional(v.boolean('must be true or false')),
  webhook: v.optional(Webhook),
  thresholds: v.optional(Thresholds),
};
const Ban = v.strictObject({
  threshold: v.optional(Quota),
  seconds: v.pipe(v.number(), v.integer(), v.minValue(1)),
});
const Plan = v.picklist(PLAN_NAMES, `must be one of ${PLAN_NAMES.join(', ')}`);
const Sha256 = v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits'));
const DateTime = v.pipe(
  v.string(),
  v.check((s) => !Number.isNaN(rfc3339(s)), 'must be an RFC 3339 date-time such as 2027-02-20T00:00:00Z'),
);
/** What a key may do; absent means every scope. */
const Scopes = v.pipe(
  v.array(v.picklist(KEY_SCOPES, `must be one of ${KEY_SCOPES.join(', ')}`)),
  v.check(
    (scopes) => !scopes.includes(ADMIN_SCOPE) || scopes.every((s) => s === ADMIN_SCOPE),
    `${ADMIN_SCOPE} is a scope of its own: a key with it has no other scope`,
  ),
);
const Validity = {
  scopes: v.optional(Scopes),
  expiresAt: v.optional(DateTime),
  notBefore: v.optional(DateTime),
};

/** A `{"keys":[...]}` entry: a consumer of its own with one key, both named by `name`. */
export const LegacyEntry = v.pipe(
  v.strictObject({
    name: v.pipe(v.string(), v.regex(KEY_NAME, NAME_MESSAGE)),
    sha256: Sha256,
    plan: Plan,
    limits: v.optional(Limits),
    ban: v.optional(Ban),
    ...Terms,
    ...Validity,
  }),
  v.forward(
    v.check((e) => e.plan !== 'enterprise' || e.limits !== undefined, 'required for the enterprise plan'),
    ['limits'],
  ),
);

/** One key of a consumer: `id` defaults to the first 8 hex digits of its hash. */
export const ConsumerKey = v.strictObject({
  id: v.optional(v.pipe(v.string(), v.regex(KEY_NAME, NAME_MESSAGE))),
  sha256: Sha256,
  ...Validity,
});

/** A consumer's id: `con_` and 128 random bits in hex, made once and never given to another. */
const CONSUMER_ID = /^con_[0-9a-f]{32}$/;

/**
 * A consumer: one quota (windows, ban, in-flight cap) shared by all of its keys. `id` owns its
 * orders and `Idempotency-Key`s. `petstore keys` and the admin API write it when they create the
 * consumer; a consumer written without one gets an id derived from its first key (`consumerIdOf`
 * in src/keys/records.ts).
 */
export const ConsumerEntry = v.pipe(
  v.strictObject({
    id: v.optional(v.pipe(v.string(), v.regex(CONSUMER_ID, 'must be "con_" and 32 lowercase hex digits'))),
    name: v.pipe(v.string(), v.regex(KEY_NAME, NAME_MESSAGE)),
    plan: Plan,
    limits: v.optional(Limits),
    ban: v.optional(Ban),
    ...Terms,
    keys: v.array(ConsumerKey),
  }),
  v.forward(
    v.check((e) => e.plan !== 'enterprise' || e.limits !== undefined, 'required for the enterprise plan'),
    ['limits'],
  ),
);

const UNIT_MS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^([0-9]{1,6})([smhd])$/;
/** A duration such as `7d` (a number and s, m, h or d), in milliseconds: a rotation's overlap. */
const Duration = v.pipe(
  v.string(),
  v.regex(DURATION),
  v.transform((raw) => {
    const [, count, unit] = DURATION.exec(raw) as RegExpExecArray;
    return Number(count) * (UNIT_MS[unit as string] as number);
  }),
);

/**
 * The fields of a consumer and a key as the keys file checks them; the CLI and the admin API reuse
 * them.
 */
export const FIELDS = {
  duration: Duration,
  name: v.pipe(v.string(), v.regex(KEY_NAME, NAME_MESSAGE)),
  plan: Plan,
  limits: Limits,
  ban: Ban,
  costs: Costs,
  enforce: v.boolean(),
  webhook: Webhook,
  thresholds: Thresholds,
  scopes: v.pipe(
    Scopes,
    v.check((scopes) => new Set(scopes).size === scopes.length, 'must name each scope once'),
  ),
  dateTime: DateTime,
};

/**
 * A revoked key's tombstone: its hash, whose key it was and when it was revoked, kept for
 * `REVOKED_KEPT_MS` so that the request log can say `revoked` rather than `unknown`.
 */
export const RevokedKey = v.strictObject({
  sha256: Sha256,
  consumer: v.pipe(v.string(), v.regex(KEY_NAME, NAME_MESSAGE)),
  key: v.pipe(v.string(), v.regex(KEY_NAME, NAME_MESSAGE)),
  revokedAt: DateTime,
});

/** How long a revoked key's tombstone is kept; the next change after that drops it. */
export const REVOKED_KEPT_MS = 90 * 86_400_000;

/** The keys file: either form, or both in one file, and the tombstones of revoked keys. */
export const KeysDocument = v.strictObject({
  keys: v.optional(v.array(LegacyEntry)),
  consumers: v.optional(v.array(ConsumerEntry)),
  revoked: v.optional(v.array(RevokedKey)),
});

export type KeysDocument = v.InferOutput<typeof KeysDocument>;
export type LegacyEntry = v.InferOutput<typeof LegacyEntry>;
export type ConsumerEntry = v.InferOutput<typeof ConsumerEntry>;
export type ConsumerKey = v.InferOutput<typeof ConsumerKey>;
export type RevokedKey = v.InferOutput<typeof RevokedKey>;

/**
 * A key's id: as given, else the first 8 hex digits of its hash.
 *
 * @example
 * keyIdOf({ sha256: '9f86d081…' }) // '9f86d081'
 */
export function keyIdOf(key: { readonly id?: string | undefined; readonly sha256: string }): string {
  return key.id ?? key.sha256.slice(0, 8);
}
