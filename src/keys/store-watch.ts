// With --keys store, the data store's keys held in memory: KeysStoreWatcher keeps them current by
// PostgreSQL's NOTIFY and a polled version, and keeps the keys in force while the database is
// unreachable.
import { clearInterval, setInterval } from 'node:timers';
import type { Logger } from '../log.ts';
import { peerText } from '../redact.ts';
import type { KeyStore } from '../store/key-store.ts';
import { keyRecords } from './file.ts';
import { documentOf } from './key-admin.ts';
import type { KeyRecord } from './records.ts';

/**
 * How often the store's keys version is read: a change whose notification was lost (or, on
 * SQLite, any change by another process) is in force within this plus one read.
 */
const KEYS_VERSION_POLL_MS = 500;

export type StoreReloadTrigger = 'notification' | 'version check' | 'admin API' | 'SIGHUP';

export interface KeysStoreWatchOptions {
  store: KeyStore;
  log: Logger;
  apply(keys: KeyRecord[], trigger: StoreReloadTrigger): void;
  refuse(err: Error, trigger: StoreReloadTrigger): void;
  intervalMs?: number;
}

/**
 * The data store's keys, kept in memory so no request reads them. They are reloaded when
 * PostgreSQL notifies a change, when the polled version moves, and after this instance's admin
 * writes. While the database is unreachable the keys in force stay: `problem()` tells `/readyz`,
 * and the log says so once when the outage starts and once when it ends.
 *
 * @example
 * const watcher = new KeysStoreWatcher({ store: pets.keyStore(), log, apply, refuse })
 * table = new KeyTable(await watcher.load()); await watcher.start()
 */
export class KeysStoreWatcher {
  readonly #options: KeysStoreWatchOptions;
  #version: number | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  /** Why the keys may be out of date, while the database is unreachable. */
  #problem: string | undefined;
  #syncing: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  #checking = false;

  constructor(options: KeysStoreWatchOptions) {
    this.#options = options;
  }

  /** The keys at start; throws when they cannot be read or do not validate. */
  async load(): Promise<KeyRecord[]> {
    const { version, consumers } = await this.#options.store.read();
    this.#version = version;
    return keyRecords(documentOf(consumers));
  }

  /** Listens for notifications and polls the version until `stop()`. */
  async start(): Promise<void> {
    const timer = setInterval(() => void this.#check(), this.#options.intervalMs ?? KEYS_VERSION_POLL_MS);
    timer.unref?.();
    this.#timer = timer;
    this.#unlisten = await this.#options.store.listen(() => void this.sync('notification'));
  }

  async stop(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#unlisten?.();
  }

  /** Why `/readyz` should say the keys may be stale, or undefined. */
  problem(): string | undefined {
    return this.#problem;
  }

  /**
   * Reads the keys again, one read at a time. A call made during a read waits for a new read that
   * starts after it (shared by every call meanwhile), so a caller that committed a change before
   * calling never resolves on a read that began before its commit.
   */
  sync(trigger: StoreReloadTrigger): Promise<void> {
    if (!this.#syncing) {
      this.#syncing = this.#read(trigger).finally(() => {
        this.#syncing = undefined;
      });
      return this.#syncing;
    }
    this.#queued ??= this.#syncing.then(() => {
      this.#queued = undefined;
      return this.sync(trigger);
    });
    return this.#queued;
  }

  async #check(): Promise<void> {
    // One check at a time: while the database does not answer, checks must not pile up.
    if (this.#checking) return;
    this.#checking = true;
    try {
      let version: number;
      try {
        version = await this.#options.store.version();
      } catch (err) {
        this.#unreachable(err as Error);
        return;
      }
      if (this.#problem !== undefined || version !== this.#version) await this.sync('version check');
    } finally {
      this.#checking = false;
    }
  }

  async #read(trigger: StoreReloadTrigger): Promise<void> {
    let read: Awaited<ReturnType<KeyStore['read']>>;
    try {
      read = await this.#options.store.read();
    } catch (err) {
      this.#unreachable(err as Error);
      return;
    }
    if (this.#problem !== undefined) {
      this.#problem = undefined;
      this.#options.log.warn('keys store reachable again', { version: read.version });
    }
    if (read.version === this.#version) return;
    this.#version = read.version;
    let keys: KeyRecord[];
    try {
      keys = keyRecords(documentOf(read.consumers));
    } catch (err) {
      this.#options.refuse(err as Error, trigger);
      return;
    }
    this.#options.apply(keys, trigger);
  }

  #unreachable(err: Error): void {
    if (this.#problem !== undefined) return;
    this.#problem = 'The key store is not reachable; serving with the keys loaded before.';
    this.#options.log.error('keys store unreachable; serving with the keys in force', { error: peerText(err) });
  }
}
