/**
 * The rate limiter's series for `GET /metrics`: where decisions are made now (this process,
 * Redis, or this process while Redis is down), how often Redis was lost, and the in-process
 * table of subjects (client addresses and consumers, the bound on addresses, whether it is full).
 * Everything is read from the limiter when scraped; nothing is counted on the request path.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** Where decisions are made: `memory` (no Redis), `redis`, `local` (Redis down, fail-open), `none` (Redis down, fail-closed: 503). */
export type LimiterBackend = 'memory' | 'redis' | 'local' | 'none';

/** What these series read; `SlidingWindowLimiter` is a `table`, `FailoverLimiter.status()` gives the rest. */
export interface LimiterView {
  backend(): LimiterBackend;
  /** Times Redis was found down since the start; absent without Redis. */
  outages?: () => number;
  readonly table: {
    /** Client addresses with their own state. */
    readonly size: number;
    /** Consumers with their own state. */
    readonly consumers: number;
    /** Most client addresses with their own state. */
    readonly capacity: number;
    /** New addresses share one overflow state. */
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
  const { table, outages } = view;
  // Every backend this configuration can be in is shown, the current one 1, so a query sees the change.
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
  new Gauge({
    name: 'petstore_ratelimit_subjects',
    help: "Subjects with state in this process's limiter, by kind (address: clients without a valid key; consumer). With Redis, used while it is down.",
    labelNames: ['kind'] as const,
    registers,
    collect() {
      this.set({ kind: 'address' }, table.size);
      this.set({ kind: 'consumer' }, table.consumers);
    },
  });
  new Gauge({
    name: 'petstore_ratelimit_subjects_max',
    help: 'Most client addresses with state of their own; past it new addresses share one overflow state.',
    registers,
    collect() {
      this.set(table.capacity);
    },
  });
  new Gauge({
    name: 'petstore_ratelimit_table_full',
    help: 'Whether the table of client addresses is full of live entries (1): new addresses now share one overflow state and its limits.',
    registers,
    collect() {
      this.set(table.full ? 1 : 0);
    },
  });
}
