// The quota-lease series for `GET /metrics` (an instance on `--redis`): script runs by kind,
// units granted and handed back, and leases holding unused units, read from the lease limiter
// when scraped. Without Redis they stay at zero.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { LeaseStats, RunKind } from '../gateway/gateway.ts';

const RUN_KINDS = ['grant', 'hand_back', 'decision'] as const satisfies readonly RunKind[];
const NONE: LeaseStats = {
  runs: { grant: 0, hand_back: 0, decision: 0 },
  unitsGranted: 0,
  unitsHandedBack: 0,
  outstanding: 0,
};

/**
 * The quota-lease series; one instance inside `Metrics`.
 *
 * @example
 * metrics.leases.watch(() => leases.stats())
 */
export class LeaseMetrics {
  #read: () => LeaseStats = () => NONE;

  /** From now on, the series read the lease limiter's stats through `read`. */
  watch(read: () => LeaseStats): void {
    this.#read = read;
  }

  register(registry: Registry): void {
    const registers = [registry];
    const read = () => this.#read();
    new Counter({
      name: 'petstore_limiter_script_runs_total',
      help: 'Rate-limit script runs in Redis by kind: grant (units beyond the request at hand), hand_back (unused units returned alone), decision (one request).',
      labelNames: ['kind'] as const,
      registers,
      collect() {
        this.reset();
        const { runs } = read();
        for (const kind of RUN_KINDS) this.inc({ kind }, runs[kind]);
      },
    });
    new Counter({
      name: 'petstore_limiter_units_total',
      help: 'Quota units taken from Redis by grants (granted) and returned unused (handed_back).',
      labelNames: ['direction'] as const,
      registers,
      collect() {
        this.reset();
        const stats = read();
        this.inc({ direction: 'granted' }, stats.unitsGranted);
        this.inc({ direction: 'handed_back' }, stats.unitsHandedBack);
      },
    });
    new Gauge({
      name: 'petstore_limiter_grants_outstanding',
      help: 'Consumers whose lease on this instance holds unused units now.',
      registers,
      collect() {
        this.set(read().outstanding);
      },
    });
  }
}
