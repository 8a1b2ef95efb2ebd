import { LRUCache } from 'lru-cache';
import type { Reply } from '../core/reply.ts';

/** Most bytes of bodies kept: a full page of 100 pets is about 7 KB, so at least 500 of those. */
export const MAX_MEMO_BYTES = 4 * 1024 * 1024;
/** Paths and queries remembered as asked once, so that the second asking keeps the answer. */
export const MAX_SEEN_KEYS = 4_096;

interface Kept {
  /** The store's version the reply was read at. */
  readonly version: unknown;
  readonly reply: Reply;
}

/**
 * Successful answers of operations whose answer depends only on their path, query and the
 * store's data (the table's `memo`), kept by the request's path and query while the store
 * reports the same version (`PetStore.version()`): a page or a pet asked for again is not
 * validated, read, encoded or hashed again. Bounded by the bytes of the bodies it holds, least
 * recently used first out. Safe because a reply is immutable (its body is a string) and is
 * used only at the version it was read at; a store that cannot tell its version (PostgreSQL
 * while it does not listen for other instances' writes) gives undefined, and nothing is kept
 * for it or served from here meanwhile.
 *
 * An answer is kept only when its key is asked a second time (the first asking is remembered,
 * key only, in a smaller table): clients paging through a large catalogue ask each page once,
 * and keeping those answers only churns the collector (bench/README.md).
 *
 * @example
 * const memo = new AnswerMemo()
 * memo.get('/v1/pets?limit=20', version) ?? memo.set('/v1/pets?limit=20', version, reply)
 */
export class AnswerMemo {
  readonly #kept: LRUCache<string, Kept>;
  readonly #seen = new LRUCache<string, true>({ max: MAX_SEEN_KEYS });

  constructor(maxBytes: number = MAX_MEMO_BYTES) {
    this.#kept = new LRUCache<string, Kept>({
      maxSize: maxBytes,
      sizeCalculation: ({ reply }) => Math.max(1, typeof reply.body === 'string' ? reply.body.length : 1),
    });
  }

  /** The reply kept under `key` at `version`, or undefined. */
  get(key: string, version: unknown): Reply | undefined {
    if (version === undefined) return undefined;
    const kept = this.#kept.get(key);
    return kept !== undefined && kept.version === version ? kept.reply : undefined;
  }

  /** Keeps `reply` under `key` when read at a known `version` and asked before; returns it. */
  set(key: string, version: unknown, reply: Reply): Reply {
    if (version === undefined) return reply;
    if (this.#kept.has(key) || this.#seen.delete(key)) this.#kept.set(key, { version, reply });
    else this.#seen.set(key, true);
    return reply;
  }
}
