// What the gateway knows of a consumer and of each of its keys (`Consumer`, `KeyRecord`), and
// who a consumer is to the store (`ownerOf`): the records every request reads. The keys file's
// parser (./file.ts) and the admin API make them; nothing here reads a file.
import { createHash, randomBytes } from 'node:crypto';
import type { KeyScope } from '../core/key-scopes.ts';
import type { BanPolicy, Costs, Limits, PlanName } from './plans.ts';

/**
 * Whose quota a key counts against. The per-consumer state (windows, ban, in-flight slots) is
 * keyed by its `id`, never by a token or hash, so every key of a consumer shares one quota.
 */
export interface Consumer {
  /**
   * The consumer's id (`con_…`). It is part of its owner (`ownerOf`), so no other consumer sees its
   * orders or `Idempotency-Key`s.
   */
  readonly id: string;
  /**
   * Set when the id is derived from the first key (`consumerIdOf`): the consumer's legacy owner
   * (`key:<name>`, see ARCHITECTURE.md's glossary). At start, `settleIdentities()` of LiveKeys
   * moves that owner's orders to `ownerOf(consumer)` through `DataStore.adoptOwners`.
   */
  readonly adopts?: string;
  readonly name: string;
  readonly plan: PlanName;
  readonly limits: Limits;
  readonly ban?: BanPolicy;
  /** Units each operation costs, by operationId (the plan's, then the consumer's own); else 1. */
  readonly costs: Costs;
  /** False: the limits are report-only (`Terms` in src/keys/plans.ts). */
  readonly enforce: boolean;
  /** Where quota notifications go, signed with `secret` (never logged or shown). Absent: none. */
  readonly webhook?: { readonly url: string; readonly secret: string };
  /**
   * Percentages of the day and month quotas whose crossing is notified, ascending (default 80 and
   * 100). Used only with a webhook.
   */
  readonly thresholds?: readonly number[];
}

/** Percent of a quota notified when no `thresholds` are set. */
export const DEFAULT_THRESHOLDS: readonly number[] = [80, 100];

/** One API key as the gateway knows it: never the token, only its SHA-256. */
export interface KeyRecord {
  /** Names the key in logs, metrics and the keys CLI; a `{"keys":[...]}` entry's id is its name. */
  readonly id: string;
  readonly hash: Buffer;
  readonly consumer: Consumer;
  /**
   * What the key may do (src/core/key-scopes.ts); a key without `scopes` in the file has every
   * scope of the public API (never `admin`). Not the idempotency scope (src/store/idempotency.ts),
   * which says whose `Idempotency-Key`s they are.
   */
  readonly scopes: readonly KeyScope[];
  /** Epoch ms from which the key is refused (`expiresAt`), if it expires. */
  readonly expiresAt?: number;
  /** Epoch ms before which the key is refused (`notBefore`), if set. */
  readonly notBefore?: number;
  /**
   * When the key was revoked (epoch ms). Set on a tombstone (`revoked` in the file): never
   * admitted, but named in logs.
   */
  readonly revokedAt?: number;
}

/** A consumer's terms as a keys document or the admin API gives them. */
export interface ConsumerFields {
  plan: PlanName;
  /** Absent: the plan's quotas. */
  limits?: Limits;
  ban?: BanPolicy;
  /** Absent: the plan's costs. */
  costs?: Costs;
  /** False: report-only limits. */
  enforce?: boolean;
  /** Where quota notifications go, and the secret that signs them. */
  webhook?: { url: string; secret: string };
  /** Percent of a quota whose crossing is notified; absent: 80 and 100. */
  thresholds?: number[];
}

/** A new consumer id: `con_` and 128 random bits in hex, never given to a later consumer. */
export function newConsumerId(): string {
  return `con_${randomBytes(16).toString('hex')}`;
}

/**
 * The id of a consumer written without one (by hand, or by an older release): a digest of its name
 * and its first key's hash. Every instance derives the same id from the same file. A consumer
 * deleted and created again under the same name has another key, so it gets another id.
 *
 * @example
 * derivedConsumerId('acme', '9f86d081…') // 'con_…' (the same for the same arguments)
 */
export function derivedConsumerId(name: string, sha256: string): string {
  return `con_${createHash('sha256').update(`petstore consumer\n${name}\n${sha256}`).digest('hex').slice(0, 32)}`;
}

/**
 * A consumer entry's id: its own, else one derived from its first key (`derivedConsumerId`).
 * Undefined when it has neither: without a key it cannot call, so it owns nothing yet.
 */
export function consumerIdOf(entry: {
  readonly id?: string | undefined;
  readonly name: string;
  readonly keys: readonly { readonly sha256: string }[];
}): string | undefined {
  const first = entry.keys[0];
  return entry.id ?? (first ? derivedConsumerId(entry.name, first.sha256) : undefined);
}

/**
 * The owner of a consumer's orders and `Idempotency-Key`s: the string the store files them under.
 * The id makes the owner unique to the consumer. The name (fixed for a given id) tells which
 * webhook hears of its orders; the store parses it back out (`consumerOf` in
 * src/store/order-rows.ts), so change both together.
 *
 * @example
 * ownerOf({ id: 'con_0123…', name: 'acme' }) // 'con_0123…:acme'
 */
export function ownerOf(consumer: { readonly id: string; readonly name: string }): string {
  return `${consumer.id}:${consumer.name}`;
}

/** A consumer's legacy owner, `key:<name>` (ARCHITECTURE.md's glossary: what it is, why kept). */
export function legacyOwnerOf(name: string): string {
  return `key:${name}`;
}

/**
 * Every owner a consumer entry's orders may be stored under: its owner (none without an id or a
 * key), plus its legacy owner when its id is derived (the case where `keyRecords` sets `adopts`).
 * Deleting the consumer retires all of them.
 *
 * @example
 * ownersOf({ id: 'con_0123…', name: 'acme', keys: [] }) // ['con_0123…:acme']
 */
export function ownersOf(entry: {
  readonly id?: string | undefined;
  readonly name: string;
  readonly keys: readonly { readonly sha256: string }[];
}): string[] {
  const id = consumerIdOf(entry);
  if (id === undefined) return [];
  const first = entry.keys[0];
  const derived = first !== undefined && id === derivedConsumerId(entry.name, first.sha256);
  return [ownerOf({ id, name: entry.name }), ...(derived ? [legacyOwnerOf(entry.name)] : [])];
}

/** SHA-256 of a token, as stored in the keys file. */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}
