// The keys file watched: KeysFileWatcher loads it at start and reloads it on SIGHUP, on the admin
// API's writes and whenever its content changes, keeping the keys in force when a change is bad.
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import process from 'node:process';
import { clearInterval, setInterval } from 'node:timers';
import type { Logger } from '../log.ts';
import { KeysFileError, keysFileExposure, parseKeys } from './file.ts';
import type { KeyRecord } from './records.ts';

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new KeysFileError(`cannot read ${path}: ${(err as Error).message}`);
  }
}

/** How often a watched keys file is read: a change is in force within this plus a reload. */
const KEYS_POLL_MS = 500;

/** What made a reload: the signal, a change the watcher saw, or the admin API's own write. */
export type ReloadTrigger = 'SIGHUP' | 'file change' | 'admin API';

export interface KeysFileWatchOptions {
  path: string;
  log: Logger;
  /** Serves with the new keys (and counts and logs the reload). */
  apply(keys: KeyRecord[], trigger: ReloadTrigger): void;
  /** Keeps the keys in force, and reports why the new ones were refused. */
  refuse(err: Error, trigger: ReloadTrigger): void;
  intervalMs?: number;
}

/**
 * The keys file, reloaded on SIGHUP and whenever its content changes (an edit, a rename over it,
 * a Kubernetes Secret's symlink swap). The content is polled and compared by digest: `fs.watch`
 * differs between runtimes and misses swapped symlinks, and an mtime can stay the same. Refused
 * content is not tried again until it changes, so a bad file is logged once. A file that cannot be
 * read at one poll is tried again at the next.
 *
 * @example
 * const watcher = new KeysFileWatcher({ path, log, apply: (keys) => { table = new KeyTable(keys) }, refuse })
 * const keys = watcher.load(); watcher.start()
 */
export class KeysFileWatcher {
  readonly #options: KeysFileWatchOptions;
  /** Digest of the content last loaded or refused. */
  #seen: string | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(options: KeysFileWatchOptions) {
    this.#options = options;
  }

  /** The keys at start; throws `KeysFileError` (exit 2). */
  load(): KeyRecord[] {
    const text = readText(this.#options.path);
    this.#seen = digest(text);
    const keys = parseKeys(text, this.#options.path);
    warnIfExposed(this.#options.path, this.#options.log);
    return keys;
  }

  /** Reads the file again and applies it, or refuses it keeping the keys in force. */
  reload(trigger: ReloadTrigger): void {
    let text: string;
    try {
      text = readText(this.#options.path);
    } catch (err) {
      this.#options.refuse(err as Error, trigger);
      return;
    }
    this.#apply(text, trigger);
  }

  #apply(text: string, trigger: ReloadTrigger): void {
    const { path, log, apply, refuse } = this.#options;
    this.#seen = digest(text);
    let keys: KeyRecord[];
    try {
      keys = parseKeys(text, path);
    } catch (err) {
      refuse(err as Error, trigger);
      return;
    }
    warnIfExposed(path, log);
    apply(keys, trigger);
  }

  /** Polls the file's content until `stop()`. */
  start(): void {
    const timer = setInterval(() => this.#poll(), this.#options.intervalMs ?? KEYS_POLL_MS);
    timer.unref?.();
    this.#timer = timer;
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #poll(): void {
    let text: string;
    try {
      text = readFileSync(this.#options.path, 'utf8');
    } catch {
      return; // mid-swap, or gone for now: the keys in force stay, and the next poll looks again
    }
    if (digest(text) !== this.#seen) this.#apply(text, 'file change');
  }
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * Warns (at start and on each reload) when the keys file's mode lets other users read or change it.
 */
function warnIfExposed(path: string, log: Logger): void {
  if (process.platform === 'win32') return;
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch {
    return; // replaced again since it was read: the next load looks at the new one
  }
  const problem = keysFileExposure(mode);
  if (problem) log.warn(`the keys file is ${problem}`, { file: path });
}
