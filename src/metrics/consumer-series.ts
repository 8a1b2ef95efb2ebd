// Per-consumer series for `GET /metrics`: requests by status, refusals by reason, when each key
// was last used and when it expires. Label values come only from the keys file (`load`), never
// from a request, so the number of series is bounded by the file: a request naming anything
// else is not counted here. No token or hash is ever a label; keys are named by their id.
import { Counter, Gauge, type Registry } from 'prom-client';

/** A key as these series know it (a `KeyRecord` is one). */
export interface KeyInfo {
  readonly id: string;
  readonly consumer: { readonly name: string };
  /** Epoch ms the key expires, if it does. */
  readonly expiresAt?: number;
}

interface ConsumerCounts {
  readonly statuses: Map<number, number>;
  readonly refusals: Map<string, number>;
}

/**
 * Counters by consumer name and key id; one instance inside `Metrics`.
 *
 * @example
 * const c = new ConsumerMetrics()
 * c.load([{ id: '2027-02', consumer: { name: 'acme' }, expiresAt: Date.UTC(2027, 4, 1) }])
 * c.answered('acme', '2027-02', 200, Date.now())
 */
export class ConsumerMetrics {
  #consumers = new Map<string, ConsumerCounts>();
  /** `consumer\0key` -> expiry (epoch ms, or undefined) and last use (epoch ms, or 0). */
  #keys = new Map<string, { consumer: string; key: string; expiresAt?: number; lastUsed: number }>();

  /**
   * Sets the consumers and keys now loaded (at start and after each reload). Consumers and keys
   * still loaded keep their counts; the others are dropped.
   */
  load(keys: readonly KeyInfo[]): void {
    const consumers = new Map<string, ConsumerCounts>();
    const next = new Map<string, { consumer: string; key: string; expiresAt?: number; lastUsed: number }>();
    for (const k of keys) {
      const name = k.consumer.name;
      consumers.set(name, this.#consumers.get(name) ?? { statuses: new Map(), refusals: new Map() });
      const id = `${name}\0${k.id}`;
      next.set(id, {
        consumer: name,
        key: k.id,
        ...(k.expiresAt !== undefined ? { expiresAt: k.expiresAt } : {}),
        lastUsed: this.#keys.get(id)?.lastUsed ?? 0,
      });
    }
    this.#consumers = consumers;
    this.#keys = next;
  }

  /** A request with key `key` of `consumer` was answered `status` at `now` (epoch ms). */
  answered(consumer: string, key: string, status: number, now: number): void {
    const counts = this.#consumers.get(consumer);
    if (!counts) return;
    counts.statuses.set(status, (counts.statuses.get(status) ?? 0) + 1);
    const k = this.#keys.get(`${consumer}\0${key}`);
    if (k) k.lastUsed = now;
  }

  /**
   * A request of `consumer` was refused for `reason` (an Error code, `key_revoked`, `key_expired`,
   * `key_not_yet_valid`).
   */
  refused(consumer: string, reason: string): void {
    const refusals = this.#consumers.get(consumer)?.refusals;
    refusals?.set(reason, (refusals.get(reason) ?? 0) + 1);
  }

  /** Adds the four families to `registry`; their values are read from this object when scraped. */
  register(registry: Registry): void {
    const registers = [registry];
    const consumers = () => this.#consumers;
    const keys = () => this.#keys.values();
    new Counter({
      name: 'petstore_consumer_requests_total',
      help: 'Requests answered for a consumer (any of its keys), by status code.',
      labelNames: ['consumer', 'status'] as const,
      registers,
      collect() {
        this.reset();
        for (const [consumer, c] of consumers()) {
          for (const [status, n] of [...c.statuses].sort((a, b) => a[0] - b[0])) {
            this.inc({ consumer, status: String(status) }, n);
          }
        }
      },
    });
    new Counter({
      name: 'petstore_consumer_refusals_total',
      help: 'Requests of a consumer refused, by reason (429 and 403 Error codes, key_revoked, key_expired, key_not_yet_valid).',
      labelNames: ['consumer', 'reason'] as const,
      registers,
      collect() {
        this.reset();
        for (const [consumer, c] of consumers())
          for (const [reason, n] of c.refusals) this.inc({ consumer, reason }, n);
      },
    });
    new Gauge({
      name: 'petstore_key_last_used_timestamp_seconds',
      help: 'When a key was last used (Unix seconds; 0: not since start).',
      labelNames: ['consumer', 'key'] as const,
      registers,
      // With workers: the latest use on any of them.
      aggregator: 'max',
      collect() {
        this.reset();
        for (const k of keys()) this.set({ consumer: k.consumer, key: k.key }, Math.floor(k.lastUsed / 1000));
      },
    });
    new Gauge({
      name: 'petstore_key_expiry_timestamp_seconds',
      help: 'When a key expires (its expiresAt, Unix seconds); keys without one are absent.',
      labelNames: ['consumer', 'key'] as const,
      registers,
      aggregator: 'max',
      collect() {
        this.reset();
        for (const k of keys()) {
          if (k.expiresAt !== undefined) this.set({ consumer: k.consumer, key: k.key }, Math.floor(k.expiresAt / 1000));
        }
      },
    });
  }
}
