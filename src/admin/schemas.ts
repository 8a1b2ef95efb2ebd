// The admin API's request bodies, path parameters and queries as valibot schemas (which are also
// the types), and the messages of their 400 answers.
import * as v from 'valibot';
import { ADMIN_SCOPE, KEY_SCOPES } from '../core/key-scopes.ts';
import { PLAN_NAMES } from '../keys/plans.ts';
import { FIELDS } from '../keys/schemas.ts';

const NAME = '1 to 64 letters, digits, ".", "_" or "-", starting with a letter or a digit';
const AUDIT_PAGE_MAX = 100;
const AUDIT_PAGE_DEFAULT = 20;

/** What each field accepts, as the 400 answer that names the field says it. */
export const ADMIN_MUST_BE: Readonly<Record<string, string>> = {
  name: NAME,
  id: NAME,
  plan: `one of ${PLAN_NAMES.join(', ')}`,
  limits: 'an object {"perMinute", "perDay", "perMonth"?} of whole numbers from 1 to 1000000000 (null: the plan\'s)',
  costs: "an object of operation ids and whole numbers from 1 to 1000000000, each within the quotas (null: the plan's)",
  enforce: 'true, or false for report-only limits (null: true)',
  ban: 'an object {"seconds", "threshold"?} of whole numbers from 1 (null: the server\'s ban)',
  webhook:
    'an object with exactly "url", an https:// URL to a public address (a host name, or an IP address written out) or http:// to loopback (127.0.0.1, [::1], localhost), and "secret", "whsec_" and the base64 of 24 to 64 random bytes (null: no notifications; the value is not shown)',
  thresholds: 'a list of 1 to 10 different integers from 1 to 100, percent of a quota (null: 80 and 100)',
  scopes: `a list of one or more different scopes of ${KEY_SCOPES.join(', ')}, ${ADMIN_SCOPE} alone`,
  expiresAt: 'an RFC 3339 date-time such as 2027-02-20T00:00:00Z',
  notBefore: 'an RFC 3339 date-time such as 2027-02-20T00:00:00Z',
  overlap: 'a duration: a number and s, m, h or d, such as 7d',
  limit: `an integer from 1 to ${AUDIT_PAGE_MAX}`,
  after: 'the id of an audit record, from a Link header',
};

export const NewConsumer = v.strictObject({
  name: FIELDS.name,
  plan: FIELDS.plan,
  limits: v.optional(FIELDS.limits),
  ban: v.optional(FIELDS.ban),
  costs: v.optional(FIELDS.costs),
  enforce: v.optional(FIELDS.enforce),
  webhook: v.optional(FIELDS.webhook),
  thresholds: v.optional(FIELDS.thresholds),
});
export type NewConsumer = v.InferOutput<typeof NewConsumer>;

export const ConsumerPatch = v.strictObject({
  plan: v.optional(FIELDS.plan),
  limits: v.optional(v.nullable(FIELDS.limits)),
  ban: v.optional(v.nullable(FIELDS.ban)),
  costs: v.optional(v.nullable(FIELDS.costs)),
  enforce: v.optional(v.nullable(FIELDS.enforce)),
  webhook: v.optional(v.nullable(FIELDS.webhook)),
  thresholds: v.optional(v.nullable(FIELDS.thresholds)),
});
export type ConsumerPatch = v.InferOutput<typeof ConsumerPatch>;

export const NewKeyBody = v.strictObject({
  id: v.optional(FIELDS.name),
  scopes: v.optional(v.pipe(FIELDS.scopes, v.minLength(1))),
  expiresAt: v.optional(FIELDS.dateTime),
  notBefore: v.optional(FIELDS.dateTime),
});
export type NewKeyBody = v.InferOutput<typeof NewKeyBody>;

export const RotateBody = v.strictObject({
  overlap: FIELDS.duration,
  id: v.optional(FIELDS.name),
  scopes: v.optional(v.pipe(FIELDS.scopes, v.minLength(1))),
});
export type RotateBody = v.InferOutput<typeof RotateBody>;

export const ConsumerParams = v.object({ name: FIELDS.name });
export type ConsumerParams = v.InferOutput<typeof ConsumerParams>;

export const KeyParams = v.object({ name: FIELDS.name, id: FIELDS.name });
export type KeyParams = v.InferOutput<typeof KeyParams>;

const Whole = v.pipe(v.string(), v.regex(/^[0-9]{1,15}$/), v.transform(Number));
export const AuditQuery = v.object({
  limit: v.optional(v.pipe(Whole, v.minValue(1), v.maxValue(AUDIT_PAGE_MAX)), String(AUDIT_PAGE_DEFAULT)),
  after: v.optional(Whole, '0'),
});
export type AuditQuery = v.InferOutput<typeof AuditQuery>;
