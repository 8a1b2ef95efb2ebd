// Reading and rewriting a keys file safely for `petstore keys`: one writer at a time (a lock
// file), and every write atomic (a temporary file in the same directory, fsynced, renamed over
// the original), keeping the original's mode and owner so the server can still read it.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { basename, dirname, join } from 'node:path';
import process from 'node:process';
import { type Actor, type AuditAction, type AuditRecord, auditRecord } from './audit.ts';
import { appendAudit, auditPath } from './audit-file.ts';
import { withConsumerIds } from './document-edits.ts';
import { KeysFileError, keyRecords, parseDocument } from './file.ts';
import type { KeysDocument } from './schemas.ts';

/** How long `withLock` waits for another run's lock before it gives up. */
const LOCK_WAIT_MS = 10_000;
/** A lock whose holder's pid cannot be checked is taken over once it is this old. */
const LOCK_STALE_MS = 30_000;
const LOCK_RETRY_MS = 15;
/** Mode of a keys file the CLI creates: the owner only (the server warns on anything wider). */
const NEW_FILE_MODE = 0o600;

export class LockTimeoutError extends Error {
  override name = 'LockTimeoutError';
}

/**
 * Runs `fn` while holding `<path>.lock`, created with O_EXCL and holding this process's pid. A lock
 * left by a process that no longer runs is removed, as is one older than `LOCK_STALE_MS` whose pid
 * cannot be checked. Otherwise it waits up to `LOCK_WAIT_MS`, then throws `LockTimeoutError`.
 *
 * @example
 * await withLock('/etc/petstore/keys.json', async () => { ... read, change, write ... })
 */
export async function withLock<T>(path: string, fn: () => Promise<T> | T): Promise<T> {
  const lock = `${path}.lock`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const fd = fs.openSync(lock, 'wx', 0o600);
      fs.writeSync(fd, `${process.pid}\n`);
      fs.closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const stale = staleLock(lock);
      if (stale) {
        // Removed only if the lock is still the one found stale: its holder may have released it
        // and exited while it was checked, and another run taken the path since.
        if (sameLock(identityOf(lock), stale)) fs.rmSync(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw new LockTimeoutError(`${lock} is held by another run (pid ${readPid(lock) ?? 'unknown'}); retry later`);
      }
      await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS + Math.random() * LOCK_RETRY_MS));
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

function readPid(lock: string): number | undefined {
  try {
    const pid = Number.parseInt(fs.readFileSync(lock, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Which file a lock is: its inode and modification time, so a lock made again is another. */
interface LockIdentity {
  readonly ino: number;
  readonly mtimeMs: number;
}

function identityOf(lock: string): LockIdentity | undefined {
  try {
    const { ino, mtimeMs } = fs.statSync(lock);
    return { ino, mtimeMs };
  } catch {
    return undefined; // released meanwhile: the next open may succeed
  }
}

function sameLock(a: LockIdentity | undefined, b: LockIdentity): boolean {
  return a !== undefined && a.ino === b.ino && a.mtimeMs === b.mtimeMs;
}

/**
 * The lock's identity when it is abandoned: no process has its pid, or the pid cannot be checked
 * and the lock is older than `LOCK_STALE_MS`. Undefined while it is held, or once it is gone.
 */
function staleLock(lock: string): LockIdentity | undefined {
  const found = identityOf(lock);
  if (found === undefined) return undefined;
  const age = Date.now() - found.mtimeMs;
  const pid = readPid(lock);
  if (pid === undefined) return age > LOCK_STALE_MS ? found : undefined; // pid not written yet, or garbage
  try {
    process.kill(pid, 0);
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ESRCH') return found;
    return age > LOCK_STALE_MS ? found : undefined; // EPERM (another user's process) or no permission to ask
  }
}

/**
 * The keys file at `path`, validated as the server validates it (throws `KeysFileError` when bad),
 * or an empty consumers document when the file does not exist yet.
 */
export function readKeysDocument(path: string): KeysDocument {
  let text: string;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { consumers: [] };
    throw new KeysFileError(`cannot read ${path}: ${(err as Error).message}`);
  }
  const doc = parseDocument(text, path);
  keyRecords(doc);
  return doc;
}

/**
 * Replaces the file at `path` with `doc` atomically: a reader (the server on SIGHUP) sees the
 * old file or the new one, never a part. Keeps the original's mode, and its owner when run as
 * root; a new file is 0600. Validates `doc` first, so the CLI never writes a file the server
 * would refuse.
 */
export function writeKeysDocument(path: string, doc: KeysDocument): void {
  keyRecords(parseDocument(JSON.stringify(doc)));
  const text = `${JSON.stringify(doc, null, 2)}\n`;
  let original: fs.Stats | undefined;
  try {
    original = fs.statSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const dir = dirname(path);
  const temp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const mode = original ? original.mode & 0o7777 : NEW_FILE_MODE;
  const fd = fs.openSync(temp, 'wx', mode);
  try {
    fs.writeSync(fd, text);
    fs.fchmodSync(fd, mode); // the umask may have narrowed the open's mode
    if (original) keepOwner(fd, original);
    fs.fsyncSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(temp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  try {
    fs.renameSync(temp, path);
  } catch (err) {
    fs.rmSync(temp, { force: true });
    throw err;
  }
  syncDirectory(dir);
}

/**
 * Why this process cannot change the keys file at `path`, or undefined when it can. A change
 * writes a lock, a temporary file and the audit trail next to the file, so the directory must be
 * writable. Checked at start, so a read-only `/etc` is reported once with the fix rather than as a
 * 500 on every change.
 *
 * @example
 * keysFileWriteProblem('/etc/petstore/keys.json') // 'the admin API changes /etc/petstore/keys.json, …'
 */
export function keysFileWriteProblem(path: string): string | undefined {
  const dir = dirname(path);
  // Probes by writing as a change does (a new file in the directory, the trail opened to append),
  // not with access(2): Deno's node:fs answers access() without an error code.
  const probes: [string, () => void][] = [
    [
      dir,
      () => {
        const probe = join(dir, `.${basename(path)}.${process.pid}.probe`);
        fs.closeSync(fs.openSync(probe, 'wx', 0o600));
        fs.rmSync(probe, { force: true });
      },
    ],
    [auditPath(path), () => fs.existsSync(auditPath(path)) && fs.closeSync(fs.openSync(auditPath(path), 'a'))],
  ];
  for (const [target, probe] of probes) {
    try {
      probe();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).name;
      return (
        `the admin API (--admin-port) changes ${path}, writing ${basename(path)}.lock, a temporary file and ` +
        `${basename(auditPath(path))} in ${dir} and renaming over the file, but this process cannot write ${target} (${code}). ` +
        `Keep the keys file where the service can write (under systemd: /var/lib/petstore/keys.json, the unit's StateDirectory; ` +
        `PETSTORE_KEYS_FILE in /etc/petstore/petstore.env), or use --keys store, or start without --admin-port and change keys with petstore keys`
      );
    }
  }
  return undefined;
}

/**
 * Gives the new file the original's owner and group when they differ from the writer's. Only
 * root may give a file away; anyone else gets EPERM and keeps the file as their own, as an editor
 * would.
 */
function keepOwner(fd: number, original: fs.Stats): void {
  const now = fs.fstatSync(fd);
  if (now.uid === original.uid && now.gid === original.gid) return;
  try {
    fs.fchownSync(fd, original.uid, original.gid);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
  }
}

/**
 * Makes the rename durable by fsyncing the directory. Where a directory cannot be opened, the
 * rename is left as it is.
 */
function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch {
    // Windows, or a runtime without directory fds: the rename is still atomic.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** One change to a keys file, and what its audit record says about it. */
export interface KeysFileChange {
  readonly actor: Actor;
  readonly action: AuditAction;
  readonly consumer: string;
  /** The key it is about, when it is about one. */
  readonly key?: string;
  edit(doc: KeysDocument): KeysDocument;
}

/**
 * Applies `change` to the keys file at `path`, for both `petstore keys` and the admin API: under
 * the lock it reads, edits, validates and writes atomically, then appends the audit record to
 * `FILE.audit.jsonl`. Resolves to the record, or undefined when the edit returns the document it
 * was given (then nothing is written or recorded).
 *
 * @example
 * await changeKeysFile(path, { actor, action: 'key.revoke', consumer: 'acme', key: 'k1', edit: (d) => revokeKey(d, 'acme', 'k1', Date.now()) }, Date.now())
 */
export async function changeKeysFile(
  path: string,
  change: KeysFileChange,
  now: number,
): Promise<AuditRecord | undefined> {
  return withLock(path, () => {
    const before = readKeysDocument(path);
    const edited = change.edit(before);
    if (edited === before) return undefined; // nothing to change: nothing written, nothing recorded
    const after = withConsumerIds(before, edited);
    writeKeysDocument(path, after);
    const record = auditRecord(change.actor, change.action, change.consumer, change.key, before, after, now);
    appendAudit(path, [record]);
    return record;
  });
}
