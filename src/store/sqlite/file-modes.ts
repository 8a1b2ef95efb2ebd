// Keeps the SQLite store's folder and files private to their user, whatever the umask:
// prepareDataFile() runs before SQLite opens the database, restrictCreated() after. A file that
// others may read gets a warning.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import process from 'node:process';
import type { Logger } from '../../log.ts';

/** The mode of the folder the server creates for its database: its user only. */
const DATA_DIR_MODE = 0o700;
/** The mode of the database file and SQLite's `-wal` and `-shm` files: its user only. */
const DATA_FILE_MODE = 0o600;

/** The files SQLite keeps for a database in WAL mode. */
const sqliteFiles = (file: string): string[] => [file, `${file}-wal`, `${file}-shm`];

/**
 * Call before SQLite opens `file`: creates missing folders 0700 and a new file 0600 (chmod after
 * creation, so the umask cannot change them); SQLite gives its `-wal` and `-shm` files the same
 * mode. An existing file keeps its mode; if others may read or write it, `log` warns with the
 * fix (`chmod 600 <file>`). Returns the files it created, for `restrictCreated`.
 *
 * @example
 * const made = prepareDataFile('/var/lib/petstore/petstore.db', log)
 */
export function prepareDataFile(file: string, log: Logger): string[] {
  if (process.platform === 'win32') return [];
  const dir = dirname(file);
  if (!existsSync(dir)) {
    mkdirSync(dir, { recursive: true, mode: DATA_DIR_MODE });
    chmodSync(dir, DATA_DIR_MODE);
  }
  const existing = sqliteFiles(file).filter((f) => existsSync(f));
  for (const f of existing) warnIfExposed(f, log);
  if (existing.includes(file)) return [];
  closeSync(openSync(file, 'a', DATA_FILE_MODE));
  chmodSync(file, DATA_FILE_MODE);
  return sqliteFiles(file).filter((f) => !existing.includes(f));
}

/**
 * Call after SQLite opens the database: sets 0600 on the files of `created` that now exist.
 * SQLite should copy the database's mode already; this makes sure whatever the runtime's SQLite.
 *
 * @example
 * restrictCreated(prepareDataFile(file, log))
 */
export function restrictCreated(created: readonly string[]): void {
  for (const f of created) if (existsSync(f)) chmodSync(f, DATA_FILE_MODE);
}

function warnIfExposed(file: string, log: Logger): void {
  const mode = statSync(file).mode & 0o777;
  if ((mode & 0o077) === 0) return;
  log.warn('the database file can be read or changed by other users', {
    file,
    mode: mode.toString(8),
    fix: `chmod 600 ${file}`,
  });
}
