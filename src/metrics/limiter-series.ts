// The rate limiter's series for `GET /metrics`: where decisions are made now (this process,
// Redis, or this process while Redis is down), how often Redis was lost, and the in-process
// table of subjects (client addresses and consumers, the bound on addresses, whether it is full).
// Everything is read from the limiter when scraped; nothing is counted on the request path.
import { Counter, Gauge, type Registry } from 'prom-client';

/**
 * Where decisions are made: `memory` (no Redis), `redis`, `local` (Redis down, fail-open), `none`
 * (Redis down, fail-closed: 503).
 */
export type LimiterBackend = 'memory' | 'redis' | 'local' | 'none';

/**
 * What these series read: `SlidingWindowLimiter` serves as `table`, `FailoverLimiter.status()`
 * gives the rest.
 */
export interface LimiterView {
  backend(): LimiterBackend;
  /** Times Redis was found down since the start; absent without Redis. */
  outages?: () => number;
  /**
   * Decisions the in-process limiter made while Redis was down (fail-open), since the start; absent
   * without Redis.
   */
  localDecisions?: () => number;
  readonly table: {
    /** Cells of the keyless clients' table (addresses without a valid key) holding counts. */
    readonly keylessCells: number;
    /** Consumers with their own state. */
    readonly consumers: number;
    /** Cells per row of the keyless clients' table. */
    readonly capacity: number;
    /**
     * Whether the keyless clients' table is saturated, so a client without a valid key may be
     * refused early because of others' traffic.
     */
    readonly full: boolean;
  };
}

const WITH_REDIS: readonly LimiterBackend[] = ['redis', 'local', 'none'];

/**
 * Registers the limiter's series on `registry`, read from `view` when scraped.
 *
 * @example
 * registerLimiter(registry, { backend: () => 'memory', table: new SlidingWindowLimiter() })
 */
export function registerLimiter(registry: Registry, view: LimiterView): void {
  const registers = [registry];
  const { table, outages, localDecisions } = view;
  // Every backend this configuration can use is exported, 1 for the current one and 0 for the
  // others, so a query sees the switch.
  const backends: readonly LimiterBackend[] = outages ? WITH_REDIS : ['memory'];
  new Gauge({
    name: 'petstore_ratelimit_backend',
    help: 'Where rate limits are decided now (1) and could be (0): memory (no --redis), redis, local (Redis down, --redis-fail open), none (Redis down, --redis-fail closed: 503).',
    labelNames: ['backend'] as const,
    registers,
    collect() {
      const now = view.backend();
      for (const backend of backends) this.set({ backend }, backend === now ? 1 : 0);
    },
  });
  if (outages) {
    new Counter({
      name: 'petstore_ratelimit_redis_outages_total',
      help: 'Times the limiter found Redis unreachable and stopped using it until a probe found it again.',
      registers,
      collect() {
        this.reset();
        this.inc(outages());
      },
    });
  }
  if (localDecisions) {
    new Counter({
      name: 'petstore_ratelimit_local_decisions_total',
      help: 'Decisions made by the in-process limiter while Redis was down or too slow (--redis-fail open): counted by this instance alone, never in Redis.',
      registers,
      collect() {
        this.reset();
        this.inc(localDecisions());
      },
    });
  }
  new Gauge({
    name: 'petstore_ratelimit_subjects',
    help: "Subjects with state in this process's limiter, by kind (address: cells of the keyless clients' table holding counts of clients without a valid key; consumer). With Redis, used while it is down.",
    labelNames: ['kind'] as const,
    registers,
    collect() {
      this.set({ kind: 'address' }, table.keylessCells);
      this.set({ kind: 'consumer' }, table.consumers);
    },
  });
  new Gauge({
    name: 'petstore_ratelimit_subjects_max',
    help: "Cells per row of the keyless clients' table, whose size is fixed: addresses that share cells share counts.",
    registers,
    collect() {
      this.set(table.capacity);
    },
  });
  new Gauge({
    name: 'petstore_ratelimit_table_full',
    help: "Whether the keyless clients' table is saturated (1): a tenth of its cells have a minute's quota counted, so a client without a valid key is refused early for others' traffic with a chance of 1 % or more.",
    registers,
    collect() {
      this.set(table.full ? 1 : 0);
    },
  });
}
