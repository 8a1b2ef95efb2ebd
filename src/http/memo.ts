// Step 5's kept answers: `AnswerMemo` keeps a read's reply by its path and query and gives it
// again while the store says nothing the reply read has changed (its change count).
import { LRUCache } from 'lru-cache';
import type { PetsTouched, Reply } from '../core/reply.ts';
import type { ChangeCount, DataStore } from '../store/store.ts';
import { StoreUnavailableError } from '../store/store-error.ts';

/**
 * Most characters of bodies kept, the sum of their `length`s (a body of ASCII text is as many
 * bytes): a full page of 100 pets is about 7,000, so at least 500 of those.
 */
export const MAX_MEMO_CHARS = 4 * 1024 * 1024;
/** Paths and queries remembered as asked once, so that the second asking keeps the answer. */
export const MAX_SEEN_KEYS = 4_096;

/**
 * What kept answers ask of the store: its due orders expired (an expiry changes pets), its
 * change count before a read, and whether what a reply read changed since.
 */
export type StoreChanges = Pick<DataStore, 'startDueExpiry' | 'changeCount' | 'unchanged'>;
/** What the memo itself asks: the count now, and whether what a reply read changed since. */
type CountedChanges = Pick<StoreChanges, 'changeCount' | 'unchanged'>;

interface Kept {
  /**
   * A change count the reply is known true at: the one it was read at, moved on to the count a
   * later `get` found nothing it read changed by (so the next `get` at that count compares the
   * counts alone, not each pet the reply read).
   */
  since: ChangeCount;
  /** What it read (`Reply.reads`); undefined: every pet. */
  readonly reads: PetsTouched | undefined;
  readonly reply: Reply;
}

/** A read of a key under way: the change count it began at, and its reply to come. */
interface Flight {
  readonly since: ChangeCount;
  readonly reply: Promise<Reply>;
}

/**
 * Successful answers of operations whose answer depends only on their path, query and the
 * store's data (the table's `memo`), kept by the request's path and query while none of the
 * pets they read has changed (`Reply.reads`, `DataStore.unchanged`): a page or a pet asked for
 * again is not validated, read, encoded or hashed again, and a write to one pet leaves the
 * others' answers in place. Bounded by the characters of the bodies it holds, least recently used
 * first out. Safe because a reply is immutable (its body is a string) and is served only while
 * the store says nothing it read changed after the change count read before it; a store that
 * cannot tell its count (PostgreSQL while it does not listen for other instances' writes, any
 * store while an order's hold has run out and is not yet expired) gives undefined, and nothing
 * is kept for it or served from here meanwhile.
 *
 * An answer is kept only when its key is asked a second time (the first asking is remembered,
 * key only, in a smaller table): clients paging through a large catalogue ask each page once,
 * and keeping those answers only churns the collector (bench/README.md).
 *
 * A request that finds nothing kept while a read of its key is under way waits for that read
 * and is answered by it when nothing the read saw has changed since it began (`readOrJoin`): on
 * PostgreSQL, where a read takes a round trip, the requests that arrive meanwhile do not each
 * read again.
 *
 * @example
 * const memo = new AnswerMemo(store)
 * await store.startDueExpiry() // a pet read waits for due holds to expire (answerOperation)
 * const count = store.changeCount()
 * const reply = memo.get(key, count) ?? (await memo.readOrJoin(key, count, read)).reply
 */
export class AnswerMemo {
  readonly #kept: LRUCache<string, Kept>;
  readonly #seen = new LRUCache<string, true>({ max: MAX_SEEN_KEYS });
  readonly #store: CountedChanges;
  readonly #flights = new Map<string, Flight>();

  constructor(store: CountedChanges, maxChars: number = MAX_MEMO_CHARS) {
    this.#store = store;
    this.#kept = new LRUCache<string, Kept>({
      maxSize: maxChars,
      sizeCalculation: ({ reply }) => Math.max(1, typeof reply.body === 'string' ? reply.body.length : 1),
    });
  }

  /** The reply kept under `key`, when the store's change `count` is known and nothing the reply read changed since it was read. */
  get(key: string, count: ChangeCount): Reply | undefined {
    if (count === undefined) return undefined;
    const kept = this.#kept.get(key);
    if (kept === undefined) return undefined;
    if (kept.since === count) return kept.reply;
    if (!this.#store.unchanged(kept.since, kept.reads)) return undefined;
    kept.since = count;
    return kept.reply;
  }

  /**
   * The answer for a request that found nothing kept under `key` (`get`), at change count `count`.
   *
   * - When another request is already reading `key`, this one waits for that read and shares its
   *   200, if nothing that read saw has changed since it began. `joined` is then true: this
   *   request read nothing itself.
   * - Otherwise it calls `read()`, and keeps a 200 as `set` does. Requests that arrive while the
   *   read runs wait for it in turn.
   * - When what the shared read saw changed meanwhile, the first request waiting reads again and
   *   the others share that read. `joins` is how many reads of others a request waits for before
   *   it reads for itself.
   * - When the store cannot answer the shared read (503), the requests waiting for it fail with it.
   */
  async readOrJoin(
    key: string,
    count: ChangeCount,
    read: () => Promise<Reply>,
    joins = 2,
  ): Promise<{ reply: Reply; joined: boolean }> {
    if (count === undefined) return { reply: await read(), joined: false };
    const flight = this.#flights.get(key);
    if (flight !== undefined) {
      if (joins === 0) return { reply: this.#keepIf200(key, count, await read()), joined: false };
      const reply = await flight.reply.catch((err: unknown) => {
        // The store could not answer the read this request waited for: it answers the same, as
        // soon, rather than begin a read of its own past the store's bound.
        if (err instanceof StoreUnavailableError) throw err;
        return undefined;
      });
      if (reply?.status !== 200) return { reply: this.#keepIf200(key, count, await read()), joined: false };
      if (flight.since === count || this.#store.unchanged(flight.since, reply.reads)) return { reply, joined: true };
      return this.readOrJoin(key, this.#store.changeCount(), read, joins - 1);
    }
    const mine: Flight = { since: count, reply: read() };
    this.#flights.set(key, mine);
    try {
      return { reply: this.#keepIf200(key, count, await mine.reply), joined: false };
    } finally {
      if (this.#flights.get(key) === mine) this.#flights.delete(key);
    }
  }

  #keepIf200(key: string, count: ChangeCount, reply: Reply): Reply {
    return reply.status === 200 ? this.set(key, count, reply) : reply;
  }

  /** Keeps `reply` under `key` when read at a known `count` and asked before; returns it. */
  set(key: string, count: ChangeCount, reply: Reply): Reply {
    if (count === undefined) return reply;
    if (this.#kept.has(key) || this.#seen.delete(key)) this.#kept.set(key, { since: count, reads: reply.reads, reply });
    else this.#seen.set(key, true);
    return reply;
  }
}
