// The keys in force, which the gateway identifies callers with: LiveKeys holds them (the keys
// file's, the data store's or a development key), reloads them, and logs and counts each reload.
import type { Logger } from '../log.ts';
import { peerText } from '../redact.ts';
import { keyStoreOf } from '../store/key-store.ts';
import type { DataStore, OwnerMove } from '../store/store.ts';
import { developmentKeys } from './dev-key.ts';
import { KeysFileWatcher } from './file-watch.ts';
import { fileKeyAdmin, type KeyAdmin, storeConsumerIdsIn, storeKeyAdmin } from './key-admin.ts';
import { type KeyRecord, ownerOf } from './records.ts';
import { KeysStoreWatcher } from './store-watch.ts';
import { KeyTable } from './table.ts';

/** `--keys store`: consumers and keys kept in the `--data` store. */
export const KEYS_STORE = 'store';

/**
 * What LiveKeys counts at each load and reload. `Metrics` (src/metrics/registry.ts) implements it;
 * the interface is declared here because src/metrics/ is a layer above src/keys/.
 */
export interface KeysCounters {
  /** The keys now in force, by plan. */
  keysLoaded(byPlan: Record<string, number>): void;
  /** The consumers and keys now in force, which label the per-consumer series. */
  readonly consumers: { load(keys: readonly KeyRecord[]): void };
  /** A reload applied (`true`) or refused. */
  reloaded(ok: boolean): void;
}

/**
 * The keys in force: from the keys file (watched), the store (`--keys store`, read once the store
 * is open) or a development key made for this run. Each change replaces the whole table and is
 * logged and counted.
 *
 * @example
 * const liveKeys = new LiveKeys(config.keys, log, metrics)
 * await liveKeys.loadFromStore(store)    // with --keys store: the store's keys
 * await liveKeys.settleIdentities(store) // consumers' ids stored, their orders moved to those ids
 * await liveKeys.start()
 * createApp({ keyTable: () => liveKeys.table, ... })
 */
export class LiveKeys {
  /** The table that identifies requests now. */
  table: KeyTable;
  /** The development key's token, made when no `--keys` is given; shown once the server listens. */
  readonly devToken: string | undefined;
  readonly #log: Logger;
  readonly #metrics: KeysCounters | undefined;
  readonly #source: Record<string, string>;
  readonly #path: string;
  readonly #file: KeysFileWatcher | undefined;
  #storeWatcher: KeysStoreWatcher | undefined;
  #admin: KeyAdmin | undefined;
  /**
   * The store of the consumers' orders, set by `settleIdentities()`; `#adopt()` moves orders in it
   * at every load.
   */
  #dataStore: DataStore | undefined;
  #listeners: ((table: KeyTable) => void)[] = [];

  /** Reads the keys file (a `KeysFileError` when it is bad) or makes the development key. */
  constructor(keys: string, log: Logger, metrics: KeysCounters | undefined) {
    this.#log = log;
    this.#metrics = metrics;
    this.#path = keys;
    const fromStore = keys === KEYS_STORE;
    this.#source = fromStore ? { source: 'store' } : { file: keys };
    const apply = (loaded: KeyRecord[], trigger: string) => this.#apply(loaded, trigger);
    const refuse = (err: Error, trigger: string) => this.#refuse(err, trigger);
    this.#file = keys && !fromStore ? new KeysFileWatcher({ path: keys, log, apply, refuse }) : undefined;
    this.#admin = this.#file ? fileKeyAdmin(keys, () => this.#file?.reload('admin API')) : undefined;
    const start = this.#file ? { records: this.#file.load() } : fromStore ? { records: [] } : developmentKeys();
    this.devToken = start.devToken;
    this.table = this.#loaded(start.records);
  }

  /** With `--keys store`: reads the store's keys; `start()` then watches them. */
  async loadFromStore(store: DataStore): Promise<void> {
    if (this.#path !== KEYS_STORE) return;
    const keyStore = keyStoreOf(store);
    // parseConfig refuses `--keys store` with a --data that keeps no keys.
    if (!keyStore) throw new Error('--keys store: the store keeps no keys');
    const apply = (loaded: KeyRecord[], trigger: string) => this.#apply(loaded, trigger);
    const refuse = (err: Error, trigger: string) => this.#refuse(err, trigger);
    const watcher = new KeysStoreWatcher({ store: keyStore, log: this.#log, apply, refuse });
    this.table = this.#loaded(await watcher.load());
    this.#storeWatcher = watcher;
    this.#admin = storeKeyAdmin(keyStore, () => watcher.sync('admin API'));
  }

  /**
   * Calls `listener` with each table that replaces the one in force (the workers are handed it).
   */
  onChange(listener: (table: KeyTable) => void): void {
    this.#listeners.push(listener);
  }

  /**
   * Call once the store is open, before serving. With `--keys store`, stores an id for each stored
   * consumer that has none, so its identity no longer depends on its first key. A keys file is
   * never written at start; it gets ids at its first change by `petstore keys` or the admin API.
   * Then each consumer with a derived id adopts its older orders (`Consumer.adopts`;
   * docs/operations.md, "Consumer identity").
   */
  async settleIdentities(store: DataStore): Promise<void> {
    this.#dataStore = store;
    try {
      const keyStore = this.#storeWatcher ? keyStoreOf(store) : undefined;
      if (keyStore && (await storeConsumerIdsIn(keyStore))) await this.#storeWatcher?.sync('version check');
    } catch (err) {
      this.#log.warn("could not store the consumers' ids; they stay derived from their first keys", {
        ...this.#source,
        error: peerText(err as Error),
      });
    }
    await this.#adopt();
  }

  /** How many consumers the keys in force name. */
  get consumers(): number {
    return new Set(this.table.records().map((record) => record.consumer.name)).size;
  }

  /** What the admin API changes keys through; none without `--keys`. */
  get keyAdmin(): KeyAdmin | undefined {
    return this.#admin;
  }

  /**
   * Why the store's keys may be stale (for `/readyz`); undefined when they are not, or not the
   * store's.
   */
  problem(): string | undefined {
    return this.#storeWatcher?.problem();
  }

  /** On SIGHUP: reads the keys again now. */
  reload(): void {
    if (this.#file) this.#file.reload('SIGHUP');
    else if (this.#storeWatcher) void this.#storeWatcher.sync('SIGHUP');
    else this.#log.warn('SIGHUP: no keys file to reload (started without --keys)');
  }

  /** Starts watching: a change to the file or the store is in force within a second, no SIGHUP. */
  async start(): Promise<void> {
    this.#file?.start();
    await this.#storeWatcher?.start();
  }

  async stop(): Promise<void> {
    this.#file?.stop();
    await this.#storeWatcher?.stop();
  }

  #loaded(records: KeyRecord[]): KeyTable {
    const table = new KeyTable(records);
    this.#metrics?.keysLoaded(table.countByPlan());
    this.#metrics?.consumers.load(table.records());
    return table;
  }

  /** Moves the orders stored under each consumer's legacy owner (`adopts`) to its owner. */
  async #adopt(): Promise<void> {
    const moves = new Map<string, OwnerMove>();
    for (const { consumer } of this.table.records()) {
      if (consumer.adopts !== undefined) moves.set(consumer.adopts, { from: consumer.adopts, to: ownerOf(consumer) });
    }
    if (!this.#dataStore || moves.size === 0) return;
    try {
      await this.#dataStore.adoptOwners([...moves.values()]);
    } catch (err) {
      this.#log.warn(
        'could not move the orders stored under consumer names to their ids; tried again at the next load',
        {
          error: peerText(err as Error),
        },
      );
    }
  }

  #apply(loaded: KeyRecord[], trigger: string): void {
    this.table = this.#loaded(loaded);
    void this.#adopt();
    for (const listener of this.#listeners) listener(this.table);
    this.#metrics?.reloaded(true);
    this.#log.info('keys reloaded', { ...this.#source, trigger, keysByPlan: this.table.countByPlan() });
  }

  #refuse(err: Error, trigger: string): void {
    this.#metrics?.reloaded(false);
    this.#log.error('keys reload failed; keeping the previous keys', {
      ...this.#source,
      trigger,
      error: peerText(err),
    });
  }
}
