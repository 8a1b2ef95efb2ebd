/**
 * What `keys add`, `rotate` and `revoke` share: a fresh token, and a change of the file under
 * its lock. Tokens come from the CSPRNG and are printed once, alone on stdout (so
 * `TOKEN=$(petstore keys add …)` works); the file only ever holds their SHA-256.
 */
import process from 'node:process';
import type { Scope } from '../api/scopes.ts';
import type { NewKey } from '../gateway/keys/edit.ts';
import { hashToken } from '../gateway/keys/file.ts';
import type { KeysDocument } from '../gateway/keys/schema.ts';
import { readKeysDocument, withLock, writeKeysDocument } from '../gateway/keys/store-file.ts';
import { newToken } from '../gateway/keys/tokens.ts';
import { at, type When } from './key-options.ts';

export interface FreshKey {
  readonly token: string;
  readonly key: NewKey;
}

/**
 * A fresh token and the keys-file fields that admit it.
 *
 * @example
 * freshKey({ id: 'k1', scopes: ['pets:read'] }, Date.now()).key // { sha256: '9f86…', id: 'k1', scopes: ['pets:read'] }
 */
export function freshKey(
  given: {
    id?: string | undefined;
    scopes?: Scope[] | undefined;
    expires?: When | undefined;
    notBefore?: When | undefined;
  },
  now: number,
): FreshKey {
  const token = newToken();
  const key: NewKey = {
    sha256: hashToken(token).toString('hex'),
    ...(given.id !== undefined ? { id: given.id } : {}),
    ...(given.scopes ? { scopes: given.scopes } : {}),
    ...(given.expires !== undefined ? { expiresAt: at(given.expires, now) } : {}),
    ...(given.notBefore !== undefined ? { notBefore: at(given.notBefore, now) } : {}),
  };
  return { token, key };
}

/**
 * Reads, changes and writes the file under its lock; then prints the token of a new key on
 * stdout and its id on stderr.
 *
 * @example
 * await change('/etc/petstore/keys.json', 'acme', (doc) => addKey(doc, 'acme', {}, fresh.key), fresh)
 */
export async function change(
  path: string,
  consumer: string,
  edit: (doc: KeysDocument) => KeysDocument,
  fresh?: FreshKey,
): Promise<void> {
  await withLock(path, () => writeKeysDocument(path, edit(readKeysDocument(path))));
  if (!fresh) return;
  process.stdout.write(`${fresh.token}\n`);
  const id = fresh.key.id ?? fresh.key.sha256.slice(0, 8);
  process.stderr.write(`key id: ${id} (consumer ${consumer}; token printed once on stdout)\n`);
}
