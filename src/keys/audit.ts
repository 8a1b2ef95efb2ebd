// The audit trail of changes to consumers and keys: who changed what, when, and each changed
// field before and after. A record never holds a token, a hash or a webhook's secret. A webhook's
// secret shows as "(set)" or "(changed)"; keys show by id, scopes and dates only.
import { asConsumers } from './document-edits.ts';
import { type ConsumerEntry, type KeysDocument, keyIdOf } from './schemas.ts';

/** Who made a change: the keys CLI run by an OS user, or an admin key over the admin API. */
export type Actor =
  | { readonly kind: 'cli'; readonly user: string }
  | { readonly kind: 'admin'; readonly consumer: string; readonly key: string };

export const AUDIT_ACTIONS = [
  'consumer.create',
  'consumer.update',
  'consumer.delete',
  'key.add',
  'key.rotate',
  'key.revoke',
  'keys.import',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** Stands for a webhook's secret in the trail: the secret itself is never written there. */
const SECRET_SET = '(set)';
const SECRET_CHANGED = '(changed)';

/**
 * What a consumer looks like in the trail: everything but its keys' hashes and its webhook's
 * secret.
 */
export interface ConsumerView {
  plan?: string;
  limits?: unknown;
  ban?: unknown;
  costs?: unknown;
  enforce?: boolean;
  webhook?: { url: string; secret: string };
  thresholds?: readonly number[];
  keys?: Record<string, { scopes?: readonly string[]; expiresAt?: string; notBefore?: string }>;
}

type Fields = Record<string, unknown>;

/** One change, as appended to the trail and shown by `keys audit` and `GET /admin/v1/audit`. */
export interface AuditRecord {
  /** When the change was made: an RFC 3339 date-time with milliseconds. */
  readonly at: string;
  readonly actor: Actor;
  readonly action: AuditAction;
  readonly consumer: string;
  /** The key the change is about: the new key of an add or a rotation, or the revoked key. */
  readonly key?: string;
  /** The fields that changed, as they were; null for a consumer that did not exist. */
  readonly before: Fields | null;
  /** The same fields as they are now; null for a consumer that is gone. */
  readonly after: Fields | null;
}

/**
 * The consumer `name` of a keys document as the trail shows it, or undefined when it has none;
 * a `{"keys":[...]}` entry is shown as the consumer it stands for (one key, whose id is its name).
 *
 * @example
 * consumerView(doc, 'acme') // { plan: 'pro', keys: { k1: { scopes: ['pets:read'] } } }
 */
export function consumerView(doc: KeysDocument, name: string): ConsumerView | undefined {
  const consumer = asConsumers(doc).find((c) => c.name === name);
  return consumer ? viewOf(consumer) : undefined;
}

function viewOf(entry: ConsumerEntry): ConsumerView {
  const keys: NonNullable<ConsumerView['keys']> = {};
  for (const { id, sha256, ...fields } of entry.keys) keys[keyIdOf({ id, sha256 })] = fields;
  return {
    plan: entry.plan,
    ...(entry.limits ? { limits: entry.limits } : {}),
    ...(entry.ban ? { ban: entry.ban } : {}),
    ...(entry.costs ? { costs: entry.costs } : {}),
    ...(entry.enforce !== undefined ? { enforce: entry.enforce } : {}),
    ...(entry.webhook ? { webhook: { url: entry.webhook.url, secret: SECRET_SET } } : {}),
    ...(entry.thresholds ? { thresholds: [...entry.thresholds] } : {}),
    keys,
  };
}

/**
 * The fields that differ between two views, each side holding its own values (null where a
 * field is absent); keys are compared one by one, so a rotation shows the new key and the old
 * keys' new `expiresAt`, not every key.
 *
 * @example
 * changedFields({ plan: 'free', keys: {} }, { plan: 'pro', keys: {} }) // [{ plan: 'free' }, { plan: 'pro' }]
 */
export function changedFields(
  before: ConsumerView | undefined,
  after: ConsumerView | undefined,
): [Fields | null, Fields | null] {
  if (!before || !after) return [before ? { ...before } : null, after ? { ...after } : null];
  const was: Fields = {};
  const now: Fields = {};
  for (const field of ['plan', 'limits', 'ban', 'costs', 'enforce', 'webhook', 'thresholds'] as const) {
    if (JSON.stringify(before[field]) !== JSON.stringify(after[field])) {
      was[field] = before[field] ?? null;
      now[field] = after[field] ?? null;
    }
  }
  const oldKeys = before.keys ?? {};
  const newKeys = after.keys ?? {};
  const wasKeys: Fields = {};
  const nowKeys: Fields = {};
  for (const id of new Set([...Object.keys(oldKeys), ...Object.keys(newKeys)])) {
    if (JSON.stringify(oldKeys[id]) === JSON.stringify(newKeys[id])) continue;
    wasKeys[id] = oldKeys[id] ?? null;
    nowKeys[id] = newKeys[id] ?? null;
  }
  if (Object.keys(wasKeys).length > 0) {
    was.keys = wasKeys;
    now.keys = nowKeys;
  }
  return [was, now];
}

/**
 * The record of one change of consumer `consumer` from `before` to `after` (two keys documents).
 *
 * @example
 * auditRecord({ kind: 'cli', user: 'root' }, 'key.add', 'acme', 'k1', oldDoc, newDoc, Date.now())
 */
export function auditRecord(
  actor: Actor,
  action: AuditAction,
  consumer: string,
  key: string | undefined,
  before: KeysDocument,
  after: KeysDocument,
  now: number,
): AuditRecord {
  const [was, is] = changedFields(consumerView(before, consumer), consumerView(after, consumer));
  const oldSecret = asConsumers(before).find((c) => c.name === consumer)?.webhook?.secret;
  const newWebhook = asConsumers(after).find((c) => c.name === consumer)?.webhook;
  if (was && is && oldSecret !== undefined && newWebhook && newWebhook.secret !== oldSecret) {
    // A new secret for the same URL is a change too; the trail says so without either secret.
    was.webhook = consumerView(before, consumer)?.webhook ?? null;
    is.webhook = { url: newWebhook.url, secret: SECRET_CHANGED };
  }
  return {
    at: new Date(now).toISOString(),
    actor,
    action,
    consumer,
    ...(key !== undefined ? { key } : {}),
    before: was,
    after: is,
  };
}
