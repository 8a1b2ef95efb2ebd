// The webhook outbox: events recorded durably in the same store as the pets, then claimed by a
// delivery loop (`claimed_by`, `claimed_until`), so among instances sharing a database only one
// delivers an event at a time. The store sees plain records; what an event means and where it
// goes belongs to src/webhooks/.

/** One recorded event. `id` is unique across the fleet; recording it twice keeps the first. */
export interface OutboxEvent {
  readonly id: string;
  /** Whose webhook it goes to (a consumer's name). */
  readonly consumer: string;
  /** `quota.threshold`, `quota.exhausted`, `key.banned`, `key.expiring`. */
  readonly type: string;
  /** The JSON body to send, as it will be signed. */
  readonly payload: string;
  /** Epoch ms it was recorded. */
  readonly createdAt: number;
  /** The W3C `traceparent` of the request that recorded it; the delivery's span links to it. */
  readonly traceparent?: string;
}

/** An event claimed by a delivery loop, with the attempts made so far. */
export interface OutboxEntry extends OutboxEvent {
  readonly attempts: number;
}

/** The result of one delivery attempt. */
export type Settlement =
  | { readonly outcome: 'delivered' }
  | { readonly outcome: 'retry'; readonly at: number; readonly error: string }
  | { readonly outcome: 'failed'; readonly error: string };

export interface OutboxStats {
  /** Events waiting to be delivered (claimed ones included). */
  readonly pending: number;
  /** Events given up on, kept until `trim` drops them. */
  readonly failed: number;
  /** Epoch ms the oldest pending event was recorded; undefined when none is. */
  readonly oldestPendingAt: number | undefined;
}

/** An event `trim` dropped, for counting. */
export interface Dropped {
  readonly consumer: string;
  readonly type: string;
}

/** How long delivered events are kept, so a periodic scan that records the same id is a no-op. */
export const DELIVERED_KEEP_MS = 8 * 24 * 60 * 60 * 1_000;

export interface Outbox {
  /** Resolves once the events are durable; an id already recorded is left as it is. */
  record(events: readonly OutboxEvent[]): Promise<void>;
  /**
   * Claims for `claimant`, until `now + claimMs`, up to `limit` pending unclaimed events due at
   * `now`, and returns them oldest first.
   */
  claim(claimant: string, now: number, claimMs: number, limit: number): Promise<OutboxEntry[]>;
  /**
   * Records the attempt's result and ends `claimant`'s claim on `id`; does nothing if the claim
   * was lost meanwhile.
   */
  settle(id: string, claimant: string, settlement: Settlement, now: number): Promise<void>;
  /**
   * Keeps at most `max` undelivered events: failed ones are dropped first, oldest first, then
   * pending ones; delivered ones go after `DELIVERED_KEEP_MS`. Resolves with what was dropped.
   */
  trim(max: number, now: number): Promise<Dropped[]>;
  stats(): Promise<OutboxStats>;
}

type Status = 'pending' | 'delivered' | 'failed';

interface Row extends OutboxEntry {
  status: Status;
  attempts: number;
  nextAt: number;
  claimedBy: string | undefined;
  claimedUntil: number;
}

const byAge = (a: OutboxEvent, b: OutboxEvent) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1);

/**
 * The outbox of `--data :memory:`: lost at exit, like its pets.
 *
 * @example
 * const outbox = new MemoryOutbox(); await outbox.record([event]); await outbox.claim('me', now, 30_000, 10)
 */
export class MemoryOutbox implements Outbox {
  readonly #rows = new Map<string, Row>();

  async record(events: readonly OutboxEvent[]): Promise<void> {
    for (const e of events) {
      if (this.#rows.has(e.id)) continue;
      this.#rows.set(e.id, {
        ...e,
        status: 'pending',
        attempts: 0,
        nextAt: e.createdAt,
        claimedBy: undefined,
        claimedUntil: 0,
      });
    }
  }

  async claim(claimant: string, now: number, claimMs: number, limit: number): Promise<OutboxEntry[]> {
    const due = [...this.#rows.values()]
      .filter((r) => r.status === 'pending' && r.nextAt <= now && r.claimedUntil <= now)
      .sort(byAge)
      .slice(0, limit);
    for (const r of due) {
      r.claimedBy = claimant;
      r.claimedUntil = now + claimMs;
    }
    return due.map(({ id, consumer, type, payload, createdAt, attempts, traceparent }) => ({
      id,
      consumer,
      type,
      payload,
      createdAt,
      attempts,
      ...(traceparent === undefined ? {} : { traceparent }),
    }));
  }

  async settle(id: string, claimant: string, settlement: Settlement, now: number): Promise<void> {
    const r = this.#rows.get(id);
    if (!r || r.claimedBy !== claimant) return;
    r.attempts++;
    r.claimedBy = undefined;
    r.claimedUntil = 0;
    if (settlement.outcome === 'retry') r.nextAt = settlement.at;
    else {
      r.status = settlement.outcome;
      r.nextAt = now;
    }
  }

  async trim(max: number, now: number): Promise<Dropped[]> {
    const rows = [...this.#rows.values()];
    for (const r of rows) if (r.status === 'delivered' && r.nextAt <= now - DELIVERED_KEEP_MS) this.#rows.delete(r.id);
    const kept = rows.filter((r) => r.status !== 'delivered');
    const over = kept.length - max;
    if (over <= 0) return [];
    const failed = kept.filter((r) => r.status === 'failed').sort(byAge);
    const pending = kept.filter((r) => r.status === 'pending').sort(byAge);
    const dropped = [...failed, ...pending].slice(0, over);
    for (const r of dropped) this.#rows.delete(r.id);
    return dropped.map(({ consumer, type }) => ({ consumer, type }));
  }

  async stats(): Promise<OutboxStats> {
    let pending = 0;
    let failed = 0;
    let oldestPendingAt: number | undefined;
    for (const r of this.#rows.values()) {
      if (r.status === 'failed') failed++;
      if (r.status !== 'pending') continue;
      pending++;
      if (oldestPendingAt === undefined || r.createdAt < oldestPendingAt) oldestPendingAt = r.createdAt;
    }
    return { pending, failed, oldestPendingAt };
  }
}

/**
 * Turns an outbox row from either engine's driver into an OutboxEntry; throws `TypeError` on a
 * malformed row.
 *
 * @example
 * entryFromRow({ id: 'msg_1', consumer: 'acme', type: 'key.banned', payload: '{}', created_at: 1, attempts: 0 })
 */
export function entryFromRow(row: unknown): OutboxEntry {
  const r = (typeof row === 'object' && row !== null ? row : {}) as Record<string, unknown>;
  const { id, consumer, type, payload } = r;
  const createdAt = Number(r.created_at);
  const attempts = Number(r.attempts);
  if (
    typeof id !== 'string' ||
    typeof consumer !== 'string' ||
    typeof type !== 'string' ||
    typeof payload !== 'string'
  ) {
    throw new TypeError('unexpected row in webhook_outbox');
  }
  const traceparent = typeof r.traceparent === 'string' ? { traceparent: r.traceparent } : {};
  return { id, consumer, type, payload, createdAt, attempts, ...traceparent };
}

/** Turns the rows `(status, n, oldest)` grouped by status, from either engine, into stats. */
export function statsFromRows(rows: readonly unknown[]): OutboxStats {
  let pending = 0;
  let failed = 0;
  let oldestPendingAt: number | undefined;
  for (const row of rows) {
    const r = (typeof row === 'object' && row !== null ? row : {}) as Record<string, unknown>;
    if (r.status === 'failed') failed = Number(r.n);
    if (r.status === 'pending') {
      pending = Number(r.n);
      oldestPendingAt = r.oldest === null || r.oldest === undefined ? undefined : Number(r.oldest);
    }
  }
  return { pending, failed, oldestPendingAt };
}
