// The wrapper that bounds every store call in time, fails calls at once while the database is
// unreachable, and traces each call as a child span of the request (`tracedCalls` of traced.ts,
// placed around the bound).
//
// - A call still unsettled after `timeoutMs` is rejected with `StoreTimeoutError` (503), whatever
//   the backend waits for. A write's message says it may still have taken effect.
// - A call that fails with `StoreUnreachableError` marks the database unreachable. Every call is
//   then rejected at once, and a probe pings the backend until it answers. Both transitions are
//   logged once.
import { clearTimeout, setTimeout } from 'node:timers';
import { type Clock, systemClock } from '../../core/clock.ts';
import type { Logger } from '../../log.ts';
import { peerText } from '../../redact.ts';
import { type CallWrap, type DataStore, STORE_CALLS, type WrappedStore, wrapStore } from '../store.ts';
import { OUTCOME_UNKNOWN, StoreTimeoutError, StoreUnreachableError } from '../store-error.ts';
import { type DbSystem, tracedCalls } from './traced.ts';

/** `--store-timeout`'s default: the longest a request waits for the store. */
export const DEFAULT_STORE_TIMEOUT_MS = 2_000;
/** While the database is unreachable, the pause between the end of one probe and the next. */
export const PROBE_INTERVAL_MS = 250;
/** Once this many settled calls sit at the head of the queue, they are dropped in one go. */
const COMPACT_AFTER = 1_024;

/** The one-shot timers the wrapper sets; tests pass fake ones and move time by hand. */
export interface Timers {
  set(run: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

/** The runtime's timers, unref'd: a pending deadline or probe never keeps the process alive. */
const systemTimers: Timers = {
  set: (run, ms) => setTimeout(run, ms).unref(),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export interface BoundAndTracedStoreOptions {
  /** The longest a call may take (`--store-timeout`). */
  readonly timeoutMs?: number;
  readonly log: Logger;
  readonly probeIntervalMs?: number;
  readonly clock?: Clock;
  readonly timers?: Timers;
  /**
   * The database, for the calls' spans (src/store/wrappers/traced.ts): `sqlite` or `postgresql`;
   * none in memory.
   */
  readonly system?: DbSystem;
}

/** A call in flight, rejected with `StoreTimeoutError` at `deadline` unless settled by then. */
interface Call {
  readonly started: number;
  readonly deadline: number;
  readonly doing: string;
  readonly mayWrite: boolean;
  settled: boolean;
  readonly fail: (err: Error) => void;
}

/** The store `boundAndTraced()` returns, which also tells whether the database is unreachable. */
export interface BoundAndTracedStore extends WrappedStore {
  /** True while calls fail at once because the database is unreachable. */
  readonly unreachable: boolean;
}

/**
 * Returns `backend` with every call of `STORE_CALLS` and `OUTBOX_CALLS` bounded in time, and
 * traced as a child span when the request is recorded.
 *
 * @example
 * const store = boundAndTraced(await PostgresStore.open({ url, log }), { timeoutMs: 2_000, log });
 * await store.list({ limit: 20 }); // rejects with StoreTimeoutError after 2 s without an answer
 */
export function boundAndTraced(backend: DataStore, options: BoundAndTracedStoreOptions): BoundAndTracedStore {
  const bound = new TimeBound(backend, options);
  // The span goes around the bound, so a timeout ends the span with status Error.
  const call: CallWrap = tracedCalls((run, { doing, mayWrite }) => bound.call(doing, mayWrite, run), options.system);
  const store = wrapStore(backend, call, {
    // A read waits for a running expiry, bounded like any call, so during an outage a read that
    // meets a due hold gets its 503 in time instead of hanging. `changeCount()` is synchronous, so
    // it needs no bound.
    startDueOrderExpiry: () => {
      const expiring = backend.startDueOrderExpiry();
      return expiring && call(() => expiring, STORE_CALLS.expireDueOrders);
    },
    close: () => bound.close(),
  });
  return {
    ...store,
    get unreachable() {
      return bound.unreachable;
    },
  };
}

/** The bound's state: the calls in flight with their single deadline timer, and any outage. */
class TimeBound {
  readonly #backend: DataStore;
  readonly #timeoutMs: number;
  readonly #log: Logger;
  readonly #probeIntervalMs: number;
  readonly #clock: Clock;
  readonly #timers: Timers;
  /**
   * Calls in the order they began. Every call has the same timeout, so this is also deadline
   * order, and one timer for the oldest unsettled call bounds them all.
   */
  #calls: Call[] = [];
  #head = 0;
  #deadlineTimer: unknown;
  /** When the database became unreachable (epoch ms); undefined while it is reachable. */
  #unreachableSince: number | undefined;
  /**
   * When a probe last reached the database (epoch ms); calls begun before then cannot mark it
   * unreachable.
   */
  #backAt = Number.NEGATIVE_INFINITY;
  #reason = '';
  #probeTimer: unknown;
  #closed = false;

  constructor(
    backend: DataStore,
    {
      timeoutMs = DEFAULT_STORE_TIMEOUT_MS,
      log,
      probeIntervalMs = PROBE_INTERVAL_MS,
      clock = systemClock,
      timers = systemTimers,
    }: BoundAndTracedStoreOptions,
  ) {
    this.#backend = backend;
    this.#timeoutMs = timeoutMs;
    this.#log = log;
    this.#probeIntervalMs = probeIntervalMs;
    this.#clock = clock;
    this.#timers = timers;
  }

  /** True while calls fail at once because the database is unreachable. */
  get unreachable(): boolean {
    return this.#unreachableSince !== undefined;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#timers.clear(this.#probeTimer);
    await this.#backend.close();
  }

  call<T>(doing: string, mayWrite: boolean, run: () => Promise<T>): Promise<T> {
    if (this.#unreachableSince !== undefined) {
      return Promise.reject(new StoreUnreachableError(`${doing}: the database is unreachable (${this.#reason})`));
    }
    return this.#bounded(doing, mayWrite, run);
  }

  #bounded<T>(doing: string, mayWrite: boolean, run: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const started = this.#clock.now();
      const call: Call = {
        started,
        deadline: started + this.#timeoutMs,
        doing,
        mayWrite,
        settled: false,
        fail: reject,
      };
      this.#watch(call);
      const failed = (err: unknown) => {
        call.settled = true;
        // A call begun before the last successful probe may fail late with the old outage; that
        // says nothing about the database now.
        if (err instanceof StoreUnreachableError && started >= this.#backAt) {
          this.#markUnreachable(peerText(err.cause instanceof Error ? err.cause : err));
        }
        reject(err);
      };
      try {
        run().then((value) => {
          call.settled = true;
          resolve(value);
        }, failed);
      } catch (err) {
        failed(err);
      }
    });
  }

  #watch(call: Call): void {
    const calls = this.#calls;
    while (this.#head < calls.length && (calls[this.#head] as Call).settled) this.#head++;
    if (this.#head >= COMPACT_AFTER) {
      this.#calls = calls.slice(this.#head);
      this.#head = 0;
    }
    this.#calls.push(call);
    if (this.#deadlineTimer === undefined) this.#armDeadline(this.#timeoutMs);
  }

  #armDeadline(ms: number): void {
    this.#deadlineTimer = this.#timers.set(() => this.#rejectOverdue(), Math.max(1, ms));
  }

  /** Rejects every unsettled call whose deadline has passed; re-arms for the next one. */
  #rejectOverdue(): void {
    this.#deadlineTimer = undefined;
    const now = this.#clock.now();
    const calls = this.#calls;
    while (this.#head < calls.length) {
      const call = calls[this.#head] as Call;
      if (!call.settled) {
        if (call.deadline > now) break;
        call.settled = true;
        call.fail(this.#timeoutError(call));
      }
      this.#head++;
    }
    if (this.#head >= calls.length) {
      this.#calls = [];
      this.#head = 0;
      return;
    }
    this.#armDeadline((calls[this.#head] as Call).deadline - now);
  }

  #timeoutError({ doing, mayWrite }: Call): StoreTimeoutError {
    const what = `${doing}: no answer from the store within ${this.#timeoutMs} ms`;
    return new StoreTimeoutError(mayWrite ? `${what}; ${OUTCOME_UNKNOWN}` : what);
  }

  #markUnreachable(reason: string): void {
    this.#reason = reason;
    if (this.#unreachableSince !== undefined || this.#closed) return;
    this.#unreachableSince = this.#clock.now();
    this.#log.warn('store unreachable; answering 503 at once until a probe finds it again', {
      reason,
      probeEveryMs: this.#probeIntervalMs,
    });
    this.#scheduleProbe();
  }

  #scheduleProbe(): void {
    this.#probeTimer = this.#timers.set(() => void this.#probe(), this.#probeIntervalMs);
  }

  async #probe(): Promise<void> {
    if (this.#closed) return;
    try {
      await this.#bounded('ping', false, () => this.#backend.ping());
    } catch (err) {
      if (!(err instanceof StoreUnreachableError)) this.#reason = peerText(err);
      this.#log.debug('store probe failed', { reason: this.#reason });
      if (!this.#closed) this.#scheduleProbe();
      return;
    }
    this.#backAt = this.#clock.now();
    const unreachableMs = this.#backAt - (this.#unreachableSince ?? this.#backAt);
    this.#unreachableSince = undefined;
    this.#log.info('store reachable again; serving', { awayMs: unreachableMs });
  }
}
