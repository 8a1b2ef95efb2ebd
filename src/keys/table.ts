// Step 3's key look-up: `KeyTable` finds the key of a presented token by its SHA-256 and holds only
// hashes; `bearerToken()` reads the token from an `Authorization: Bearer` header.
import { timingSafeEqual } from 'node:crypto';
import { hashToken, type KeyRecord } from './records.ts';
import { plausibleToken } from './tokens.ts';

/**
 * SHA-256 of a presented token, the same bytes as `hashToken`. Uses Bun's one-shot hasher when
 * there is one, because node:crypto's `createHash` object is most of the cost of a lookup
 * (bench/README.md#measured-costs-behind-the-codes-choices).
 */
const sha256: (token: string) => Buffer =
  'Bun' in globalThis ? (token) => Bun.CryptoHasher.hash('sha256', token) : hashToken;

/** RFC 6750 section 2.1: `Bearer` (any case), one or more spaces, then a token68. */
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * Finds API keys by the SHA-256 of the presented token; the table holds only hashes. Because the
 * lookup is by hash, its timing says nothing of how close a guess came, and the found record's hash
 * is also compared in constant time.
 */
export class KeyTable {
  #byHash: Map<string, KeyRecord>;
  /** Revoked keys' tombstones (`revokedAt`): `find` returns them so logs can name them. */
  #revoked: Map<string, KeyRecord>;
  readonly size: number;

  constructor(keys: readonly KeyRecord[]) {
    const live = keys.filter((k) => k.revokedAt === undefined);
    this.#byHash = new Map(live.map((k) => [k.hash.toString('hex'), k]));
    this.#revoked = new Map(keys.filter((k) => k.revokedAt !== undefined).map((k) => [k.hash.toString('hex'), k]));
    this.size = live.length;
  }

  /**
   * What a token is: a key, a revoked key's tombstone (with `revokedAt`), or why it is neither:
   * `bad_checksum` (checksummed shape, wrong checksum) or `unknown` (no key has its hash).
   */
  find(token: string): KeyRecord | 'bad_checksum' | 'unknown' {
    if (!plausibleToken(token)) return 'bad_checksum';
    const digest = sha256(token);
    const hex = digest.toString('hex');
    const record = this.#byHash.get(hex) ?? this.#revoked.get(hex);
    return record && timingSafeEqual(record.hash, digest) ? record : 'unknown';
  }

  /** Every key in force, without tombstones: for the per-consumer metrics and the webhooks. */
  records(): KeyRecord[] {
    return [...this.#byHash.values()];
  }

  /** Every record the table was built from, tombstones included: enough to build it again. */
  all(): KeyRecord[] {
    return [...this.#byHash.values(), ...this.#revoked.values()];
  }

  /** Number of keys on each plan, for the start-up log. */
  countByPlan(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const { consumer } of this.#byHash.values()) counts[consumer.plan] = (counts[consumer.plan] ?? 0) + 1;
    return counts;
  }
}

/**
 * The token of an `Authorization: Bearer <token>` header, or undefined when absent or malformed.
 */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header || header.length > 1024) return undefined;
  return BEARER.exec(header)?.[1];
}
