// Everything `GET /metrics` shows, kept in a prom-client registry that writes the Prometheus text
// format (version 0.0.4).
//
// On the request path, a request is counted by adding one to a typed array at an index fixed in
// advance (operation x status), with no label strings or objects per request. prom-client reads
// the array only when scraped, in the counter's `collect()`. The latency histogram is
// prom-client's own (`observe` per request), because it cannot be fed bucket counts.
import {
  AggregatorRegistry,
  Counter,
  Gauge,
  Histogram,
  type MetricObjectWithValues,
  type MetricValue,
  Registry,
} from 'prom-client';
import { PLAN_NAMES } from '../keys/plans.ts';
import type { StoreErrorKind } from '../store/store-error.ts';
import { ConsumerMetrics } from './consumer-series.ts';
import { Exemplars } from './exemplars.ts';
import { MEMO_OPERATIONS, REQUEST_OPERATIONS, STORE_OPERATIONS, type StoreOperation } from './labels.ts';
import { LeaseMetrics } from './lease-series.ts';
import { type LimiterView, registerLimiter } from './limiter-series.ts';
import { WebhookMetrics } from './webhook-series.ts';

/** Upper bounds of the latency buckets, in seconds. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;
const STATUSES = 500; // 100..599

/**
 * The `plan` label values of refusals and bans: every plan, and `anonymous` for keyless clients
 * (ARCHITECTURE.md's glossary).
 */
const METRIC_PLANS = [...PLAN_NAMES, 'anonymous'] as const;
/** 429 reasons exported at zero from the start; others (the Error body's code) appear when seen. */
const REFUSAL_REASONS = ['rate_limited', 'key_banned'] as const;
const STORE_ERROR_KINDS = ['timeout', 'unavailable', 'error'] as const satisfies readonly StoreErrorKind[];

export interface MetricsOptions {
  version: string;
  runtime: string;
  /** Epoch ms the process started, for `process_start_time_seconds`. */
  startedAt?: number;
  /** Latency objectives' thresholds in seconds (`--latency-objective`), added as bucket bounds. */
  latencyObjectives?: readonly number[];
}

/**
 * The latency bucket bounds: `LATENCY_BUCKETS` plus each objective's threshold, ascending.
 *
 * @example
 * latencyBuckets([0.3]) // [0.001, …, 0.25, 0.3, 0.5, …, 10]
 */
function latencyBuckets(objectives: readonly number[] = []): number[] {
  return [...new Set([...LATENCY_BUCKETS, ...objectives])].sort((a, b) => a - b);
}

/**
 * Every series the service exposes; one instance (and one registry) per process.
 *
 * @example
 * const m = new Metrics({ version: '1.0.0', runtime: 'bun' })
 * m.answered(operationOf('GET', '/v1/pets'), 200, 0.003)
 * await m.render() // '# HELP petstore_http_requests_total ...'
 */
export class Metrics {
  readonly #registry = new Registry();
  readonly #requests = new Float64Array(REQUEST_OPERATIONS.length * STATUSES);
  /** Per operation index: answers from the memo (even slots) and from the store (odd slots). */
  readonly #memo = new Float64Array(REQUEST_OPERATIONS.length * 2);
  readonly #latency: Histogram<'operation'>;
  readonly #exemplars: Exemplars;
  #inFlight = 0;
  readonly #refused: Counter<'plan' | 'reason'>;
  readonly #bans: Counter<'plan'>;
  readonly #storeErrors: Counter<'operation' | 'kind'>;
  readonly #keys: Gauge<'plan'>;
  readonly #reloads: Counter<'result'>;
  readonly #wouldRefuse: Counter<'consumer' | 'window'>;
  readonly #spansDropped: Counter<'reason'>;
  readonly #workersReplaced: Counter;
  #workers: (() => Promise<MetricObjectWithValues<MetricValue<string>>[][]>) | undefined;
  #source: ((openMetrics: boolean) => Promise<string>) | undefined;
  /** Per-consumer and per-key series; fed by `countRequests` and the keys (re)load. */
  readonly consumers = new ConsumerMetrics();
  /** Webhook deliveries and the outbox; fed by the delivery loop. */
  readonly webhooks = new WebhookMetrics();
  /** Quota leases (`--redis`); fed by reading the lease limiter when scraped. */
  readonly leases = new LeaseMetrics();

  constructor({ version, runtime, startedAt = Date.now(), latencyObjectives }: MetricsOptions) {
    const registers = [this.#registry];
    const requests = this.#requests;
    new Counter({
      name: 'petstore_http_requests_total',
      help: 'HTTP requests answered, by operation and status code.',
      labelNames: ['operation', 'status'] as const,
      registers,
      collect() {
        this.reset();
        REQUEST_OPERATIONS.forEach((operation, i) => {
          for (let s = 0; s < STATUSES; s++) {
            const n = requests[i * STATUSES + s] as number;
            if (n > 0) this.inc({ operation, status: String(s + 100) }, n);
          }
        });
      },
    });
    const memo = this.#memo;
    new Counter({
      name: 'petstore_answer_memo_total',
      help: 'Requests of memoised operations (the answer memo), by operation and outcome: hit (a memoised answer, or the read of the same path under way for another request), miss (read from the store).',
      labelNames: ['operation', 'outcome'] as const,
      registers,
      collect() {
        this.reset();
        REQUEST_OPERATIONS.forEach((operation, i) => {
          if (!MEMO_OPERATIONS.includes(operation)) return;
          this.inc({ operation, outcome: 'hit' }, memo[i * 2] as number);
          this.inc({ operation, outcome: 'miss' }, memo[i * 2 + 1] as number);
        });
      },
    });
    const buckets = latencyBuckets(latencyObjectives);
    this.#latency = new Histogram({
      name: 'petstore_http_request_duration_seconds',
      help: 'Time from receiving a request to having its response ready, by operation.',
      labelNames: ['operation'] as const,
      buckets,
      registers,
    });
    this.#exemplars = new Exemplars('petstore_http_request_duration_seconds', buckets);
    const inFlight = () => this.#inFlight;
    new Gauge({
      name: 'petstore_http_requests_in_flight',
      help: 'Requests received and not yet answered.',
      registers,
      collect() {
        this.set(inFlight());
      },
    });
    this.#refused = new Counter({
      name: 'petstore_rate_limited_total',
      help: '429 responses by plan and reason (the Error code).',
      labelNames: ['plan', 'reason'] as const,
      registers,
    });
    for (const plan of METRIC_PLANS) for (const reason of REFUSAL_REASONS) this.#refused.inc({ plan, reason }, 0);
    this.#bans = new Counter({
      name: 'petstore_bans_total',
      help: 'Temporary bans started, by plan.',
      labelNames: ['plan'] as const,
      registers,
    });
    for (const plan of METRIC_PLANS) this.#bans.inc({ plan }, 0);
    this.#storeErrors = new Counter({
      name: 'petstore_store_errors_total',
      help: 'Failed store calls, by operation and kind (timeout, unavailable or error).',
      labelNames: ['operation', 'kind'] as const,
      registers,
    });
    for (const operation of STORE_OPERATIONS) {
      for (const kind of STORE_ERROR_KINDS) this.#storeErrors.inc({ operation, kind }, 0);
    }
    this.#keys = new Gauge({
      name: 'petstore_keys',
      help: 'API keys loaded, by plan.',
      labelNames: ['plan'] as const,
      // With workers, the supervisor's figures (the keys' source is its).
      aggregator: 'max',
      registers,
    });
    this.keysLoaded({});
    this.#reloads = new Counter({
      name: 'petstore_keys_reloads_total',
      help: 'Reloads of the keys file on SIGHUP, by result.',
      labelNames: ['result'] as const,
      registers,
    });
    this.#wouldRefuse = new Counter({
      name: 'petstore_ratelimit_would_refuse_total',
      help: 'Requests a report-only limit ("enforce": false) served that it would have refused, by consumer and window.',
      labelNames: ['consumer', 'window'] as const,
      registers,
    });
    this.#spansDropped = new Counter({
      name: 'petstore_trace_spans_dropped_total',
      help: 'Spans never exported, by reason: queue_full (the collector is slow or away), export_failed, ring_overwritten (kept, overwritten in the trace ring before the export read them), tail_capped (kept for their time or their 5xx past --otel-keep-max-per-second).',
      labelNames: ['reason'] as const,
      registers,
    });
    this.#workersReplaced = new Counter({
      name: 'petstore_workers_replaced_total',
      help: 'Workers (--workers) that exited unasked and were started again in their place.',
      registers,
    });
    this.#spansDropped.inc({ reason: 'queue_full' }, 0);
    this.#spansDropped.inc({ reason: 'export_failed' }, 0);
    this.#spansDropped.inc({ reason: 'ring_overwritten' }, 0);
    this.#spansDropped.inc({ reason: 'tail_capped' }, 0);
    this.#reloads.inc({ result: 'ok' }, 0);
    this.#reloads.inc({ result: 'failed' }, 0);
    this.consumers.register(this.#registry);
    this.webhooks.register(this.#registry);
    this.leases.register(this.#registry);
    new Gauge({
      name: 'petstore_build_info',
      help: 'Version and runtime of this server; always 1.',
      labelNames: ['version', 'runtime'] as const,
      registers,
      // With workers: 1 for the whole server, not one per worker.
      aggregator: 'first',
    }).set({ version, runtime }, 1);
    new Gauge({
      name: 'process_start_time_seconds',
      help: 'Start time of the process since the Unix epoch, in seconds.',
      registers,
      aggregator: 'first',
    }).set(Math.floor(startedAt / 1000));
  }

  /** A request has arrived. */
  started(): void {
    this.#inFlight++;
  }

  /**
   * A request of operation `op` (from `operationOf`) was answered with `status` after `seconds`;
   * `traceId`, the exported trace it belongs to, is kept as the latency bucket's exemplar.
   */
  answered(op: number, status: number, seconds: number, traceId?: string): void {
    this.#inFlight--;
    const r = op * STATUSES + (status >= 100 && status < 600 ? status - 100 : STATUSES - 1);
    this.#requests[r] = (this.#requests[r] ?? 0) + 1;
    const operation = REQUEST_OPERATIONS[op] ?? 'other';
    this.#latency.observe({ operation }, seconds);
    if (traceId !== undefined) this.#exemplars.seen(operation, seconds, traceId, Date.now());
  }

  /**
   * A request of memoised operation `op` (from `operationIndex`) was answered from the memo
   * (`hit`) or from the store.
   */
  memoAnswered(op: number, hit: boolean): void {
    const m = op * 2 + (hit ? 0 : 1);
    this.#memo[m] = (this.#memo[m] ?? 0) + 1;
  }

  /**
   * A caller on `plan` was answered 429; `reason` is the Error body's code, e.g. `rate_limited`.
   */
  refused(plan: string, reason: string): void {
    if ((METRIC_PLANS as readonly string[]).includes(plan)) this.#refused.inc({ plan, reason });
  }

  /** A ban started for a caller on `plan`. */
  banned(plan: string): void {
    if ((METRIC_PLANS as readonly string[]).includes(plan)) this.#bans.inc({ plan });
  }

  /**
   * A report-only consumer's request was served that `window` would have refused. Consumer names
   * come only from the keys file, which bounds the number of series.
   */
  wouldRefuse(consumer: string, window: string): void {
    this.#wouldRefuse.inc({ consumer, window });
  }

  /**
   * A store call failed: `timeout` past `--store-timeout`, `unavailable` when the store could not
   * serve (disk, connection).
   */
  storeError(operation: StoreOperation, kind: StoreErrorKind): void {
    this.#storeErrors.inc({ operation, kind });
  }

  /**
   * The trace export lost `spans` spans (`queue_full`, `export_failed`, `ring_overwritten`,
   * `tail_capped`).
   */
  spansDropped(spans: number, reason: string): void {
    this.#spansDropped.inc({ reason }, spans);
  }

  /** A worker exited unasked and another took its place. */
  workerReplaced(): void {
    this.#workersReplaced.inc();
  }

  /** The keys now loaded, by plan (at start and after each reload). */
  keysLoaded(byPlan: Record<string, number>): void {
    for (const plan of PLAN_NAMES) this.#keys.set({ plan }, byPlan[plan] ?? 0);
  }

  /** A reload of the keys (SIGHUP, a changed file, the key store) succeeded or failed. */
  reloaded(ok: boolean): void {
    this.#reloads.inc({ result: ok ? 'ok' : 'failed' });
  }

  /**
   * Adds the limiter's series (where it decides, its table), read from `view` when scraped. Call
   * once, at start.
   */
  watchLimiter(view: LimiterView): void {
    registerLimiter(this.#registry, view);
  }

  /** Everything, in the Prometheus text exposition format. */
  render(): Promise<string> {
    return this.#source ? this.#source(false) : this.#text();
  }

  /** Everything in OpenMetrics, the latency histogram with its exemplars (trace ids). */
  async renderOpenMetrics(): Promise<string> {
    return this.#source ? this.#source(true) : this.#exemplars.openMetrics(await this.#text());
  }

  /** This registry's series as prom-client's JSON: what a worker hands the supervisor to sum. */
  json(): Promise<MetricObjectWithValues<MetricValue<string>>[]> {
    return this.#registry.getMetricsAsJSON();
  }

  /**
   * With workers, on the supervisor: `/metrics` shows its series summed with the workers' (each
   * series as its `aggregator` says: counters and histograms summed, the build info once).
   */
  sumWith(workers: () => Promise<MetricObjectWithValues<MetricValue<string>>[][]>): void {
    this.#workers = workers;
  }

  /** With workers, on a worker: `/metrics` shows the whole server's, rendered by the supervisor. */
  renderedBy(source: (openMetrics: boolean) => Promise<string>): void {
    this.#source = source;
  }

  async #text(): Promise<string> {
    if (!this.#workers) return this.#registry.metrics();
    const all = [await this.json(), ...(await this.#workers())];
    return AggregatorRegistry.aggregate(all).metrics();
  }
}
