// The changes `petstore keys` makes to a keys document, as pure functions: each returns a new
// document and leaves the given one alone. Before a `{"keys":[...]}` entry gets a key added,
// rotated or revoked, it moves into `consumers` under the same name, its key's id being that name,
// so its quota, its id in logs and its token all stay the same.

import type { KeyScope } from '../core/key-scopes.ts';
import { KeysFileError } from './file.ts';
import type { Limits, PlanName } from './plans.ts';
import { type ConsumerFields, consumerIdOf, derivedConsumerId, newConsumerId } from './records.ts';
import {
  type ConsumerEntry,
  type ConsumerKey,
  type KeysDocument,
  keyIdOf,
  REVOKED_KEPT_MS,
  type RevokedKey,
  rfc3339,
} from './schemas.ts';

export interface NewConsumer {
  plan?: PlanName;
  limits?: Limits;
}

export interface NewKey {
  sha256: string;
  id?: string;
  scopes?: readonly KeyScope[];
  expiresAt?: string;
  notBefore?: string;
}

/**
 * `doc` with `key` added to consumer `name`. A missing consumer is created, and then `plan` is
 * required.
 *
 * @example
 * addKey({ consumers: [] }, 'acme', { plan: 'pro' }, { sha256: '9f86…' })
 */
export function addKey(doc: KeysDocument, name: string, consumer: NewConsumer, key: NewKey): KeysDocument {
  const moved = toConsumers(doc, name);
  const consumers = [...(moved.consumers ?? [])];
  const i = consumers.findIndex((c) => c.name === name);
  const entry: ConsumerKey = {
    ...(key.id !== undefined ? { id: key.id } : {}),
    sha256: key.sha256,
    ...(key.scopes !== undefined ? { scopes: [...key.scopes] } : {}),
    ...(key.notBefore !== undefined ? { notBefore: key.notBefore } : {}),
    ...(key.expiresAt !== undefined ? { expiresAt: key.expiresAt } : {}),
  };
  const existing = consumers[i];
  if (existing) {
    if (consumer.plan !== undefined && consumer.plan !== existing.plan) {
      throw new KeysFileError(
        `--plan: consumer "${name}" is on the ${existing.plan} plan, not ${consumer.plan}; change its plan in the file`,
      );
    }
    consumers[i] = { ...existing, keys: [...existing.keys, entry] };
  } else {
    if (consumer.plan === undefined) throw new KeysFileError(`--plan: needed to create consumer "${name}"`);
    consumers.push({
      id: newConsumerId(),
      name,
      plan: consumer.plan,
      ...(consumer.limits ? { limits: consumer.limits } : {}),
      keys: [entry],
    });
  }
  return { ...moved, consumers };
}

/**
 * `doc` after a rotation of consumer `name` at `now`: `key` added, and every current key that
 * would outlive `now + overlapMs` set to expire then. Keys already expired stay as they are.
 * The new key takes the scopes of the keys it replaces unless `key.scopes` says otherwise.
 */
export function rotateKeys(doc: KeysDocument, name: string, now: number, overlapMs: number, key: NewKey): KeysDocument {
  const moved = toConsumers(doc, name);
  const current = moved.consumers?.find((c) => c.name === name);
  if (!current) throw new KeysFileError(`--consumer: no consumer "${name}" in the file; use keys add to make one`);
  const until = now + overlapMs;
  const live = current.keys.filter((k) => k.expiresAt === undefined || rfc3339(k.expiresAt) > now);
  const scopes = key.scopes ?? inheritedScopes(live);
  const ending = current.keys.map((k) =>
    live.includes(k) && (k.expiresAt === undefined || rfc3339(k.expiresAt) > until)
      ? { ...k, expiresAt: new Date(Math.floor(until / 1000) * 1000).toISOString().replace('.000Z', 'Z') }
      : k,
  );
  const withEnding: KeysDocument = {
    ...moved,
    consumers: (moved.consumers ?? []).map((c) => (c.name === name ? { ...c, keys: ending } : c)),
  };
  return addKey(withEnding, name, {}, { ...key, ...(scopes ? { scopes } : {}) });
}

/** The scopes a key replacing `keys` should have: their union, or undefined (every scope). */
function inheritedScopes(keys: readonly ConsumerKey[]): KeyScope[] | undefined {
  if (keys.length === 0 || keys.some((k) => k.scopes === undefined)) return undefined;
  return [...new Set(keys.flatMap((k) => k.scopes ?? []))];
}

/**
 * `doc` without key `id` of consumer `name`, its hash kept in `revoked` (see `withTombstone`);
 * the consumer stays (with its plan and limits), so a key added later shares the same quota.
 */
export function revokeKey(doc: KeysDocument, name: string, id: string, now: number): KeysDocument {
  const moved = toConsumers(doc, name);
  const current = moved.consumers?.find((c) => c.name === name);
  if (!current) throw new KeysFileError(`--consumer: no consumer "${name}" in the file`);
  const keys = current.keys.filter((k) => keyIdOf(k) !== id);
  if (keys.length === current.keys.length) {
    const ids = current.keys.map(keyIdOf);
    throw new KeysFileError(`--key: consumer "${name}" has no key "${id}" (it has: ${ids.join(', ') || 'none'})`);
  }
  const revoked = current.keys.find((k) => keyIdOf(k) === id) as ConsumerKey;
  const after = { ...moved, consumers: (moved.consumers ?? []).map((c) => (c.name === name ? { ...c, keys } : c)) };
  return withTombstone(after, { sha256: revoked.sha256, consumer: name, key: id }, now);
}

/**
 * `doc` with a revoked key's tombstone added to `revoked`, and tombstones older than
 * `REVOKED_KEPT_MS` dropped. The gateway then logs a request with that token as
 * `"credential":"revoked"` rather than `unknown`; the answer is the same as for an unknown key.
 *
 * @example
 * withTombstone(doc, { sha256: '9f86…', consumer: 'acme', key: 'k1' }, Date.now()).revoked // [..., { sha256: '9f86…', consumer: 'acme', key: 'k1', revokedAt: '2027-…Z' }]
 */
export function withTombstone(doc: KeysDocument, key: Omit<RevokedKey, 'revokedAt'>, now: number): KeysDocument {
  const kept = (doc.revoked ?? []).filter(
    (t) => now - rfc3339(t.revokedAt) < REVOKED_KEPT_MS && t.sha256 !== key.sha256,
  );
  return { ...doc, revoked: [...kept, { ...key, revokedAt: new Date(now).toISOString() }] };
}

/** `doc` with the `{"keys":[...]}` entry named `name`, if any, moved into `consumers`. */
function toConsumers(doc: KeysDocument, name: string): KeysDocument {
  const legacy = doc.keys?.find((e) => e.name === name);
  if (!legacy) return doc;
  const { name: _name, sha256, scopes, notBefore, expiresAt, ...fields } = legacy;
  const consumer: ConsumerEntry = {
    id: derivedConsumerId(name, sha256),
    name,
    ...consumerFields(fields),
    keys: [
      {
        id: name,
        sha256,
        ...(scopes ? { scopes } : {}),
        ...(notBefore ? { notBefore } : {}),
        ...(expiresAt ? { expiresAt } : {}),
      },
    ],
  };
  const keys = doc.keys?.filter((e) => e !== legacy) ?? [];
  const { keys: _old, ...rest } = doc;
  return { ...rest, ...(keys.length > 0 ? { keys } : {}), consumers: [...(doc.consumers ?? []), consumer] };
}

/** What `updateConsumer` changes: a field given as null is removed, one not given stays. */
export type ConsumerChange = {
  [K in keyof ConsumerFields]?: K extends 'plan' ? PlanName : ConsumerFields[K] | null;
};

/**
 * `doc` with a new consumer `name` without keys; the caller checks that no consumer has the name.
 *
 * @example
 * createConsumer(doc, 'acme', { plan: 'pro' })
 */
export function createConsumer(doc: KeysDocument, name: string, fields: ConsumerFields): KeysDocument {
  const entry: ConsumerEntry = { id: newConsumerId(), name, ...consumerFields(fields), keys: [] };
  return { ...doc, consumers: [...(doc.consumers ?? []), entry] };
}

/**
 * `doc` with consumer `name`'s plan, limits, ban, costs, enforce, webhook or thresholds changed:
 * a field given as null is removed (the plan's quotas and costs, the default ban, enforced
 * limits, no notifications, the default thresholds), one not given stays.
 */
export function updateConsumer(doc: KeysDocument, name: string, change: ConsumerChange): KeysDocument {
  const moved = toConsumers(doc, name);
  const pick = <T>(given: T | null | undefined, current: T | undefined) =>
    given === undefined ? current : (given ?? undefined);
  return {
    ...moved,
    consumers: (moved.consumers ?? []).map((c) => {
      if (c.name !== name) return c;
      const fields: ConsumerFields = { plan: change.plan ?? c.plan };
      const limits = pick(change.limits, c.limits);
      const ban = pick(change.ban, c.ban);
      const costs = pick(change.costs, c.costs);
      const enforce = pick(change.enforce, c.enforce);
      const webhook = pick(change.webhook, c.webhook);
      const thresholds = pick(change.thresholds, c.thresholds);
      if (limits) fields.limits = limits;
      if (ban) fields.ban = ban;
      if (costs) fields.costs = costs;
      if (enforce !== undefined) fields.enforce = enforce;
      if (webhook) fields.webhook = webhook;
      if (thresholds) fields.thresholds = thresholds;
      return { ...(c.id !== undefined ? { id: c.id } : {}), name, ...consumerFields(fields), keys: c.keys };
    }),
  };
}

/** `doc` without consumer `name` (either form) and its keys. */
export function deleteConsumer(doc: KeysDocument, name: string): KeysDocument {
  const keys = doc.keys?.filter((e) => e.name !== name);
  const consumers = doc.consumers?.filter((c) => c.name !== name);
  return { ...(keys ? { keys } : {}), ...(consumers ? { consumers } : {}) };
}

function consumerFields({
  plan,
  limits,
  ban,
  costs,
  enforce,
  webhook,
  thresholds,
}: ConsumerFields): Omit<ConsumerEntry, 'name' | 'keys'> {
  return {
    plan,
    ...(limits ? { limits } : {}),
    ...(ban ? { ban } : {}),
    ...(costs ? { costs } : {}),
    ...(enforce !== undefined ? { enforce } : {}),
    ...(webhook ? { webhook: { url: webhook.url, secret: webhook.secret } } : {}),
    ...(thresholds ? { thresholds: [...thresholds] } : {}),
  };
}

/**
 * `after` (a change of `before`) with an id written for each consumer that has none. The id is the
 * one derived in `before` (`consumerIdOf`), so the consumer keeps its orders even if the change
 * removed its first key; a new consumer gets a new id. Returns `after` itself when every consumer
 * has an id.
 *
 * @example
 * withConsumerIds(before, revokeKey(before, 'acme', 'k1', Date.now())).consumers?.[0]?.id // acme's id as derived in before
 */
export function withConsumerIds(before: KeysDocument, after: KeysDocument = before): KeysDocument {
  if ((after.consumers ?? []).every((c) => c.id !== undefined)) return after;
  const was = new Map(asConsumers(before).map((c) => [c.name, c]));
  return {
    ...after,
    consumers: (after.consumers ?? []).map((c) => {
      if (c.id !== undefined) return c;
      const old = was.get(c.name);
      return { id: (old && consumerIdOf(old)) ?? newConsumerId(), ...c };
    }),
  };
}

/**
 * Every consumer of `doc` in the `consumers` form; a `{"keys":[...]}` entry becomes a consumer
 * with one key whose id is its name.
 */
export function asConsumers(doc: KeysDocument): ConsumerEntry[] {
  const legacy = (doc.keys ?? []).map((e) => toConsumers({ keys: [e] }, e.name).consumers?.[0] as ConsumerEntry);
  return [...legacy, ...(doc.consumers ?? [])];
}

/**
 * `doc` with `entry` copied in (`petstore keys import`). A missing consumer is created with its
 * `id` or the one derived from its first key. An existing one takes `entry`'s terms and the keys it
 * lacks (by hash). Importing the same file twice changes nothing the second time. A key id `doc`
 * has with another hash is refused.
 */
export function importConsumer(doc: KeysDocument, entry: ConsumerEntry): KeysDocument {
  const current = asConsumers(doc).find((c) => c.name === entry.name);
  // A consumer imported without an id keeps the one its keys file gave it (derived from its first
  // key), so the orders it placed while served from that file stay its own.
  if (!current)
    return { ...doc, consumers: [...(doc.consumers ?? []), { id: consumerIdOf(entry) ?? newConsumerId(), ...entry }] };
  const hashes = new Set(current.keys.map((k) => k.sha256));
  const ids = new Map(current.keys.map((k) => [keyIdOf(k), k.sha256]));
  const added = entry.keys.filter((k) => !hashes.has(k.sha256));
  for (const k of added) {
    if (ids.has(keyIdOf(k))) {
      throw new KeysFileError(
        `consumers "${entry.name}": key "${keyIdOf(k)}" is there with another hash; revoke it there first, or give this one another id`,
      );
    }
  }
  const fields: ConsumerChange = {
    plan: entry.plan,
    limits: entry.limits ?? null,
    ban: entry.ban ?? null,
    costs: entry.costs ?? null,
    enforce: entry.enforce ?? null,
    webhook: entry.webhook ?? null,
    thresholds: entry.thresholds ?? null,
  };
  const same =
    added.length === 0 &&
    (['plan', 'limits', 'ban', 'costs', 'enforce', 'webhook', 'thresholds'] as const).every(
      (field) => JSON.stringify(current[field]) === JSON.stringify(entry[field]),
    );
  if (same) return doc;
  const updated = updateConsumer(doc, entry.name, fields);
  return {
    ...updated,
    consumers: (updated.consumers ?? []).map((c) =>
      c.name === entry.name ? { ...c, keys: [...c.keys, ...added] } : c,
    ),
  };
}
