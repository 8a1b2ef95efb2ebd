import type { Pet } from '../schemas.ts';

/** Distinct pages kept at once (filters x cursors x sizes); past this the cache starts over. */
const MAX_PAGES = 256;

/**
 * Pages of `list` already read, kept only while the database is unchanged. `version` is SQLite's
 * `PRAGMA data_version`, which changes when any other connection (another process) commits;
 * the store calls `clear()` on its own commits, which `data_version` does not report. Reading
 * and mapping a page of 21 rows costs about 10 µs, validating it about 1 µs (bench/README.md).
 *
 * @example
 * const hit = cache.get(key, version) ?? cache.set(key, version, readPage())
 */
export class PageCache {
  #version: unknown;
  readonly #pages = new Map<string, readonly Pet[]>();

  /** A fresh copy of the page (callers may shorten it), or undefined when not cached at `version`. */
  get(key: string, version: unknown): Pet[] | undefined {
    if (version !== this.#version) {
      this.#pages.clear();
      this.#version = version;
      return undefined;
    }
    return this.#pages.get(key)?.slice();
  }

  /** Keeps a frozen copy of `pets` under `key` when read at `version`; returns `pets`. */
  set(key: string, version: unknown, pets: Pet[]): Pet[] {
    if (version !== this.#version) return pets;
    if (this.#pages.size >= MAX_PAGES) this.#pages.clear();
    this.#pages.set(key, Object.freeze(pets.map((p) => Object.freeze({ ...p }))));
    return pets;
  }

  /** Forgets every page: the store wrote. */
  clear(): void {
    this.#pages.clear();
  }
}
