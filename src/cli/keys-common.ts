// What the keys commands share: where the keys are (a file, or the data store), a fresh token, and
// a change with its audit record. Tokens come from the CSPRNG and are printed once, alone on stdout
// (so `TOKEN=$(petstore keys add …)` works); the file only ever holds their SHA-256.
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import type { KeyScope } from '../core/key-scopes.ts';
import type { Actor } from '../keys/audit.ts';
import { auditPath } from '../keys/audit-file.ts';
import type { NewKey } from '../keys/document-edits.ts';
import { fileKeyAdmin, type KeyAdmin, storeKeyAdmin } from '../keys/key-admin.ts';
import type { KeysFileChange } from '../keys/locked-file.ts';
import { hashToken } from '../keys/records.ts';
import { keyIdOf } from '../keys/schemas.ts';
import { newToken } from '../keys/tokens.ts';
import { silentLogger } from '../log.ts';
import { keyStoreOf } from '../store/key-store.ts';
import { openStore } from '../store/open.ts';
import { at, type When } from './key-options.ts';
import { ConfigError } from './options.ts';

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
    scopes?: KeyScope[] | undefined;
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
 * Who runs the CLI, for the audit trail: `cli` and the user name of the process's uid in
 * /etc/passwd, never the environment's claim (`$USER`, which Bun's `userInfo()` reads); `uid N`
 * when the uid has no name (a container run with `-u 65532`).
 */
function cliActor(): Actor {
  const uid = attempt(() => process.getuid?.()) ?? ownUid();
  return { kind: 'cli', user: (uid !== undefined && passwdName(uid)) || `uid ${uid ?? 'unknown'}` };
}

function attempt<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

/**
 * The process's uid, read as the owner of a temporary directory it makes: for a runtime that will
 * not tell it (Deno without --allow-sys, which also keeps /proc/self closed).
 */
function ownUid(): number | undefined {
  return attempt(() => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-uid-'));
    try {
      return statSync(dir).uid;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

/**
 * The uid and gid of `USER[:GROUP]` (names or numbers; the group defaults to the user's own),
 * from /etc/passwd and /etc/group.
 *
 * @example
 * fileOwnerOf('petstore') // { uid: 998, gid: 998 }
 */
export function fileOwnerOf(spec: string): { uid: number; gid: number } {
  const [user = '', group] = spec.split(':');
  const entry = (file: string, name: string) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .map((l) => l.split(':'))
      .find((f) => f[0] === name || (/^\d+$/.test(name) && f[2] === name));
  const pw = entry('/etc/passwd', user);
  if (!pw && !/^\d+$/.test(user)) throw new ConfigError(`--owner: no user "${user}" in /etc/passwd`);
  const uid = Number(pw?.[2] ?? user);
  let gid = Number(pw?.[3]);
  if (group !== undefined) {
    const gr = entry('/etc/group', group);
    if (!gr && !/^\d+$/.test(group)) throw new ConfigError(`--owner: no group "${group}" in /etc/group`);
    gid = Number(gr?.[2] ?? group);
  }
  if (!Number.isInteger(gid)) throw new ConfigError(`--owner: give the group of user "${user}" (USER:GROUP)`);
  return { uid, gid };
}

/**
 * Gives the keys file and its audit trail to `owner` (their mode does not change), so a service
 * running as that user can read them; later changes by root keep that owner.
 */
export function giveKeysFile(path: string, owner: { uid: number; gid: number }): void {
  for (const file of [path, auditPath(path)]) if (existsSync(file)) chownSync(file, owner.uid, owner.gid);
}

function passwdName(uid: number): string | undefined {
  try {
    const line = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.split(':')[2] === String(uid));
    return line?.split(':')[0] || undefined;
  } catch {
    return undefined;
  }
}

/** Where a keys command works: `--keys FILE` or `--data URL`, one of them. */
export interface KeysPlace {
  readonly keys: string;
  readonly data: string;
}

/**
 * Runs `work` on the keys a command works on, then releases them: the keys file, or the data store
 * of servers run with `--keys store` (opened, migrated, and closed afterwards).
 *
 * @example
 * await withKeys({ keys: '', data: 'postgres://…' }, (admin) => admin.read())
 */
export async function withKeys<T>(place: KeysPlace, work: (admin: KeyAdmin) => Promise<T>): Promise<T> {
  if (Boolean(place.keys) === Boolean(place.data)) {
    throw new ConfigError('give --keys FILE (a keys file) or --data URL (the store of --keys store), one of them');
  }
  if (place.keys) return work(fileKeyAdmin(place.keys));
  const store = await openStore(place.data, silentLogger);
  const keys = keyStoreOf(store);
  const admin = keys ? storeKeyAdmin(keys, undefined, () => store.close()) : undefined;
  if (!admin) {
    await store.close();
    throw new ConfigError(`--data: keys are kept in a SQLite file or a postgres:// URL, not ${place.data}`);
  }
  try {
    return await work(admin);
  } finally {
    await admin.close();
  }
}

/**
 * Applies one change to the keys with its audit record (under the file's lock, or in one store
 * transaction), then prints a new key's token on stdout and its id on stderr.
 *
 * @example
 * await change(place, { action: 'key.add', consumer: 'acme', key: 'k1', edit }, now, fresh)
 */
export async function change(
  place: KeysPlace,
  what: Omit<KeysFileChange, 'actor'>,
  now: number,
  fresh?: FreshKey,
  written?: () => void,
): Promise<void> {
  await withKeys(place, (admin) => admin.change({ ...what, actor: cliActor() }, now));
  written?.();
  if (!fresh) return;
  process.stdout.write(`${fresh.token}\n`);
  process.stderr.write(`key id: ${keyIdOf(fresh.key)} (consumer ${what.consumer}; token printed once on stdout)\n`);
}
