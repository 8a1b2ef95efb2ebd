import { randomBytes } from 'node:crypto';
import type { PlanName } from '../plans.ts';
import { hashToken } from './file.ts';

/** Every token starts with this, so a leaked one is recognisable in code, logs and scanners. */
export const TOKEN_PREFIX = 'psk_';

export type RandomSource = (size: number) => Uint8Array;

/**
 * A new API token: the prefix and 32 random bytes in base64url (43 characters).
 *
 * @example
 * newToken() // 'psk_3q2-7w…'
 */
export function newToken(random: RandomSource = randomBytes): string {
  return TOKEN_PREFIX + Buffer.from(random(32)).toString('base64url');
}

/** A fresh token and the keys-file entry that admits it (which holds only the hash). */
export function newKeyEntry(name: string, plan: PlanName, random: RandomSource = randomBytes) {
  const token = newToken(random);
  return { token, entry: { name, sha256: hashToken(token).toString('hex'), plan } };
}
