// The reply memo of step 6.2 (`memoOrRun`): `ReplyMemo` keeps the 200 replies of reads by their
// path and query, and step 6.2 serves one while the store says that nothing it read has changed.
import { LRUCache } from 'lru-cache';
import type { PetSet, Reply } from '../core/reply.ts';
import type { ChangeCount, DataStore } from '../store/store.ts';
import { StoreUnavailableError } from '../store/store-error.ts';

/**
 * Most characters of memoised bodies, summed: the memo's bound (the pages' sizes are in
 * bench/README.md#measured-costs-behind-the-codes-choices).
 */
const MAX_MEMO_CHARS = 4 * 1024 * 1024;
/** How many paths and queries asked for once are remembered: a reply is memoised at the second. */
const MAX_SEEN_TARGETS = 4_096;

/**
 * What the memo asks of the store: its change count now, and whether what a reply read has changed
 * since a count.
 */
export type StoreChanges = Pick<DataStore, 'changeCount' | 'readsUnchangedSince'>;

/** One memoised reply. */
interface MemoEntry {
  /**
   * A change count at which the reply is known to be current. When `get` finds that nothing the
   * reply read has changed, it moves `since` to the count it was given, so the next `get` at that
   * count only compares the two counts.
   */
  since: ChangeCount;
  /** The pets the reply read (`Reply.reads`); undefined: every pet. */
  readonly reads: PetSet | undefined;
  readonly reply: Reply;
}

/** A read of one target under way: the change count it began at, and its reply to come. */
interface Flight {
  readonly since: ChangeCount;
  readonly reply: Promise<Reply>;
}

/**
 * The memo of replies, looked up by the request's target: its path and query as sent. This
 * docstring is the memo's whole rule; other places point here.
 *
 * It holds only 200 replies (`Reply`, never a 404) of operations whose answer depends only on the
 * target and the store (the table's `memo: true`), so the answer is the same for every caller. A
 * pet or a page asked for again is not read, turned into JSON or hashed again. Each hit is still
 * answered with a new `Response`, made by `answer()` (src/pipeline/answer.ts) and compressed as the
 * client asks.
 *
 * A memoised reply is served only while none of the pets it read (`Reply.reads`) has changed
 * since the store's change count (`changeCount()`, src/store/change-counter.ts) it was read at. A
 * write to one pet leaves the other pets' replies in place. With `--workers` above 1, any
 * worker's write that changed a pet, or failed, moves the count all workers share
 * (`sharedChangeCount`), so every reply memoised before it is stale: it stays in the memo,
 * unserved, until a new read of its path replaces it or it is evicted.
 *
 * When the store cannot tell its change count (`undefined`), the memo neither serves nor
 * memoises. The count is undefined while a hold has run out and is not yet expired, and whenever
 * else the store cannot tell what changed (`DataStore.changeCount`, src/store/store.ts). The memo
 * does not wait for the expiry of due orders; step 6.1 does, for the operations whose table entry
 * says `waitsForDueOrderExpiry`.
 *
 * A reply is memoised the second time its path and query are asked for; the first time they are
 * only remembered. Otherwise a client paging once through a large catalogue would fill the memo.
 *
 * For example, in one process (no `--workers`): `GET /v1/pets/7` asked for the first time is read
 * and only remembered. Asked again, it is read again and memoised at the change count it began
 * at, say N. Asked a third time while the count is still N, it is served from the memo. A
 * `PATCH /v1/pets/7` that changes the pet moves the count to N+1 and marks pet 7 changed at N+1,
 * so the next GET finds pet 7 changed since N: it reads the pet again and memoises that reply at
 * once, the path having been asked for before. Had the PATCH changed pet 8 instead, the next GET
 * would find pet 7 unchanged since N: it is served the memoised reply, whose `since` moves to N+1,
 * so later GETs at N+1 only compare the two counts. With `--workers` above 1, a PATCH of pet 8
 * makes pet 7 read again too.
 *
 * While one request reads a path, others asking for the same path wait and share its reply: they
 * have joined it (`readOrJoin`). So a slow store is not asked for the same read many times.
 *
 * The memo is bounded by the characters of its bodies; the least recently used goes first.
 *
 * @example
 * const memo = new ReplyMemo(store)
 * const count = memo.changeCount()
 * const reply =
 *   memo.get('/v1/pets/7', count) ?? (await memo.readOrJoin('/v1/pets/7', count, read)).reply
 */
export class ReplyMemo {
  readonly #entries: LRUCache<string, MemoEntry>;
  readonly #seen = new LRUCache<string, true>({ max: MAX_SEEN_TARGETS });
  readonly #store: StoreChanges;
  readonly #flights = new Map<string, Flight>();

  constructor(store: StoreChanges, maxChars: number = MAX_MEMO_CHARS) {
    this.#store = store;
    // Memoised bodies are JSON text; any other body would count as one character.
    this.#entries = new LRUCache<string, MemoEntry>({
      maxSize: maxChars,
      sizeCalculation: ({ reply }) => Math.max(1, typeof reply.body === 'string' ? reply.body.length : 1),
    });
  }

  /** Returns the store's change count now: what `get` and `readOrJoin` are given. */
  changeCount(): ChangeCount {
    return this.#store.changeCount();
  }

  /**
   * Returns the reply memoised for `target` when the change `count` is known and nothing the reply
   * read has changed; else undefined.
   */
  get(target: string, count: ChangeCount): Reply | undefined {
    if (count === undefined) return undefined;
    const entry = this.#entries.get(target);
    if (entry === undefined) return undefined;
    if (entry.since === count) return entry.reply;
    if (!this.#store.readsUnchangedSince(entry.since, entry.reads)) return undefined;
    entry.since = count;
    return entry.reply;
  }

  /**
   * Returns the reply for a request that found nothing memoised for `target` (`get`), at change
   * count `count`. When another request is reading `target`, this one waits for that read and
   * shares its 200 (`joined`) unless what the read saw has changed since; it waits for at most
   * `joins` reads before it reads itself. With no read under way, it calls `read()` and memoises a
   * 200. If a read it waited for threw, it rethrows a store outage (`StoreUnavailableError`, a
   * 503) and otherwise reads itself.
   */
  async readOrJoin(
    target: string,
    count: ChangeCount,
    read: () => Promise<Reply>,
    // Two, because the read under way may have begun before a change and the next one usually
    // begins after it; more would let steady writes keep a request waiting without end.
    joins = 2,
  ): Promise<{ reply: Reply; joined: boolean }> {
    if (count === undefined) return { reply: await read(), joined: false };
    const flight = this.#flights.get(target);
    if (flight !== undefined) {
      if (joins === 0) return { reply: this.#memoiseIf200(target, count, await read()), joined: false };
      const reply = await flight.reply.catch((err: unknown) => {
        // The store could not answer the read this request waited for: rethrow the 503 rather
        // than start a second read that would also time out.
        if (err instanceof StoreUnavailableError) throw err;
        return undefined;
      });
      if (reply?.status !== 200) return { reply: this.#memoiseIf200(target, count, await read()), joined: false };
      // A joined request's own input is never read. That is safe because `routeOf`
      // (src/pipeline/operation-route.ts) lets a memoised operation read only the path and query
      // (no headers, no body, not the caller's quota or key; its handler reads no owner), and the
      // read joined had the same ones.
      if (flight.since === count || this.#store.readsUnchangedSince(flight.since, reply.reads))
        return { reply, joined: true };
      return this.readOrJoin(target, this.#store.changeCount(), read, joins - 1);
    }
    const mine: Flight = { since: count, reply: read() };
    this.#flights.set(target, mine);
    try {
      return { reply: this.#memoiseIf200(target, count, await mine.reply), joined: false };
    } finally {
      if (this.#flights.get(target) === mine) this.#flights.delete(target);
    }
  }

  /**
   * Memoises `reply` for `target` when it is a 200 read at a known `count` and `target` was asked
   * before; returns it.
   */
  #memoiseIf200(target: string, count: ChangeCount, reply: Reply): Reply {
    if (reply.status !== 200 || count === undefined) return reply;
    if (this.#entries.has(target) || this.#seen.delete(target))
      this.#entries.set(target, { since: count, reads: reply.reads, reply });
    else this.#seen.set(target, true);
    return reply;
  }
}
